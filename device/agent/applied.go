package agent

import (
	"context"
	"sync"
)

// appliedWaiter lets install requests (SKILL_MANAGER §10) wait until the
// installer has applied a desired version: the request is answered
// .complete only then, so the reconciler keeps the skill it asked for.
type appliedWaiter struct {
	// mu guards the fields below; nothing blocks while holding it.
	mu       sync.Mutex
	version  int64         // the last applied desired version
	failedAt int64         // version of the last failed pass since the last success; 0 for none
	failure  error         // that pass's error
	changed  chan struct{} // closed at each change, then replaced; nil until someone waits
}

// applied records a fully applied version.
func (w *appliedWaiter) applied(version int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.version = max(w.version, version)
	w.failedAt, w.failure = 0, nil
	w.broadcastLocked()
}

// failed records a pass over version that did not apply it; the runner
// retries it with backoff.
func (w *appliedWaiter) failed(version int64, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failedAt, w.failure = version, err
	w.broadcastLocked()
}

func (w *appliedWaiter) broadcastLocked() {
	if w.changed != nil {
		close(w.changed)
		w.changed = nil
	}
}

// wait returns nil once a version >= want is applied, the error of the
// last pass when a document of version >= want failed to apply, or ctx's
// error.
func (w *appliedWaiter) wait(ctx context.Context, want int64) error {
	for {
		w.mu.Lock()
		if w.version >= want {
			w.mu.Unlock()
			return nil
		}
		if w.failedAt >= want {
			err := w.failure
			w.mu.Unlock()
			return err
		}
		if w.changed == nil {
			w.changed = make(chan struct{})
		}
		ch := w.changed
		w.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// recordApplied is the installer's OnApplied: the reporter publishes the
// applied version and managed flags, the waiter wakes install requests.
func (a *Agent) recordApplied(version int64, managed []string) {
	a.reporter.applied(version, managed)
	a.applied.applied(version)
}
