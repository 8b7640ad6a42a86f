package controller

import (
	"sync"
	"time"
)

// workQueue is the reconciler's queue of device ids (controller-runtime's
// workqueue, reduced): an id is queued at most once, is never handed to two
// workers at once (an Add while it is being processed marks it dirty and
// re-queues it on Done), and failures back off per id, so one stuck device
// never holds a worker or another device's turn.
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

// Done ends the processing of id. err != nil schedules a retry with
// exponential backoff (100ms doubling up to maxBackoff); success resets it.
func (q *workQueue) Done(id string, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, id)
	if err == nil {
		delete(q.failures, id)
	}
	if q.dirty[id] {
		delete(q.dirty, id)
		q.addLocked(id)
		return
	}
	if err != nil && !q.down {
		n := q.failures[id]
		q.failures[id] = n + 1
		q.afterLocked(id, min(100*time.Millisecond<<min(n, 20), q.maxBackoff))
	}
}

// Forget drops the backoff state of id (its device was removed).
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
