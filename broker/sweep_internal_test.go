package broker

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
)

// A retained message published on a topic while the sweep expires the
// message it replaces must survive: the sweep tests and deletes under one
// hold of the retained map's lock. Each round lines the sweep and the
// publish up behind that lock, so they race as closely as they can.
func TestSweepSparesRetainedPublishedMeanwhile(t *testing.T) {
	b, err := Start(Config{MQTTListen: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !b.swept {
		t.Fatal("mochi's retained expiry sweep not found")
	}
	const topic = "chorus/v1/pi-1/availability"
	retained := b.srv.Topics.Retained
	deadline := time.Now().Add(3 * time.Second)
	for round := 0; round < 2000 && time.Now().Before(deadline); round++ {
		now := time.Now().Unix()
		old := packets.Packet{
			FixedHeader: packets.FixedHeader{Type: packets.Publish, Retain: true}, ProtocolVersion: 5,
			TopicName: topic, Payload: []byte("old"), Expiry: now - 10,
		}
		b.srv.Topics.RetainMessage(old)
		b.expiry.track(topic, old, true)
		fresh := packets.Packet{
			FixedHeader: packets.FixedHeader{Type: packets.Publish, Retain: true}, ProtocolVersion: 5,
			TopicName: topic, Payload: []byte("fresh"),
		}

		var wg sync.WaitGroup
		retained.Lock()
		wg.Go(func() { b.expiry.sweep(now) })
		wg.Go(func() { b.srv.Topics.RetainMessage(fresh) })
		runtime.Gosched()
		retained.Unlock()
		wg.Wait()

		if pk, ok := retained.Get(topic); !ok || string(pk.Payload) != "fresh" {
			t.Fatalf("round %d: retained %q (held %v) after the sweep; want the message published meanwhile", round, pk.Payload, ok)
		}
	}
}
