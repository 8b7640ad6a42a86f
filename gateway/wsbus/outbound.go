package wsbus

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gorilla/websocket"

	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// deliver is the device transport's handler for the device's bus: it sends
// p to every connected services client, the original sender included,
// exactly once (BUS.md §3). Skill clients are not served from here: each
// reads through its own subscription with its skill's credentials, so it
// gets exactly what the broker lets that skill read. deliver never blocks:
// it only queues, and a client whose queue is full is disconnected.
// Per-publisher order is kept, since each client's queue is FIFO. A message
// that is not a valid envelope is dropped and logged, never relayed:
// ovos-bus-client disconnects on non-JSON (BUS.md §3).
func (s *Server) deliver(p bus.Packet) {
	m, err := s.prepare(p)
	if err != nil {
		s.log.Warn("websocket bus dropped a bus message", "topic", p.Topic, "err", err)
		return
	}
	for _, c := range s.snapshot() {
		if c.id.skill == "" {
			s.send(c, m)
		}
	}
}

// deliverTo is a skill client's own subscription handler; the types of
// HideFromSkills are not sent.
func (s *Server) deliverTo(c *client, p bus.Packet) {
	if t := p.Topic[strings.LastIndexByte(p.Topic, '/')+1:]; slices.Contains(s.cfg.HideFromSkills, t) {
		return
	}
	m, err := s.prepare(p)
	if err != nil {
		s.log.Warn("websocket bus dropped a bus message", "topic", p.Topic, "who", c.id, "err", err)
		return
	}
	s.send(c, m)
}

func (s *Server) send(c *client, m *websocket.PreparedMessage) {
	if !c.enqueue(m) {
		s.log.Warn("websocket client too slow, disconnecting", "remote", c.remote, "who", c.id, "queue", s.cfg.QueueLen)
		c.kill()
	}
}

// subscribeSkill subscribes a skill client's own transport to the device's
// bus; it returns how to undo it (a no-op for services).
func (s *Server) subscribeSkill(c *client) (func(), error) {
	if c.tr == nil {
		return func() {}, nil
	}
	filter, err := topic.BusFilter(s.cfg.Device)
	if err != nil {
		return func() {}, err
	}
	ctx, cancel := context.WithTimeout(s.ctx, publishTimeout)
	defer cancel()
	unsub, err := c.tr.Subscribe(ctx, filter, func(p bus.Packet) { s.deliverTo(c, p) })
	if err != nil || unsub == nil {
		return func() {}, err
	}
	return unsub, nil
}

// prepare checks p (checkDelivery) and frames it once for every client.
func (s *Server) prepare(p bus.Packet) (*websocket.PreparedMessage, error) {
	if err := s.checkDelivery(p); err != nil {
		return nil, err
	}
	return websocket.NewPreparedMessage(websocket.TextMessage, p.Payload)
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
