package bus

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// offerWait bounds how long a producer (paho's receive loop, or the
// publisher's goroutine for inline deliveries) waits for room in a full
// dispatch queue before the delivery is dropped.
const offerWait = 250 * time.Millisecond

// dispatcher runs deliveries on one goroutine, in the order they were offered,
// through a bounded queue, so a transport's producer never waits on handlers.
type dispatcher struct {
	q       chan func()
	stop    chan struct{}
	stopped sync.Once
	wg      sync.WaitGroup
	log     *slog.Logger
	dropped atomic.Uint64
}

func newDispatcher(size int, log *slog.Logger) *dispatcher {
	d := &dispatcher{q: make(chan func(), size), stop: make(chan struct{}), log: log}
	d.wg.Add(1)
	go d.run()
	return d
}

// offer queues f. When the queue is full it waits up to offerWait, then drops
// f and reports false; it never blocks past close.
func (d *dispatcher) offer(f func(), what string) bool {
	select {
	case d.q <- f:
		return true
	case <-d.stop:
		return false
	default:
	}
	t := time.NewTimer(offerWait)
	defer t.Stop()
	select {
	case d.q <- f:
		return true
	case <-d.stop:
		return false
	case <-t.C:
	}
	n := d.dropped.Add(1)
	if logDrop(n) {
		d.log.Warn("bus transport: dispatch queue full, delivery dropped", "what", what, "dropped_total", n)
	}
	return false
}

func (d *dispatcher) run() {
	defer d.wg.Done()
	for {
		select {
		case f := <-d.q:
			d.call(f)
		case <-d.stop:
			return
		}
	}
}

// call runs f, recovering a panic so one faulty handler cannot stop delivery
// to every other subscription of the transport.
func (d *dispatcher) call(f func()) {
	defer func() {
		if r := recover(); r != nil {
			d.log.Error("bus transport: subscription handler panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	f()
}

// close stops the goroutine and waits for it; queued deliveries are discarded.
// It is idempotent.
func (d *dispatcher) close() {
	d.stopped.Do(func() { close(d.stop) })
	d.wg.Wait()
}

// logDrop limits drop logging under a flood to the 1st, 2nd, 4th, 8th… drop.
func logDrop(n uint64) bool { return n&(n-1) == 0 }
