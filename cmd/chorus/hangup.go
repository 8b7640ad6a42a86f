package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// ignoreHangup keeps a long-running command (gateway, up, agent, agent join) alive on
// SIGHUP, which would otherwise end it: Chorus reloads nothing on SIGHUP
// (docs/configuration.md), and says so in its log each time, so an operator
// used to `systemctl reload` or Mosquitto's SIGHUP learns that a restart
// applies a changed configuration or certificate. The goroutine ends with ctx.
func (a *app) ignoreHangup(ctx context.Context) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	log := a.log
	go func() {
		defer signal.Stop(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
				log.Warn("SIGHUP ignored: Chorus reloads nothing on SIGHUP; restart it to apply a changed configuration or certificate (docs/configuration.md)")
			}
		}
	}()
}
