// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 Chorus (a patch to mochi-mqtt v2.7.9)

package mqtt

import (
	"sync"
	"sync/atomic"

	"github.com/mochi-mqtt/server/v2/packets"
)

// outboundQueue holds the packets waiting to be written to one client, in
// order, bounded by a count and by bytes. It replaces v2.7.9's buffered
// channel and its long-lived WriteLoop goroutine: a channel of
// MaximumClientWritesPending pointers was allocated for every client up
// front (8 KiB at 1024), and every idle client kept a goroutine parked on
// it. Here the slice grows only while something is queued, and a drain
// goroutine runs only while there is something to write.
type outboundQueue struct {
	mu      sync.Mutex
	pks     []*packets.Packet // pending, oldest first from head
	head    int
	bytes   int64 // payload bytes pending
	cost    int64 // bytes pending counting each packet's fixed cost (queuedCost)
	writing bool  // a drain goroutine is running
	open    bool  // the client may be written to (its CONNACK is out)
}

// keepCap is the capacity a drained queue keeps; a larger backing array is
// released so one burst does not pin memory for the life of the connection.
const keepCap = 16

// packetCost is what one queued packet costs besides its payload and topic:
// the Packet itself (800 bytes) and its slot in the queue, rounded up.
const packetCost = 1024

// queuedCost is the memory a queued pk holds.
func queuedCost(pk *packets.Packet) int64 {
	return int64(len(pk.Payload)+len(pk.TopicName)) + packetCost
}

// queueLimits bound one client's queue.
type queueLimits struct {
	maxLen   int   // packets (MaximumClientWritesPending)
	maxBytes int64 // payload bytes, 0 = none (MaximumClientWritesPendingBytes)
	// qos0Bytes, when > 0, bounds QoS 0 packets by their queuedCost in all
	// instead of by maxLen (Capabilities.MaximumQos0PendingBytes).
	qos0Bytes int64
}

// full reports whether pk does not fit. A byte bound always lets one packet
// into an empty queue, whatever its size.
func (q *outboundQueue) full(pk *packets.Packet, l queueLimits) bool {
	n := len(q.pks) - q.head
	if l.maxBytes > 0 && n > 0 && q.bytes+int64(len(pk.Payload)) > l.maxBytes {
		return true
	}
	if pk.FixedHeader.Qos == 0 && l.qos0Bytes > 0 {
		return n > 0 && q.cost+queuedCost(pk) > l.qos0Bytes
	}
	return n >= l.maxLen
}

// push appends pk unless it does not fit (full). It reports whether pk was
// queued and whether the caller must start a drain goroutine.
func (q *outboundQueue) push(pk *packets.Packet, l queueLimits) (queued, start bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.full(pk, l) {
		return false, false
	}
	q.pks = append(q.pks, pk)
	q.bytes += int64(len(pk.Payload))
	q.cost += queuedCost(pk)
	if q.open && !q.writing {
		q.writing = true
		return true, true
	}
	return true, false
}

// pop returns the oldest packet. On an empty queue it returns false and
// marks the drain goroutine as gone, under the same lock a push takes, so a
// packet is never left queued with no goroutine to write it.
func (q *outboundQueue) pop() (*packets.Packet, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.pks) {
		q.writing = false
		q.pks, q.head = q.pks[:0], 0
		if cap(q.pks) > keepCap {
			q.pks = nil
		}
		return nil, false
	}
	pk := q.pks[q.head]
	q.pks[q.head] = nil
	q.head++
	q.bytes -= int64(len(pk.Payload))
	q.cost -= queuedCost(pk)
	return pk, true
}

// len is the number of packets pending.
func (q *outboundQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pks) - q.head
}

// openForWrites lets the queue be written from now on and reports whether a
// drain goroutine must start for what is already queued.
func (q *outboundQueue) openForWrites() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.open = true
	if q.head < len(q.pks) && !q.writing {
		q.writing = true
		return true
	}
	return false
}

// enqueue queues pk for the client and starts a drain goroutine if none runs.
// It returns false when the queue is full.
func (cl *Client) enqueue(pk *packets.Packet) bool {
	caps := cl.ops.options.Capabilities
	queued, start := cl.State.outbound.push(pk, queueLimits{maxLen: int(caps.MaximumClientWritesPending),
		maxBytes: caps.MaximumClientWritesPendingBytes, qos0Bytes: caps.MaximumQos0PendingBytes})
	if !queued {
		return false
	}
	atomic.AddInt32(&cl.State.outboundQty, 1)
	if start {
		go cl.drain()
	}
	return true
}

// startWrites opens the queue for writing (after the CONNACK and any resent
// in-flight messages) and writes what was queued meanwhile.
func (cl *Client) startWrites() {
	if cl.State.outbound.openForWrites() {
		go cl.drain()
	}
}

// drain writes queued packets until the queue is empty. Once the client is
// closed the writes fail at once, so the queue still empties.
func (cl *Client) drain() {
	for {
		pk, ok := cl.State.outbound.pop()
		if !ok {
			return
		}
		if err := cl.WritePacket(pk); err != nil {
			cl.ops.log.Debug("failed publishing packet", "error", err, "client", cl.ID, "packet", pk)
		}
		atomic.AddInt32(&cl.State.outboundQty, -1)
	}
}
