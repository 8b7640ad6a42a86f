package bus

import "sync"

// keepCap is the capacity a drained fifo keeps for the next message; a
// larger backing array is released.
const keepCap = 8

// fifo is a handler's bounded queue. Unlike a channel of the same bound,
// its storage grows with what is queued and is released once drained, so
// an idle handler holds a few packets' worth rather than the whole bound
// (a channel of DefaultQueueSize packets was ~35 KiB a handler, about
// 1 MiB of an idle agent: docs/benchmarks.md, agent idle RSS).
type fifo struct {
	max int
	// ready has capacity 1: it is set after a push, so the single consumer
	// wakes and pops until empty.
	ready chan struct{}

	// mu guards items and head.
	mu    sync.Mutex
	items []Packet
	head  int // items[head:] are queued
}

func newFIFO(max int) *fifo {
	return &fifo{max: max, ready: make(chan struct{}, 1)}
}

// push queues p and reports true, or reports false when max packets are
// already queued (the caller drops p). It never blocks.
func (q *fifo) push(p Packet) bool {
	q.mu.Lock()
	if len(q.items)-q.head >= q.max {
		q.mu.Unlock()
		return false
	}
	if len(q.items) == cap(q.items) && q.head > 0 {
		// Full to its capacity with popped slots in front: move the queued
		// packets down instead of growing, so a queue that never empties
		// (a handler always behind) stays within max packets of storage.
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	q.items = append(q.items, p)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default: // already signalled; the consumer pops until empty
	}
	return true
}

// pop returns the oldest queued packet, or false when none is queued.
func (q *fifo) pop() (Packet, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.items) {
		return Packet{}, false
	}
	p := q.items[q.head]
	q.items[q.head] = Packet{} // drop the references for the GC
	q.head++
	if q.head == len(q.items) {
		q.head = 0
		if cap(q.items) > keepCap {
			q.items = nil
		} else {
			q.items = q.items[:0]
		}
	}
	return p, true
}
