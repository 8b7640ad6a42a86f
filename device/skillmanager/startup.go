package skillmanager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/envelope"
)

// Start runs the startup sequence of SKILL_MANAGER §5 and returns once the
// manager is ready (or ctx ended):
//  1. status alive; subscribe to every event the manager handles (status
//     queries are answered from here on);
//  2. optionally wait for the intent service (WaitForIntentService);
//  3. the offline pass: load skills that need nothing;
//  4. ask ovos.PHAL.internet_check (PHALTimeout); on no answer fall back to
//     CheckInternet; emit mycroft.internet.connected, else
//     mycroft.network.connected, and apply it (its load pass runs before
//     Start returns);
//  5. replay connectivity events that arrived before this point, in order;
//  6. emit mycroft.skills.initialized {}, become ready, start the scan;
//  7. emit mycroft.ready once ready_settings are met (ready.go).
//
// ctx bounds the manager's life: when it ends, loads and the scan stop
// (Close is still needed to stop the skills). Start may be called once.
func (m *Manager) Start(ctx context.Context) error {
	m.mu.Lock()
	if m.status != StatusStarted || m.closed {
		m.mu.Unlock()
		return errors.New("skillmanager: Start called twice or after Close")
	}
	m.status = StatusAlive
	m.runCtx, m.cancel = context.WithCancel(ctx)
	run := m.runCtx
	m.mu.Unlock()
	m.startTriggers()

	m.notify.start()
	if err := m.subscribe(); err != nil {
		return fmt.Errorf("skillmanager: start: %w", err)
	}
	m.changed()
	if m.cfg.WaitForIntentService {
		m.waitForIntents(run)
	}
	m.runPass(run, "startup (offline)", nil)
	m.syncConnectivity(run)
	m.drainPending(run, false)
	m.emit(TypeInitialized, map[string]any{})
	m.drainPending(run, true)
	m.goTask(m.scanLoop)
	m.goTask(m.announceReady)
	m.log.Info("skill manager ready")
	m.changed()
	return run.Err()
}

// subscribe registers every handler; on failure it removes those already
// registered.
func (m *Manager) subscribe() error {
	handlers := []struct {
		t string
		h bus.Handler
	}{
		{TypeIsAlive, m.handleStatus},
		{TypeIsReady, m.handleStatus},
		{TypeAllLoaded, m.handleStatus},
		{TypeSkillReady, m.handleSkillReady},
		{TypeTrained, m.handleTrained},
		{TypeNetworkConnected, m.handleConnectivity},
		{TypeNetworkDisconnected, m.handleConnectivity},
		{TypeInternetConnected, m.handleConnectivity},
		{TypeInternetDisconnected, m.handleConnectivity},
		{TypeGUIAvailable, m.handleConnectivity},
		{TypeGUIUnavailable, m.handleConnectivity},
		{TypeSkillsInstallComplete, m.handleInstallComplete},
		{TypePipInstallComplete, m.handleInstallComplete},
		{TypeSkillsUninstallComplete, m.handleUninstallComplete},
		{TypePipUninstallComplete, m.handleUninstallComplete},
		{TypeRescan, m.handleRescan},
		{TypeList, m.handleList},
		{TypeActivate, m.handleActivate},
		{TypeDeactivate, m.handleDeactivate},
		{TypeKeep, m.handleKeep},
	}
	var offs []func()
	for _, h := range handlers {
		off, err := m.cfg.Bus.On(h.t, h.h)
		if err != nil {
			for _, o := range offs {
				o()
			}
			return fmt.Errorf("subscribe %s: %w", h.t, err)
		}
		offs = append(offs, off)
	}
	m.mu.Lock()
	m.offs = offs
	m.mu.Unlock()
	return nil
}

