package wsbus

import (
	"fmt"

	"github.com/gorilla/websocket"

	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// deliver is the Transport handler for the device's bus: it sends p to every
// connected client, the original sender included, exactly once (BUS.md §3).
// It never blocks: it only queues, and a client whose queue is full is
// disconnected. Per-publisher order is kept, since each client's queue is
// FIFO. A message that is not a valid envelope is dropped and logged, never
// relayed: ovos-bus-client disconnects on non-JSON (BUS.md §3).
func (s *Server) deliver(p bus.Packet) {
	if err := s.checkDelivery(p); err != nil {
		s.log.Warn("websocket bus dropped a bus message", "topic", p.Topic, "err", err)
		return
	}
	m, err := websocket.NewPreparedMessage(websocket.TextMessage, p.Payload)
	if err != nil {
		s.log.Warn("websocket bus dropped a bus message", "topic", p.Topic, "err", err)
		return
	}
	for _, c := range s.snapshot() {
		if !c.enqueue(m) {
			s.log.Warn("websocket client too slow, disconnecting", "remote", c.remote, "queue", s.cfg.QueueLen)
			c.kill()
		}
	}
}

// checkDelivery accepts a valid envelope on this device's bus whose type is
// its topic's. The type check matters: the broker's ACL decides on the
// topic, so a message whose payload claims another type would reach OVOS
// services under a type the publisher may not emit (ARCHITECTURE.md §6).
func (s *Server) checkDelivery(p bus.Packet) error {
	t, err := topic.Parse(p.Topic)
	if err != nil {
		return err
	}
	if t.Kind != topic.KindBus || t.Device != s.cfg.Device {
		return fmt.Errorf("not on the bus of device %q", s.cfg.Device)
	}
	m, err := envelope.Decode(p.Payload)
	if err != nil {
		return err
	}
	if m.Type != t.MsgType {
		return fmt.Errorf("payload type %q differs from the topic's type %q", m.Type, t.MsgType)
	}
	return nil
}

func (s *Server) snapshot() []*client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshotLocked()
}
