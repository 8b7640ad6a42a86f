package broker

import (
	"log/slog"
	"sync"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// dropWindow counts the messages dropped towards one client in a window.
type dropWindow struct {
	mu    sync.Mutex // guards start and n; only the drop path takes it
	start time.Time
	n     int
}

// add counts one drop at now and returns the count in the current window.
func (d *dropWindow) add(now time.Time, window time.Duration) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if now.Sub(d.start) >= window || now.Before(d.start) {
		d.start, d.n = now, 0
	}
	d.n++
	return d.n
}

// OnPublishDropped runs on the publisher's goroutine when a message did not
// fit in a client's outbound queue (Config.MaxWritesPending,
// MaxQueuedBytes). mochi has already disconnected the client if the message
// was QoS 1 or 2 (Capabilities.DisconnectSlowClients, broker/mochi). A
// client that loses more than MaxDropsPerWindow QoS 0 messages in DropWindow
// is cut too: it is not keeping up, and what it still receives is a sample.
// The cut is Stop (close the socket), never a DISCONNECT packet, which would
// wait behind the writes the client does not read.
func (p *policy) OnPublishDropped(cl *mqtt.Client, pk packets.Packet) {
	p.stats.dropped.Add(1)
	s := p.session(cl)
	if s == nil || cl.Closed() {
		return
	}
	n := s.drops.add(p.cfg.Now(), p.cfg.DropWindow)
	if n == 1 {
		p.slowLog.log(p.log, slog.LevelInfo, "client not keeping up: messages to it are dropped",
			"client", peerText(cl.ID), "username", peerText(s.username), "topic", peerText(pk.TopicName))
	}
	if p.cfg.MaxDropsPerWindow > 0 && n > p.cfg.MaxDropsPerWindow {
		p.cutSlow(cl, s)
	}
}

// cutSlow disconnects a client that has lost too many messages; OnDisconnect
// counts it, as it counts the clients mochi cut for a QoS 1 or 2 drop.
func (p *policy) cutSlow(cl *mqtt.Client, s *session) {
	p.slowLog.log(p.log, slog.LevelWarn, "slow client disconnected",
		"client", peerText(cl.ID), "username", peerText(s.username), "dropped_in_window", p.cfg.MaxDropsPerWindow)
	cl.Stop(packets.ErrPendingClientWritesExceeded)
}
