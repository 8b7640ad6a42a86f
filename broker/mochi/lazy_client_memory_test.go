// SPDX-License-Identifier: MIT

package mqtt

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/stretchr/testify/require"
)

// TestTopicAliasMapsMadeOnFirstUse: a client that never uses a topic alias
// holds no alias map (fork patch "lazy alias maps", broker.md). Every
// connected client gets an OutboundTopicAliases, and v2.7.9 made its map up
// front (NewOutboundTopicAliases 2 MB at 10,000 idle devices).
func TestTopicAliasMapsMadeOnFirstUse(t *testing.T) {
	in := NewInboundTopicAliases(5)
	out := NewOutboundTopicAliases(5)
	require.Nil(t, in.internal)
	require.Nil(t, out.internal)

	// A client that announced no alias maximum never gets a map.
	none := NewOutboundTopicAliases(0)
	_, ok := none.Set("a/b")
	require.False(t, ok)
	require.Nil(t, none.internal)

	// The first use makes it and aliases behave as before.
	require.Equal(t, "a/b", in.Set(1, "a/b"))
	require.Equal(t, "a/b", in.Set(1, ""))
	id, ok := out.Set("a/b")
	require.Equal(t, uint16(1), id)
	require.False(t, ok)
	id, ok = out.Set("a/b")
	require.Equal(t, uint16(1), id)
	require.True(t, ok)

	// Bytes held per idle client's outbound aliases: the struct alone.
	const n = 20000
	held := make([]*OutboundTopicAliases, n)
	perClient := heapPerStep(n, func(i int) { held[i] = NewOutboundTopicAliases(0) })
	t.Logf("outbound topic aliases: %.0f bytes per idle client", perClient)
	require.Less(t, perClient, 64.0)
	runtime.KeepAlive(held)
}

// TestInflightReleasesEmptiedMaps: a client whose last in-flight message
// is acknowledged holds no in-flight map groups (fork patch "emptied
// in-flight maps released", broker.md). A Go map never shrinks, so v2.7.9
// kept the groups of every message ever in flight for the client's life
// (Inflight.Set 2.5–3.5 MB at 10,000 idle devices).
func TestInflightReleasesEmptiedMaps(t *testing.T) {
	i := NewInflights()
	require.True(t, i.Set(packets.Packet{PacketID: 1}))
	require.True(t, i.Set(packets.Packet{PacketID: 2}))
	require.True(t, i.Delete(1))
	require.NotNil(t, i.internal) // one still in flight
	require.True(t, i.Delete(2))
	require.Nil(t, i.internal)
	require.Nil(t, i.order)
	require.False(t, i.Delete(2))
	require.Equal(t, 0, i.Len())
	require.Empty(t, i.GetAll(false))
	_, ok := i.Get(1)
	require.False(t, ok)
	require.Equal(t, 0, i.Clone().Len())

	// Set after the release works and keeps the session's order.
	require.True(t, i.Set(packets.Packet{PacketID: 9}))
	require.True(t, i.Set(packets.Packet{PacketID: 3}))
	all := i.GetAll(false)
	require.Len(t, all, 2)
	require.Equal(t, uint16(9), all[0].PacketID)
	require.Equal(t, uint16(3), all[1].PacketID)

	// Bytes held per idle client that once had a message in flight.
	const n = 20000
	held := make([]*Inflight, n)
	for k := range held {
		held[k] = NewInflights()
	}
	perClient := heapPerStep(n, func(i int) {
		held[i].Set(packets.Packet{PacketID: 1})
		held[i].Delete(1)
	})
	t.Logf("in-flight maps after one message: %.0f bytes more per idle client", perClient)
	require.Less(t, perClient, 32.0)
	runtime.KeepAlive(held)
}

// TestSubscriptionSetsStaySmall: a set of a few subscriptions is a slice of
// values, and a larger one a map (fork patch "small subscription sets",
// broker.md); every operation behaves the same on both sides of the switch.
func TestSubscriptionSetsStaySmall(t *testing.T) {
	for _, n := range []int{1, fewSubscriptions, fewSubscriptions + 1, 3 * fewSubscriptions} {
		t.Run(fmt.Sprintf("%d", n), func(t *testing.T) {
			s := NewSubscriptions()
			want := map[string]packets.Subscription{}
			for i := 0; i < n; i++ {
				id := fmt.Sprintf("cl%d", i)
				s.Add(id, packets.Subscription{Filter: "a/" + id, Qos: 1})
				want[id] = packets.Subscription{Filter: "a/" + id, Qos: 1}
			}
			require.Equal(t, n > fewSubscriptions, s.internal != nil, "a map only past fewSubscriptions")
			s.Add("cl0", packets.Subscription{Filter: "a/cl0", Qos: 2}) // replaces
			want["cl0"] = packets.Subscription{Filter: "a/cl0", Qos: 2}
			require.Equal(t, n, s.Len())
			require.Equal(t, want, s.GetAll())
			seen := map[string]packets.Subscription{}
			s.each(func(id string, sub *packets.Subscription) { seen[id] = *sub })
			require.Equal(t, want, seen)
			got, ok := s.Get("cl0")
			require.True(t, ok)
			require.Equal(t, byte(2), got.Qos)

			s.Delete("cl0")
			s.Delete("nobody")
			delete(want, "cl0")
			_, ok = s.Get("cl0")
			require.False(t, ok)
			require.Equal(t, want, s.GetAll())
			for id := range want {
				s.Delete(id)
			}
			require.Equal(t, 0, s.Len())
			require.Empty(t, s.GetAll())
			if n <= fewSubscriptions {
				require.Nil(t, s.few, "an emptied small set releases its array")
			}
		})
	}
}

// TestSubscriptionOfOneIsSmall bounds the bytes a set of one subscription
// holds (a device's own subscription is in two: its particle's and its
// client's). v2.7.9's map of pointers held 352: the struct (32), the map
// (48), its first group (208) and the subscription (64).
func TestSubscriptionOfOneIsSmall(t *testing.T) {
	const n = 20000
	held := make([]*Subscriptions, n)
	per := heapPerStep(n, func(i int) {
		held[i] = NewSubscriptions()
		held[i].Add("chorus/v1/dev/desired", packets.Subscription{Filter: "chorus/v1/dev/desired", Qos: 1})
	})
	t.Logf("subscription set of one: %.0f bytes", per)
	require.Less(t, per, 160.0)
	runtime.KeepAlive(held)
}

// TestIdleClientIsSmall bounds the bytes newClient makes for a client
// before it subscribes or has a message in flight (fork patches "lazy client
// maps" and "small subscription sets", broker.md): v2.7.9's empty in-flight
// and subscription maps were 112 of them (1,180 bytes then, 1,068 now with a nil connection).
func TestIdleClientIsSmall(t *testing.T) {
	s := New(&Options{Logger: logger})
	const n = 10000
	held := make([]*Client, n)
	per := heapPerStep(n, func(i int) { held[i] = s.NewClient(nil, "t", "c", false) })
	t.Logf("idle client: %.0f bytes", per)
	require.Less(t, per, 1100.0)
	runtime.KeepAlive(held)
}

// heapPerStep returns the live heap bytes that step(0) … step(n-1) add, per
// step, measured after a collection before and after; what the steps make
// must be kept reachable by the caller until it has the figure.
func heapPerStep(n int, step func(i int)) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < n; i++ {
		step(i)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	return (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(n)
}
