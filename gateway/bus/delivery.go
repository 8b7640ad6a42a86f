package bus

import (
	"errors"
	"fmt"

	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// Errors ParseDelivery returns besides envelope's *DecodeError.
var (
	// ErrNotBus: the topic is not chorus/v1/<device>/bus/<type>.
	ErrNotBus = errors.New("not a bus topic")
	// ErrRetained: a bus message is never retained (ARCHITECTURE.md §3), so
	// a retained one is ignored rather than replayed as if it were new.
	ErrRetained = errors.New("retained message on a bus topic")
	// ErrTypeMismatch: the message's type is not the topic's type level.
	ErrTypeMismatch = errors.New("message type does not match the topic")
)

// Delivery is one OVOS Message received on a device's bus.
type Delivery struct {
	Device          string
	Message         envelope.Message
	CorrelationData []byte // MQTT 5 correlation data; Client.Reply echoes it
	Topic           string
}

// ParseDelivery reads a bus message from p: the topic must be a bus topic,
// the message not retained, the payload a valid Message (MSG-1, envelope.Decode)
// whose type is the topic's last level (BUS.md §2). Callers drop and log what
// fails; nothing here is fatal (MSG-1 §6.1).
func ParseDelivery(p Packet) (Delivery, error) {
	t, err := topic.Parse(p.Topic)
	if err != nil {
		return Delivery{}, fmt.Errorf("bus message: %w: %w", ErrNotBus, err)
	}
	if t.Kind != topic.KindBus {
		return Delivery{}, fmt.Errorf("bus message on %s: %w", p.Topic, ErrNotBus)
	}
	if p.Retain {
		return Delivery{}, fmt.Errorf("bus message on %s: %w", p.Topic, ErrRetained)
	}
	m, err := envelope.Decode(p.Payload)
	if err != nil {
		return Delivery{}, fmt.Errorf("bus message on %s: %w", p.Topic, err)
	}
	if m.Type != t.MsgType {
		return Delivery{}, fmt.Errorf("bus message on %s: type %q: %w", p.Topic, m.Type, ErrTypeMismatch)
	}
	return Delivery{Device: t.Device, Message: m, CorrelationData: p.CorrelationData, Topic: p.Topic}, nil
}
