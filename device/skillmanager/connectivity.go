package skillmanager

import (
	"context"

	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/state"
)

// pendingEvent is a connectivity event received before the manager was
// ready, replayed after the startup check (SKILL_MANAGER §5).
type pendingEvent struct {
	msg envelope.Message
}

// handleConnectivity is the handler of the six connectivity events. Before
// ready the event is remembered for replay; once ready it is applied and, on
// a transition from unset to set, a load pass runs in a task.
func (m *Manager) handleConnectivity(_ context.Context, d bus.Delivery) {
	m.mu.Lock()
	switch m.status {
	case StatusStarted, StatusAlive:
		m.pending = append(m.pending, pendingEvent{msg: d.Message})
		m.mu.Unlock()
		return
	case StatusStopping:
		m.mu.Unlock()
		return
	}
	load := m.applyLocked(d.Message)
	m.mu.Unlock()
	m.changed()
	if load {
		m.passes.fire(d.Message.Type)
	}
}

// applyLocked applies one connectivity event to the flags and reports
// whether it set a flag that was unset (ovos-behaviour §1.5):
//   - connected events set their flag; internet sets network too;
//   - mycroft.gui.available reads "permanent" every time: true stops later
//     disconnects from clearing any flag;
//   - disconnected events clear their flag unless a permanent GUI said
//     otherwise; network.disconnected clears internet too [ours: the
//     internet cannot be reached without a network]. Nothing is unloaded:
//     loaded skills whose requirements are now unmet read as degraded.
func (m *Manager) applyLocked(msg envelope.Message) (transition bool) {
	before := m.conn
	c := &m.conn
	switch msg.Type {
	case TypeNetworkConnected:
		transition = !c.network
		c.network = true
	case TypeInternetConnected:
		transition = !c.internet
		c.internet, c.network = true, true
		c.reason = ""
	case TypeGUIAvailable:
		permanent, _ := msg.Data["permanent"].(bool)
		c.allowReloads = !permanent
		transition = !c.gui
		c.gui = true
	case TypeNetworkDisconnected:
		if c.allowReloads {
			c.network, c.internet = false, false
		}
	case TypeInternetDisconnected:
		if c.allowReloads {
			c.internet = false
		}
	case TypeGUIUnavailable:
		if c.allowReloads {
			c.gui = false
		}
	}
	if c.network != before.network || c.internet != before.internet || c.gui != before.gui {
		c.changedAt = m.now().UTC()
		c.source = msg.Source()
		if c.source == "" {
			c.source = "bus"
		}
	}
	return transition
}

// applyNow applies an event during startup (bypassing the pre-ready queue)
// and runs the pass it triggers synchronously, so Start returns after the
// loads it caused.
func (m *Manager) applyNow(ctx context.Context, msg envelope.Message) {
	m.mu.Lock()
	load := m.applyLocked(msg)
	m.mu.Unlock()
	m.changed()
	if load {
		m.runPass(ctx, msg.Type, nil)
	}
}

// ConnectivityReport is the payload of the retained connectivity topic
// (ARCHITECTURE §3).
type ConnectivityReport = state.Connectivity

func (m *Manager) connectivityLocked() ConnectivityReport {
	return ConnectivityReport{Network: m.conn.network, Internet: m.conn.internet, GUI: m.conn.gui,
		ChangedAt: m.conn.changedAt, Source: m.conn.source, Reason: m.conn.reason}
}
