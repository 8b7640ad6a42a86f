// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 Chorus (a patch to mochi-mqtt v2.7.9)

package mqtt

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mochi-mqtt/server/v2/packets"
)

func TestOutboundQos0BoundByBytes(t *testing.T) {
	pub := func(qos byte) *packets.Packet {
		return &packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: qos},
			TopicName: "a/b", Payload: make([]byte, 61)} // cost 61+3+1024 = 1088
	}
	// Without MaximumQos0PendingBytes the count bounds every message.
	var q outboundQueue
	l := queueLimits{maxLen: 4}
	for i := 0; i < 4; i++ {
		_ = i
		ok, _ := q.push(pub(0), l)
		require.True(t, ok)
	}
	ok, _ := q.push(pub(0), l)
	require.False(t, ok, "count bound")

	// With it, QoS 0 is bounded by cost: 10 packets of 1088 fit 10,880 bytes,
	// past the count of 4; QoS 1 still meets the count.
	q = outboundQueue{}
	l = queueLimits{maxLen: 4, qos0Bytes: 10 * 1088}
	for i := 0; i < 10; i++ {
		ok, _ := q.push(pub(0), l)
		require.True(t, ok, "qos 0 packet %d", i)
	}
	ok, _ = q.push(pub(0), l)
	require.False(t, ok, "byte bound")
	ok, _ = q.push(pub(1), l)
	require.False(t, ok, "qos 1 keeps the count")
	require.Equal(t, int64(10*1088), q.cost)

	// A packet leaving makes room for one more, and the cost follows.
	_, ok = q.pop()
	require.True(t, ok)
	require.Equal(t, int64(9*1088), q.cost)
	ok, _ = q.push(pub(0), l)
	require.True(t, ok)

	// The payload byte bound still holds for QoS 0.
	q = outboundQueue{}
	l = queueLimits{maxLen: 4, maxBytes: 100, qos0Bytes: 1 << 20}
	ok, _ = q.push(pub(0), l)
	require.True(t, ok)
	ok, _ = q.push(pub(0), l)
	require.False(t, ok, "payload bytes")

	// One packet always fits an empty queue.
	q = outboundQueue{}
	ok, _ = q.push(pub(0), queueLimits{maxLen: 4, qos0Bytes: 10})
	require.True(t, ok)
}