// syncConnectivity is step 4 of Start (seeds/000 "_sync_skill_loading_state").
func (m *Manager) syncConnectivity(ctx context.Context) {
	network, internet, source, reason := m.askPHAL(ctx)
	if source == "" {
		network, internet, source, reason = m.checkHTTP(ctx)
	}
	m.log.Info("startup connectivity", "network", network, "internet", internet, "source", source, "reason", reason)
	m.mu.Lock()
	m.conn.reason = reason
	m.mu.Unlock()
	var t string
	switch {
	case internet:
		t = TypeInternetConnected
	case network:
		t = TypeNetworkConnected
	default:
		m.changed()
		return
	}
	// Emitted for everyone else; applied here so its pass runs before
	// Start returns. The echo of our own event is idempotent (no
	// transition), and source is kept local: context.source routes.
	m.emit(t, map[string]any{})
	m.applyNow(ctx, envelope.New(t, map[string]any{}).WithContext(envelope.KeySource, source))
}

// askPHAL asks the PHAL connectivity plugin through AskPHAL; source is ""
// when there is no trusted answer (or no way to ask). The manager never
// takes an ovos.PHAL.internet_check.response off the bus itself: any skill
// may publish that type, so only the agent's trusted channel answers
// (docs/security.md).
func (m *Manager) askPHAL(ctx context.Context) (network, internet bool, source, reason string) {
	if m.cfg.PHALTimeout < 0 || m.cfg.AskPHAL == nil {
		return false, false, "", ""
	}
	rctx, cancel := context.WithTimeout(ctx, m.cfg.PHALTimeout)
	defer cancel()
	network, internet, err := m.cfg.AskPHAL(rctx)
	if err != nil {
		m.log.Info("no trusted PHAL answer; falling back to the HTTP check", "err", err)
		return false, false, "", ""
	}
	if !internet {
		reason = "PHAL reports no internet"
	}
	return network || internet, internet, "phal", reason
}

// checkHTTP is the fallback: network = internet = the HTTP check.
func (m *Manager) checkHTTP(ctx context.Context) (network, internet bool, source, reason string) {
	if m.cfg.CheckInternet == nil {
		return false, false, "http-check", "no internet check configured"
	}
	cctx, cancel := context.WithTimeout(ctx, m.cfg.CheckTimeout)
	defer cancel()
	ok, err := m.cfg.CheckInternet(cctx)
	if err != nil {
		reason = err.Error()
	} else if !ok {
		reason = "internet check failed"
	}
	return ok, ok, "http-check", reason
}

// drainPending replays the connectivity events queued before ready, in
// arrival order. With ready it also flips the status to ready once the
// queue is empty, atomically with that check, so no event is lost between
// the last replay and readiness.
func (m *Manager) drainPending(ctx context.Context, ready bool) {
	for {
		m.mu.Lock()
		p := m.pending
		m.pending = nil
		if len(p) == 0 {
			if ready && m.status == StatusAlive {
				m.status = StatusReady
			}
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
		for _, e := range p {
			m.applyNow(ctx, e.msg)
		}
	}
}

// scanLoop is the periodic pass, the backstop of every event-driven load.
func (m *Manager) scanLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.cfg.After(m.cfg.ScanInterval):
			m.runPass(ctx, "scan", nil)
		}
	}
}

// waitForIntents polls mycroft.intents.is_ready (5 s per try, 1 s apart)
// until it answers true or IntentServiceTimeout passes (ovos-behaviour §1.4,
// CORE-B); a timeout is logged and the startup carries on.
func (m *Manager) waitForIntents(ctx context.Context) {
	deadline := m.cfg.After(m.cfg.IntentServiceTimeout)
	for {
		q := envelope.New(TypeIntentsIsReady, map[string]any{}).
			WithContext(envelope.KeySource, "skills").WithContext(envelope.KeyDestination, "intents")
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		d, err := m.cfg.Bus.Request(rctx, q, responseType(TypeIntentsIsReady))
		cancel()
		if ok, _ := d.Message.Data["status"].(bool); err == nil && ok {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-deadline:
			m.log.Error("intent service did not become ready; loading skills anyway", "timeout", m.cfg.IntentServiceTimeout)
			return
		case <-m.cfg.After(time.Second):
		}
	}
}
