package skillmanager

import (
	"context"
	"fmt"

	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/state"
)

// TrainingReport is the outcome of the last training request (SKILL_MANAGER
// §4: a timeout or an error reply is logged and reported).
type TrainingReport = state.Training

// requestTraining emits mycroft.skills.train {} and waits for
// mycroft.skills.trained up to TrainTimeout in a task: it never blocks the
// pass that asked, nor the manager. Any trained reply answers every request
// waiting at that moment (pipelines train on the whole skill set).
func (m *Manager) requestTraining() {
	ch := make(chan string, 1)
	now := m.now().UTC()
	m.mu.Lock()
	key := m.nextSerialLocked()
	m.trainWait[key] = ch
	m.training = TrainingReport{Status: "pending", RequestedAt: &now}
	m.mu.Unlock()
	m.emit(TypeTrain, map[string]any{})
	if !m.goTask(func(ctx context.Context) { m.awaitTrained(ctx, key, ch) }) {
		m.mu.Lock()
		delete(m.trainWait, key)
		m.mu.Unlock()
	}
}

func (m *Manager) awaitTrained(ctx context.Context, key uint64, ch chan string) {
	var status, errText string
	select {
	case errText = <-ch:
		status = "trained"
		if errText != "" {
			status = "failed"
			m.log.Error("intent training failed", "err", errText)
		}
	case <-m.cfg.After(m.cfg.TrainTimeout):
		status, errText = "timeout", fmt.Sprintf("no %s within %s", TypeTrained, m.cfg.TrainTimeout)
		m.log.Warn("intent training timed out", "timeout", m.cfg.TrainTimeout)
	case <-ctx.Done():
		return
	}
	now := m.now().UTC()
	m.mu.Lock()
	delete(m.trainWait, key)
	m.training.Status, m.training.Error, m.training.FinishedAt = status, errText, &now
	m.mu.Unlock()
	m.changed()
}

// handleTrained answers the waiting training requests; data.error, when
// present, is the failure.
func (m *Manager) handleTrained(_ context.Context, d bus.Delivery) {
	errText := ""
	if e, ok := d.Message.Data["error"]; ok && e != nil && e != false && e != "" {
		errText = fmt.Sprint(e)
	}
	m.mu.Lock()
	waiting := m.trainWait
	m.trainWait = map[uint64]chan string{}
	m.mu.Unlock()
	for _, ch := range waiting {
		ch <- errText // buffered 1, one send per request
	}
}
