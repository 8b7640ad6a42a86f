package broker

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"
)

// BenchmarkStoreRetainedRewrite is the store's share of a fleet rollout: a
// store holding the retained messages of 10,000 devices (three per device,
// of the sizes a 10,000-device bench run stores: ~0.5, ~1.3 and ~3.7 KB of
// payload) rewrites 1,000 of them in one flush, as one writer pass does.
func BenchmarkStoreRetainedRewrite(b *testing.B) {
	const devices, batch = 10000, 1000
	s, err := openStore(b.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Stop()
	sizes := []int{500, 1300, 3700}
	retained := func(dev, topic int) (storeKey, change) {
		pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Retain: true},
			TopicName: fmt.Sprintf("chorus/v1/sim-%05d/t%d", dev, topic), Payload: make([]byte, sizes[topic]), Created: 1}
		k := storeKey{kind: kindRetained, name: pk.TopicName}
		return k, change{value: message(k, "sim", pk, 0)}
	}
	all := map[storeKey]change{}
	for d := range devices {
		for t := range sizes {
			k, c := retained(d, t)
			all[k] = c
		}
	}
	if err := s.write(all); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		m := make(map[storeKey]change, batch)
		for j := range batch {
			n := (i*batch + j) * 7919 % (devices * len(sizes))
			k, c := retained(n/len(sizes), n%len(sizes))
			m[k] = c
		}
		if err := s.write(m); err != nil {
			b.Fatal(err)
		}
	}
}
