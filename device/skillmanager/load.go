package skillmanager

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Why a started load did not end up tracked as loaded.
var (
	errGone        = errors.New("uninstalled while loading")
	errDeactivated = errors.New("deactivated while loading")
)

// load is one load started by a pass; done receives its outcome once.
type load struct {
	a    *attempt
	done chan error
}

// begin starts a's process (synchronously, so processes of one pass start
// in discovery order) and waits for readiness in a task.
func (m *Manager) begin(a *attempt) *load {
	l := &load{a: a, done: make(chan error, 1)}
	proc, err := m.cfg.Launcher.Start(a.skill)
	if err != nil {
		l.done <- m.finish(a, nil, fmt.Errorf("start: %w", err))
		return l
	}
	if a.ovos != nil {
		proc = ovosProcess{proc}
	}
	started := m.goTask(func(ctx context.Context) {
		l.done <- m.finish(a, proc, m.awaitReady(ctx, a, proc))
	})
	if !started {
		l.done <- m.finish(a, proc, errStopping)
	}
	return l
}

// awaitReady waits for the skill's readiness (SKILL_MANAGER §2): ready:
// message waits up to ReadyTimeout for chorus.skill.ready naming the skill;
// on-start is ready as soon as the process runs.
func (m *Manager) awaitReady(ctx context.Context, a *attempt, proc Process) error {
	if a.ovos != nil {
		return m.awaitOVOS(ctx, a, proc)
	}
	if a.skill.Ready == "on-start" {
		select {
		case <-proc.Done():
			return fmt.Errorf("exited at start: %s", exitReport(proc))
		default:
			return nil
		}
	}
	timeout := m.cfg.After(m.cfg.ReadyTimeout)
	select {
	case <-a.ready:
		return nil
	case <-proc.Done():
		return fmt.Errorf("exited before ready: %s", exitReport(proc))
	case <-timeout:
		return fmt.Errorf("not ready within %s", m.cfg.ReadyTimeout)
	case <-ctx.Done():
		return errStopping
	}
}

// finish ends a load: it releases the reservation and, under the same
// lock, decides the outcome; the effects (stop, bus events, watcher) follow
// outside the lock. SKILL_MANAGER §4 step 5 and §6: a load with an
// uninstall verdict is stopped on the way out, never tracked and never
// announced; the verdict lived on this attempt only, so it is spent.
func (m *Manager) finish(a *attempt, proc Process, err error) error {
	id := a.skill.ID
	var e *entry
	var f *failure
	m.mu.Lock()
	if m.loading[id] == a {
		delete(m.loading, id)
	}
	switch {
	case a.gone:
		err = errGone
	case errors.Is(err, errStopping):
	case err != nil:
		f = m.recordFailureLocked(id, a.skill.Version, err, proc)
	case a.deactivated:
		m.tracked[id] = &entry{skill: a.skill, serial: a.serial}
		delete(m.failures, id)
		err = errDeactivated
	default:
		e = &entry{skill: a.skill, serial: a.serial, proc: proc, active: true}
		m.tracked[id] = e
		delete(m.failures, id)
	}
	m.mu.Unlock()
	m.changed()

	if e != nil {
		m.watch(e, proc)
		m.log.Info("skill loaded", "skill", id, "version", a.skill.Version, "pid", proc.PID())
		if a.ovos == nil { // a launcher announced its own (ovos.go)
			m.emit(TypeSkillsLoaded, map[string]any{"path": a.skill.Dir, "id": id, "name": skillName(a.skill.Name, id)})
		}
		m.emit(TypeSkillLoaded, map[string]any{"skill_id": id})
		if a.deferred { // no pass will ask for it (seeds/000: train after a load)
			m.requestTraining()
		}
		return nil
	}
	if proc != nil {
		m.stopAndDetach(context.Background(), id, proc)
	}
	switch {
	case f != nil:
		m.log.Warn("skill failed to load", "skill", id, "err", err, "attempts", f.attempts, "next_retry", f.nextRetry())
		if !errors.Is(err, errLauncherFailed) {
			m.emit(TypeLoadingFailure, map[string]any{"path": a.skill.Dir, "id": id})
		}
	case errors.Is(err, errGone):
		m.log.Info("load abandoned: skill uninstalled while it loaded", "skill", id)
	case errors.Is(err, errDeactivated):
		m.log.Info("skill deactivated while it loaded", "skill", id)
	}
	return err
}

// watch turns an exit of e's process that nobody asked for into a failure
// (SKILL_MANAGER §4): untrack, detach_skill on its behalf, backoff. A stop
// the manager made (deactivate, uninstall, restart, shutdown) first takes
// the process out of the entry, so the watcher sees it is no longer current
// and stays silent.
func (m *Manager) watch(e *entry, proc Process) {
	m.watchers.Add(1)
	go func() {
		defer m.watchers.Done()
		<-proc.Done()
		id := e.skill.ID
		m.mu.Lock()
		current := m.tracked[id] == e && e.proc == proc
		var f *failure
		if current {
			delete(m.tracked, id)
			f = m.recordFailureLocked(id, e.skill.Version, fmt.Errorf("exited: %s", exitReport(proc)), proc)
		}
		m.mu.Unlock()
		if !current {
			return
		}
		m.log.Warn("skill exited on its own", "skill", id, "err", f.err, "attempts", f.attempts, "next_retry", f.nextRetry())
		m.emitDetach(id)
		m.changed()
	}()
}

// stopAndDetach stops proc (bounded by StopTimeout within ctx) and emits
// detach_skill on the skill's behalf, so intent engines drop its intents
// (ovos-behaviour §2.2: default_shutdown). The stop error is returned and
// logged; the detach is sent regardless.
func (m *Manager) stopAndDetach(ctx context.Context, id string, proc Process) error {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.StopTimeout)
	defer cancel()
	err := proc.Stop(ctx)
	if err != nil {
		m.log.Warn("stop skill", "skill", id, "err", err)
		err = fmt.Errorf("stop %s: %w", id, err)
	}
	if detachOwed(proc) {
		m.emitDetach(id)
	}
	return err
}

func (m *Manager) emitDetach(id string) {
	m.emitCtx(TypeDetachSkill, map[string]any{"skill_id": id}, map[string]any{"skill_id": id})
}

// exitReport describes why proc exited, with its last output lines.
func exitReport(proc Process) string {
	var b strings.Builder
	if err := proc.ExitErr(); err != nil {
		b.WriteString(err.Error())
	} else {
		b.WriteString("exit status 0")
	}
	tail := proc.Tail()
	if n := len(tail); n > 3 {
		tail = tail[n-3:]
	}
	if len(tail) > 0 {
		b.WriteString("; last output: ")
		b.WriteString(strings.Join(tail, " | "))
	}
	return b.String()
}

func skillName(name, id string) string {
	if name != "" {
		return name
	}
	return id
}
