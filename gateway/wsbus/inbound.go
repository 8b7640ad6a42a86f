package wsbus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/gorilla/websocket"

	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// errTooLarge marks a frame over a limit.
var errTooLarge = errors.New("frame too large")

// readLoop reads c's frames until the connection fails. A bad frame is
// dropped and logged and reading goes on (BUS.md §3, MSG-1 §6.1).
func (s *Server) readLoop(c *client) error {
	for {
		kind, r, err := c.conn.NextReader()
		if err != nil {
			return err
		}
		if err := s.readFrame(c, kind, r); err != nil {
			return err
		}
	}
}

// readFrame consumes one frame and publishes it when valid. It returns an
// error only when the connection failed. Frames are read through a limit
// rather than gorilla's SetReadLimit, which closes the connection.
func (s *Server) readFrame(c *client, kind int, r io.Reader) error {
	if kind != websocket.TextMessage {
		n, err := io.Copy(io.Discard, r)
		if err == nil {
			s.log.Warn("websocket bus dropped a binary frame", "remote", c.remote, "who", c.id, "bytes", n)
		}
		return err
	}
	frame, held, err := s.readText(c, r)
	defer s.budget.release(held)
	if errors.Is(err, errTooLarge) {
		s.log.Warn("websocket bus refused a frame: "+err.Error()+"; the connection stays up", "remote", c.remote, "who", c.id)
		return nil
	}
	if err != nil {
		return err
	}
	s.publish(c, frame)
	return nil
}

// readText reads a whole text frame of at most c.maxFrame bytes. The first
// SmallFrame bytes are read freely; a frame that goes on waits for
// c.maxFrame bytes of the frame budget first, and held says how many it
// took (the caller releases them once the frame is published). A longer
// frame is discarded to its end, so the connection stays in step, and
// errTooLarge says which limit it broke.
func (s *Server) readText(c *client, r io.Reader) (frame []byte, held int, err error) {
	small := min(SmallFrame, c.maxFrame)
	head, err := io.ReadAll(io.LimitReader(r, int64(small)+1))
	if err != nil || len(head) <= small {
		return head, 0, err
	}
	if len(head) <= c.maxFrame { // more to come within the limit: take budget
		if err := s.budget.acquire(s.ctx, c.maxFrame); err != nil {
			return nil, 0, fmt.Errorf("wait for the frame budget: %w", err)
		}
		held = c.maxFrame
	}
	buf := bytes.NewBuffer(head)
	n, err := buf.ReadFrom(io.LimitReader(r, int64(c.maxFrame+1-buf.Len())))
	if err != nil {
		return nil, held, err
	}
	if buf.Len() <= c.maxFrame {
		return buf.Bytes(), held, nil
	}
	rest, err := io.Copy(io.Discard, r)
	if err != nil {
		return nil, held, err
	}
	size := int64(len(head)) + n + rest
	return nil, held, fmt.Errorf("%w: %d bytes, over %s", errTooLarge, size, s.limitName(c))
}

// limitName says which setting a client's frame limit comes from.
func (s *Server) limitName(c *client) string {
	if c.id.skill != "" {
		return fmt.Sprintf("a skill's limit of %d bytes (the broker's cap on a skill's bus payload)", c.maxFrame)
	}
	return fmt.Sprintf("websocket.max_msg_size (%d bytes)", c.maxFrame)
}

// publish validates frame and publishes it on the device's bus as sent, the
// way ovos-messagebus relays the raw string (ovos-behaviour §3.3): topic
// bus/<type>, QoS 1, not retained, JSON content type, a message expiry
// (BUS.md §2). A services frame goes out on the device's transport, after
// OnServicesFrame has seen it; a skill's on the skill's own, where the
// broker's skill policy refuses what it would refuse on MQTT. The sender
// gets its echo from the subscription, not here. A frame that fails is
// dropped and logged; the connection stays up.
func (s *Server) publish(c *client, frame []byte) {
	m, p, err := s.packet(frame)
	if errors.Is(err, errTooLarge) {
		s.log.Warn("websocket bus refused a frame: "+err.Error()+"; the connection stays up", "remote", c.remote, "who", c.id)
		return
	}
	if err != nil {
		s.log.Warn("websocket bus dropped a frame", "remote", c.remote, "who", c.id, "err", err)
		return
	}
	tr := bus.Transport(c.tr)
	if c.tr == nil {
		tr = s.cfg.Transport
		if s.cfg.OnServicesFrame != nil {
			s.cfg.OnServicesFrame(m)
		}
	}
	ctx, cancel := context.WithTimeout(s.ctx, publishTimeout)
	defer cancel()
	if err := tr.Publish(ctx, p); err != nil {
		s.log.Warn("websocket bus message not published", "remote", c.remote, "who", c.id, "topic", p.Topic, "err", err)
		return
	}
	if c.tr != nil && s.cfg.OnSkillFrame != nil {
		s.cfg.OnSkillFrame(c.id.skill, m)
	}
}

// packet validates frame (envelope.Decode: JSON object, type a valid topic
// level, …) and builds its MQTT packet, refusing one the broker's maximum
// packet size could not carry.
func (s *Server) packet(frame []byte) (envelope.Message, bus.Packet, error) {
	if n := len(frame) + publishOverhead; n > s.cfg.MaxPacket { // no topic could fit: refuse before decoding
		return envelope.Message{}, bus.Packet{}, fmt.Errorf("%w: a frame of %d bytes needs an MQTT packet of over %d bytes, over the broker's maximum packet size of %d (raise broker.max_packet_size on the gateway)",
			errTooLarge, len(frame), n, s.cfg.MaxPacket)
	}
	m, err := envelope.Decode(frame)
	if err != nil {
		return m, bus.Packet{}, err
	}
	t, err := topic.Bus(s.cfg.Device, m.Type)
	if err != nil {
		return m, bus.Packet{}, err
	}
	if n := len(t) + len(frame) + publishOverhead; n > s.cfg.MaxPacket {
		return m, bus.Packet{}, fmt.Errorf("%w: message %q of %d bytes needs an MQTT packet of about %d bytes, over the broker's maximum packet size of %d (raise broker.max_packet_size on the gateway)",
			errTooLarge, m.Type, len(frame), n, s.cfg.MaxPacket)
	}
	return m, bus.Packet{
		Topic:         t,
		Payload:       frame,
		QoS:           1,
		ContentType:   contentType,
		MessageExpiry: s.expiry,
	}, nil
}
