package skillmanager

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
)

// maxReasons bounds the reasons a trigger keeps for its next run's log line.
const maxReasons = 8

// maxRequests bounds the request handlers (activate, deactivate, keep,
// rescan) that run at once; one more is refused with errBusy.
const maxRequests = 16

// errBusy answers a request while maxRequests are already being handled.
var errBusy = errors.New("the skill manager is busy with other requests; retry in a moment")

// trigger coalesces events that each ask for the same idempotent work (a
// load pass, the unload of what is gone): fire never blocks, and the work
// runs in one goroutine owned by the manager. A fire while the work runs
// schedules exactly one more run, so no event is lost and a burst of events
// costs at most two runs, not one goroutine each (nomad's capacity-1
// trigger channels).
type trigger struct {
	ch      chan struct{}
	mu      sync.Mutex
	reasons []string // why, since the last run began (distinct, at most maxReasons)
}

func newTrigger() *trigger { return &trigger{ch: make(chan struct{}, 1)} }

// fire asks for one run after now, for why.
func (t *trigger) fire(why string) {
	t.mu.Lock()
	if !slices.Contains(t.reasons, why) && len(t.reasons) < maxReasons {
		t.reasons = append(t.reasons, why)
	}
	t.mu.Unlock()
	select {
	case t.ch <- struct{}{}:
	default: // a run is already scheduled: it will see this event too
	}
}

// take returns the reasons fired since the last take, joined.
func (t *trigger) take() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	why := strings.Join(t.reasons, ", ")
	t.reasons = t.reasons[:0]
	return why
}

// run does work once per fire burst until ctx ends.
func (t *trigger) run(ctx context.Context, work func(ctx context.Context, why string)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.ch:
			work(ctx, t.take())
		}
	}
}

// startTriggers starts the goroutines behind the manager's triggers; called
// once, when Start sets the run context.
func (m *Manager) startTriggers() {
	m.goTask(func(ctx context.Context) {
		m.passes.run(ctx, func(ctx context.Context, why string) { m.runPass(ctx, why, nil) })
	})
	m.goTask(func(ctx context.Context) {
		m.installs.run(ctx, func(ctx context.Context, why string) {
			m.restartUpgraded(ctx)
			m.runPass(ctx, why, nil)
		})
	})
	m.goTask(func(ctx context.Context) {
		m.uninstalls.run(ctx, func(ctx context.Context, _ string) { m.unloadGone(ctx) })
	})
}

// goRequest runs a request handler's work as a task, at most maxRequests
// at once. It returns errBusy when that many run, and errStopping once
// Close has begun; the caller replies with the error.
func (m *Manager) goRequest(f func(ctx context.Context)) error {
	select {
	case m.requests <- struct{}{}:
	default:
		return errBusy
	}
	if !m.goTask(func(ctx context.Context) {
		defer func() { <-m.requests }()
		f(ctx)
	}) {
		<-m.requests
		return errStopping
	}
	return nil
}
