package controller

import (
	"sync"
	"time"
)

// workQueue is the reconciler's queue of device ids (controller-runtime's
// workqueue, reduced). Its guarantees:
//
//   - an id is queued at most once, however often it is added;
//   - an id is never handed to two workers at once: an Add while it is being
//     processed marks it dirty, and Done queues it again;
//   - Done applies what the reconcile returned (the handler decides, not the
//     reconciler): a retryable error queues the id again after a per-id
//     exponential backoff (100ms doubling up to maxBackoff), so one stuck
//     device never holds a worker or another device's turn; a terminal
//     error or a success resets the backoff and queues nothing; a
//     RequeueAfter queues it after that long;
//   - AddAfter replaces a pending AddAfter or retry of the same id;
//   - after ShutDown, Get returns ok false and nothing is queued any more.
type workQueue struct {
	maxBackoff time.Duration

	mu         sync.Mutex // guards the fields below
	cond       *sync.Cond
	items      []string
	queued     map[string]bool
	processing map[string]bool
	dirty      map[string]bool
	failures   map[string]int
	timers     map[string]*time.Timer
	down       bool
}

func newWorkQueue(maxBackoff time.Duration) *workQueue {
	q := &workQueue{
		maxBackoff: maxBackoff,
		queued:     map[string]bool{}, processing: map[string]bool{}, dirty: map[string]bool{},
		failures: map[string]int{}, timers: map[string]*time.Timer{},
	}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// Add queues id unless it is already queued.
func (q *workQueue) Add(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.addLocked(id)
}

func (q *workQueue) addLocked(id string) {
	switch {
	case q.down || q.queued[id]:
	case q.processing[id]:
		q.dirty[id] = true
	default:
		q.queued[id] = true
		q.items = append(q.items, id)
		q.cond.Signal()
	}
}

// AddAfter queues id after d, replacing a pending AddAfter or retry of id.
func (q *workQueue) AddAfter(id string, d time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.afterLocked(id, d)
}

func (q *workQueue) afterLocked(id string, d time.Duration) {
	if q.down {
		return
	}
	if t, ok := q.timers[id]; ok {
		t.Stop()
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		if q.timers[id] == t {
			delete(q.timers, id)
		}
		q.addLocked(id)
	})
	q.timers[id] = t
}

// Get blocks until an id is available or the queue is shut down (ok false).
func (q *workQueue) Get() (id string, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.down {
		q.cond.Wait()
	}
	if q.down {
		return "", false
	}
	id, q.items = q.items[0], q.items[1:]
	delete(q.queued, id)
	q.processing[id] = true
	return id, true
}

// Done ends the processing of id with what its reconcile returned, and
// applies it (the type's comment). A dirty id is queued again at once, and
// then a retryable error does not count as a failure.
func (q *workQueue) Done(id string, res Result, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, id)
	retry := err != nil && !IsTerminal(err)
	if !retry {
		delete(q.failures, id)
	}
	if res.RequeueAfter > 0 && err == nil {
		q.afterLocked(id, res.RequeueAfter)
	}
	if q.dirty[id] {
		delete(q.dirty, id)
		q.addLocked(id)
		return
	}
	if retry && !q.down {
		n := q.failures[id]
		q.failures[id] = n + 1
		q.afterLocked(id, q.backoff(n))
	}
}

// backoff is the wait before the retry after n earlier failures.
func (q *workQueue) backoff(n int) time.Duration {
	return min(100*time.Millisecond<<min(n, 20), q.maxBackoff)
}

// Forget drops the backoff state and any pending AddAfter of id (its
// device was removed).
func (q *workQueue) Forget(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.failures, id)
	if t, ok := q.timers[id]; ok {
		t.Stop()
		delete(q.timers, id)
	}
}

// ShutDown wakes every Get with ok false and stops pending timers.
func (q *workQueue) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.down = true
	for id, t := range q.timers {
		t.Stop()
		delete(q.timers, id)
	}
	q.cond.Broadcast()
}
