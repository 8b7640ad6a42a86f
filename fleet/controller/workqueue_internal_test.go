package controller

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// queued is what Get would hand out now, in order, without taking it.
func (q *workQueue) queuedNow() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.items)
}

// take gets id, which must be first in line.
func take(t *testing.T, q *workQueue, want string) {
	t.Helper()
	if got := q.queuedNow(); len(got) == 0 || got[0] != want {
		t.Fatalf("queue = %q, want %s first", got, want)
	}
	if id, ok := q.Get(); !ok || id != want {
		t.Fatalf("Get = %q %v, want %s", id, ok, want)
	}
}

// expectQueued checks the queue after the fake clock moved by d.
func expectQueued(t *testing.T, q *workQueue, d time.Duration, want ...string) {
	t.Helper()
	time.Sleep(d)
	synctest.Wait() // timer callbacks that fired have run
	if got := q.queuedNow(); !slices.Equal(got, want) {
		t.Fatalf("after %v: queue = %q, want %q", d, got, want)
	}
}

var errStore = errors.New("store busy")

// The work queue's guarantees (its type's comment), on a fake clock.
func TestWorkQueue(t *testing.T) {
	t.Parallel()
	t.Run("an id is queued once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newWorkQueue(time.Minute)
			q.Add("a")
			q.Add("b")
			q.Add("a")
			expectQueued(t, q, 0, "a", "b")
		})
	})
	t.Run("never two workers on one id", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newWorkQueue(time.Minute)
			q.Add("a")
			take(t, q, "a")
			q.Add("a") // while processing: dirty, not queued
			q.Add("a")
			expectQueued(t, q, 0)
			q.Done("a", Result{}, nil)
			expectQueued(t, q, 0, "a") // once
		})
	})
	t.Run("retryable errors back off per id, doubling to the cap", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newWorkQueue(350 * time.Millisecond)
			q.Add("a")
			for _, wait := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 350 * time.Millisecond, 350 * time.Millisecond} {
				take(t, q, "a")
				q.Add("b") // another device is not held up
				q.Done("a", Result{}, errStore)
				take(t, q, "b")
				q.Done("b", Result{}, nil)
				expectQueued(t, q, wait-time.Millisecond)
				expectQueued(t, q, time.Millisecond, "a")
			}
			take(t, q, "a")
			q.Done("a", Result{}, nil) // success resets the backoff
			q.Add("a")
			take(t, q, "a")
			q.Done("a", Result{}, errStore)
			expectQueued(t, q, 100*time.Millisecond, "a")
		})
	})
	t.Run("a terminal error is not retried", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newWorkQueue(time.Minute)
			q.Add("a")
			take(t, q, "a")
			q.Done("a", Result{}, TerminalError(errStore))
			expectQueued(t, q, time.Hour)
			q.Add("a") // until something queues it
			take(t, q, "a")
			q.Done("a", Result{}, errStore) // and its backoff starts afresh
			expectQueued(t, q, 100*time.Millisecond, "a")
		})
	})
	t.Run("RequeueAfter queues after that long", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newWorkQueue(time.Minute)
			q.Add("a")
			take(t, q, "a")
			q.Done("a", Result{RequeueAfter: 30 * time.Second}, nil)
			expectQueued(t, q, 30*time.Second-time.Millisecond)
			expectQueued(t, q, time.Millisecond, "a")
		})
	})
	t.Run("a dirty id comes back at once and its error is not a failure", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newWorkQueue(time.Minute)
			q.Add("a")
			take(t, q, "a")
			q.Add("a")
			q.Done("a", Result{}, errStore)
			expectQueued(t, q, 0, "a")
			take(t, q, "a")
			q.Done("a", Result{}, errStore) // the first failure counted
			expectQueued(t, q, 100*time.Millisecond, "a")
		})
	})
	t.Run("AddAfter replaces a pending one", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newWorkQueue(time.Minute)
			q.AddAfter("a", time.Second)
			q.AddAfter("a", 5*time.Second)
			expectQueued(t, q, 4*time.Second)
			expectQueued(t, q, time.Second, "a")
		})
	})
	t.Run("Forget drops a pending retry", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newWorkQueue(time.Minute)
			q.Add("a")
			take(t, q, "a")
			q.Done("a", Result{}, errStore)
			q.Forget("a")
			expectQueued(t, q, time.Hour)
		})
	})
	t.Run("ShutDown wakes Get and queues nothing more", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newWorkQueue(time.Minute)
			got := make(chan bool)
			go func() {
				_, ok := q.Get()
				got <- ok
			}()
			synctest.Wait() // Get is waiting
			q.AddAfter("a", time.Second)
			q.ShutDown()
			if <-got {
				t.Fatal("Get after ShutDown: ok")
			}
			q.Add("b")
			expectQueued(t, q, time.Hour)
			if _, ok := q.Get(); ok {
				t.Fatal("Get after ShutDown: ok")
			}
		})
	})
}

func TestTerminalError(t *testing.T) {
	t.Parallel()
	if TerminalError(nil) != nil {
		t.Error("TerminalError(nil) is not nil")
	}
	err := reconcileError("pi-1", TerminalError(errStore))
	if !IsTerminal(err) || !errors.Is(err, errStore) || err.Error() != "reconcile pi-1: store busy" {
		t.Errorf("reconcileError of a terminal error = %v (terminal %v)", err, IsTerminal(err))
	}
	if err := reconcileError("pi-1", errStore); IsTerminal(err) {
		t.Error("a plain error became terminal")
	}
}
