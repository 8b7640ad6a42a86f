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
	writing bool  // a drain goroutine is running
	open    bool  // the client may be written to (its CONNACK is out)
}

// keepCap is the capacity a drained queue keeps; a larger backing array is
// released so one burst does not pin memory for the life of the connection.
const keepCap = 16

// push appends pk unless that would exceed maxLen packets or maxBytes
// payload bytes (0 = no byte limit). It reports whether pk was queued and
// whether the caller must start a drain goroutine.
func (q *outboundQueue) push(pk *packets.Packet, maxLen int, maxBytes int64) (queued, start bool) {
	size := int64(len(pk.Payload))
	q.mu.Lock()
	defer q.mu.Unlock()
	if n := len(q.pks) - q.head; n >= maxLen || maxBytes > 0 && n > 0 && q.bytes+size > maxBytes {
		return false, false
	}
	q.pks = append(q.pks, pk)
	q.bytes += size
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
	queued, start := cl.State.outbound.push(pk, int(caps.MaximumClientWritesPending), caps.MaximumClientWritesPendingBytes)
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
		if err := cl.WritePacket(*pk); err != nil {
			cl.ops.log.Debug("failed publishing packet", "error", err, "client", cl.ID, "packet", pk)
		}
		atomic.AddInt32(&cl.State.outboundQty, -1)
	}
}
