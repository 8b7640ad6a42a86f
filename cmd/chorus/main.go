// Command chorus is the one binary of Chorus: gateway, agent, and the tools
// that drive them. main only wires the root command to the process.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a := newApp(os.Stdout, os.Stderr, os.Getenv)
	os.Exit(a.execute(ctx, os.Args[1:]))
}
