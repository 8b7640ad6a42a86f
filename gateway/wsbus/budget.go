package wsbus

import (
	"context"
	"sync"
)

// budget is a weighted semaphore over the bytes of big frames held at once
// (Config.FrameBudget). A reader takes its frame's whole limit in one
// acquire and returns it once the frame is published, so readers never hold
// part of the budget while waiting for more, and cannot deadlock. Waiters are
// served in order, so a big frame is not starved by smaller ones.
type budget struct {
	// mu guards the fields below.
	mu      sync.Mutex
	free    int64
	waiters []*budgetWaiter
	held    int64 // taken now
	peak    int64 // the most ever taken at once, for tests
}

type budgetWaiter struct {
	n     int64
	ready chan struct{}
}

func newBudget(n int) *budget { return &budget{free: int64(n)} }

// acquire takes n bytes, waiting until they fit or ctx ends.
func (b *budget) acquire(ctx context.Context, n int) error {
	b.mu.Lock()
	if len(b.waiters) == 0 && b.free >= int64(n) {
		b.takeLocked(int64(n))
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: int64(n), ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		defer b.mu.Unlock()
		select {
		case <-w.ready: // granted meanwhile: give it back
			b.releaseLocked(w.n)
		default:
			b.removeLocked(w)
		}
		return ctx.Err()
	}
}

// release returns n bytes and wakes the waiters that now fit, in order.
func (b *budget) release(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.releaseLocked(int64(n))
}

func (b *budget) takeLocked(n int64) {
	b.free -= n
	b.held += n
	b.peak = max(b.peak, b.held)
}

func (b *budget) releaseLocked(n int64) {
	b.free += n
	b.held -= n
	for len(b.waiters) > 0 && b.free >= b.waiters[0].n {
		w := b.waiters[0]
		b.waiters = b.waiters[1:]
		b.takeLocked(w.n)
		close(w.ready)
	}
}

func (b *budget) removeLocked(w *budgetWaiter) {
	for i, x := range b.waiters {
		if x == w {
			b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
			break
		}
	}
	b.releaseLocked(0) // the head may have been what blocked the rest
}

// maxHeld is the most ever held at once.
func (b *budget) maxHeld() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}
