// SPDX-License-Identifier: MIT

package mqtt

import (
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
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range held {
		held[i] = NewOutboundTopicAliases(0)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perClient := float64(after.HeapAlloc-before.HeapAlloc) / n
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
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, f := range held {
		f.Set(packets.Packet{PacketID: 1})
		f.Delete(1)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perClient := (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / n
	t.Logf("in-flight maps after one message: %.0f bytes more per idle client", perClient)
	require.Less(t, perClient, 32.0)
	runtime.KeepAlive(held)
}
