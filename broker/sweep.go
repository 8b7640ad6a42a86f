package broker

import (
	"reflect"
	"sync"
	"time"
	"unsafe"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// retainedExpiry replaces mochi's retained-message expiry sweep, which copies
// every retained message (Packets.GetAll: an 800-byte packet per topic) once
// a second to find the expired ones. At 10,000 devices (~60,000 retained
// topics) that was ~50–90 MB of garbage a second, about half the gateway's
// heap growth between collections and a tenth of its CPU. The broker's
// maximum message expiry is 0 (retained state never expires by age), so the
// only retained messages that can expire are those published with their own
// expiry [MQTT-3.3.2-5]; this hook remembers those, and its sweeper looks
// only at them, on the same one-second tick and with mochi's test.
type retainedExpiry struct {
	mqtt.HookBase
	srv       *mqtt.Server
	onExpired func(topic string) // the store's OnRetainedExpired, or nil

	// mu guards at.
	mu sync.Mutex
	at map[string]int64 // topic → expiry (unix seconds) of a retained message that has one

	done chan struct{}
	wg   sync.WaitGroup
}

func newRetainedExpiry(srv *mqtt.Server) *retainedExpiry {
	return &retainedExpiry{srv: srv, at: make(map[string]int64), done: make(chan struct{})}
}

func (h *retainedExpiry) ID() string { return "chorus-retained-expiry" }

func (h *retainedExpiry) Provides(b byte) bool { return b == mqtt.OnRetainMessage }

// expires is mochi's test in clearExpiredRetainedMessages, without the
// enforced maximum (0 here).
func expires(pk packets.Packet) bool { return pk.ProtocolVersion == 5 && pk.Expiry > 0 }

func (h *retainedExpiry) OnRetainMessage(_ *mqtt.Client, pk packets.Packet, r int64) {
	h.track(pk.TopicName, pk, r != -1)
}

func (h *retainedExpiry) track(topic string, pk packets.Packet, retained bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if retained && expires(pk) {
		h.at[topic] = pk.Expiry
	} else if len(h.at) > 0 {
		delete(h.at, topic)
	}
}

// start stops mochi's sweep and runs this one; it reports false (and
// changes nothing) when mochi's sweep could not be found, so mochi's keeps
// running. Messages loaded from the store are scanned once.
func (h *retainedExpiry) start() bool {
	if !stopMochiRetainedSweep(h.srv) {
		return false
	}
	for topic, pk := range h.srv.Topics.Retained.GetAll() {
		h.track(topic, pk, true)
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-h.done:
				return
			case now := <-t.C:
				h.sweep(now.Unix())
			}
		}
	}()
	return true
}

// sweep deletes the tracked retained messages that expired before now.
func (h *retainedExpiry) sweep(now int64) {
	var due []string
	h.mu.Lock()
	for topic, at := range h.at {
		if at < now {
			due = append(due, topic)
		}
	}
	h.mu.Unlock()
	for _, topic := range due {
		h.expire(topic, now)
		h.mu.Lock()
		if at, ok := h.at[topic]; ok && at < now {
			delete(h.at, topic)
		}
		h.mu.Unlock()
	}
}

// expire deletes topic's retained message if it expired before now. The
// test and the delete are one hold of the retained map's lock
// (Packets.DeleteIf, a fork patch), which mochi takes to replace a retained
// message (TopicsIndex.RetainMessage → Packets.Add), so a message published
// on topic meanwhile is never deleted in place of the expired one (mochi's
// own sweep, Get then Delete, can). The store is told under the same lock:
// the store write of a message published next (OnRetainMessage, after its
// Add) comes after this delete, never before it.
func (h *retainedExpiry) expire(topic string, now int64) {
	h.srv.Topics.Retained.DeleteIf(topic, func(pk packets.Packet) bool {
		if !expires(pk) || pk.Expiry >= now {
			return false
		}
		if h.onExpired != nil {
			h.onExpired(topic) // queues a store delete; no I/O
		}
		return true
	})
}

// stop ends the sweeper and waits for it; it is idempotent only through
// Broker.Close's once.
func (h *retainedExpiry) stop() {
	close(h.done)
	h.wg.Wait()
}

// stopMochiRetainedSweep stops the ticker of mochi's retained sweep
// (Server.loop.retainedExpiry, unexported in v2.7.9); its event loop then
// never runs the sweep. It reports whether the ticker was found.
// TestMochiRetainedSweepFound fails if a mochi upgrade moves it.
func stopMochiRetainedSweep(srv *mqtt.Server) bool {
	loop := reflect.ValueOf(srv).Elem().FieldByName("loop")
	if !loop.IsValid() || loop.Kind() != reflect.Pointer || loop.IsNil() {
		return false
	}
	f := loop.Elem().FieldByName("retainedExpiry")
	if !f.IsValid() || f.Type() != reflect.TypeFor[*time.Ticker]() {
		return false
	}
	t := *(**time.Ticker)(unsafe.Pointer(f.UnsafeAddr()))
	if t == nil {
		return false
	}
	t.Stop()
	return true
}
