package skillmanager

import (
	"context"
	"time"

	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/envelope"
)

// emitTimeout bounds one bus publish. Emits use their own context, not the
// run context, so the detach_skill of a shutdown still goes out.
const emitTimeout = 5 * time.Second

func (m *Manager) emit(t string, data map[string]any) { m.emitCtx(t, data, nil) }

// emitCtx publishes a new message of type t; failures are logged, never
// fatal (the bus client reconnects on its own).
func (m *Manager) emitCtx(t string, data, msgCtx map[string]any) {
	msg := envelope.New(t, data)
	for k, v := range msgCtx {
		msg.Context[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), emitTimeout)
	defer cancel()
	if err := m.cfg.Bus.Emit(ctx, msg); err != nil {
		m.log.Warn("emit", "type", t, "err", err)
	}
}

// reply answers d with d's type + ".response" and data (MSG-1 §5.3); the
// bus client echoes the request's correlation data.
func (m *Manager) reply(d bus.Delivery, data map[string]any) {
	m.replyType(d, responseType(d.Message.Type), data)
}

func (m *Manager) replyType(d bus.Delivery, t string, data map[string]any) {
	msg := d.Message.Reply(t, data)
	ctx, cancel := context.WithTimeout(context.Background(), emitTimeout)
	defer cancel()
	if err := m.cfg.Bus.Reply(ctx, d, msg); err != nil {
		m.log.Warn("reply", "type", t, "err", err)
	}
}
