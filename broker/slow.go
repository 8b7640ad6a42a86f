package broker

import (
	"log/slog"
	"sync"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// dropRun tracks a client's run of drops: when it began and the last one. A
// gap of dropGap between two drops ends the run.
type dropRun struct {
	mu          sync.Mutex // guards start and last; only the drop path takes it
	start, last time.Time
}

const dropGap = 2 * time.Second

// add records a drop at now and returns how long the run has lasted.
func (d *dropRun) add(now time.Time) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.start.IsZero() || now.Sub(d.last) > dropGap || now.Before(d.last) {
		d.start = now
	}
	d.last = now
	return now.Sub(d.start)
}

// OnPublishDropped runs on the publisher's goroutine when a message did not
// fit in a client's outbound queue (Config.MaxWritesPending,
// MaxQueuedBytes). mochi has already disconnected the client if the message
// was QoS 1 or 2 (Capabilities.DisconnectSlowClients, broker/mochi). A
// client that has been losing QoS 0 messages for SlowClientTimeout, never
// catching up for dropGap, is cut too: it is stuck, not slow, and what it
// still receives is a sample. A subscriber that falls behind in a burst
// and catches up loses the burst's overflow, and stays.
// The cut is Stop (close the socket), never a DISCONNECT packet, which would
// wait behind the writes the client does not read.
func (p *policy) OnPublishDropped(cl *mqtt.Client, pk packets.Packet) {
	p.stats.dropped.Add(1)
	s := p.session(cl)
	if s == nil || cl.Closed() {
		return
	}
	run := s.drops.add(p.cfg.Now())
	if run == 0 {
		p.slowLog.log(p.log, slog.LevelInfo, "client not keeping up: messages to it are dropped",
			"client", peerText(cl.ID), "username", peerText(s.username), "topic", peerText(pk.TopicName))
	}
	if p.cfg.SlowClientTimeout > 0 && run > p.cfg.SlowClientTimeout {
		p.cutSlow(cl, s, run)
	}
}

// cutSlow disconnects a client that has lost too many messages; OnDisconnect
// counts it, as it counts the clients mochi cut for a QoS 1 or 2 drop.
func (p *policy) cutSlow(cl *mqtt.Client, s *session, run time.Duration) {
	p.slowLog.log(p.log, slog.LevelWarn, "slow client disconnected",
		"client", peerText(cl.ID), "username", peerText(s.username), "dropping_for", run.Round(time.Second))
	cl.Stop(packets.ErrPendingClientWritesExceeded)
}
