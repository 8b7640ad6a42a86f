package skillmanager

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Close shuts the manager down (SKILL_MANAGER §9): status stopping (status
// queries answer false from here on); stop the scan and every task (loads in
// flight stop their own process); stop every skill, each in its own
// goroutine so one failing stop does not hold up or prevent the others, and
// emit detach_skill for each; unsubscribe; make the last OnChange call. The
// agent publishes offline to availability afterwards.
//
// ctx bounds the waits; a stop still running when ctx ends is reported in
// the error. Close is idempotent: later calls return nil at once.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.status = StatusStopping
	cancel := m.cancel
	m.mu.Unlock()
	m.changed()
	if cancel != nil {
		cancel()
	}
	var errs []error
	if err := waitGroup(ctx, &m.tasks); err != nil {
		errs = append(errs, fmt.Errorf("skillmanager: close: tasks still running: %w", err))
	}
	errs = append(errs, m.stopAll(ctx)...)
	if err := waitGroup(ctx, &m.watchers); err != nil {
		errs = append(errs, fmt.Errorf("skillmanager: close: skill processes still running: %w", err))
	}
	m.mu.Lock()
	offs := m.offs
	m.offs = nil
	m.mu.Unlock()
	for _, off := range offs {
		off()
	}
	m.notify.close()
	return errors.Join(errs...)
}

// stopAll takes every tracked process under the lock and stops each in its
// own goroutine, emitting detach_skill for each.
func (m *Manager) stopAll(ctx context.Context) []error {
	var victims []removed
	m.mu.Lock()
	for id, e := range m.tracked {
		if e.proc != nil {
			victims = append(victims, removed{skill: e.skill, proc: e.proc})
			e.proc, e.active = nil, false
		}
		delete(m.tracked, id)
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	errc := make(chan error, len(victims))
	for _, v := range victims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil { // isolate one broken stop from the others
					errc <- fmt.Errorf("stop %s: panic: %v", v.skill.ID, r)
				}
			}()
			if err := m.stopAndDetach(ctx, v.skill.ID, v.proc); err != nil {
				errc <- err
			}
		}()
	}
	wg.Wait()
	close(errc)
	var errs []error
	for err := range errc {
		errs = append(errs, err)
	}
	return errs
}

// waitGroup waits for wg or ctx, whichever comes first.
func waitGroup(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
