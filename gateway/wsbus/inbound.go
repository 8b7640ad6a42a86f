package wsbus

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/gorilla/websocket"

	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// errTooLarge marks a frame over MaxFrame.
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
			s.log.Warn("websocket bus dropped a binary frame", "remote", c.remote, "bytes", n)
		}
		return err
	}
	frame, err := readLimited(r, s.cfg.MaxFrame)
	if errors.Is(err, errTooLarge) {
		s.log.Warn("websocket bus dropped a frame", "remote", c.remote, "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	s.publish(c, frame)
	return nil
}

// readLimited reads a whole frame of at most max bytes. For a longer frame it
// discards the rest, so the connection stays in step, and returns errTooLarge.
func readLimited(r io.Reader, max int) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil || len(b) <= max {
		return b, err
	}
	n, err := io.Copy(io.Discard, r)
	if err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: %d bytes, over the limit of %d", errTooLarge, int64(len(b))+n, max)
}

// publish validates frame and publishes it on the device's bus as sent, the
// way ovos-messagebus relays the raw string (ovos-behaviour §3.3): topic
// bus/<type>, QoS 1, not retained, JSON content type, a message expiry
// (BUS.md §2). The sender gets its echo from the subscription, not here.
// A frame that fails is dropped and logged; the connection stays up.
func (s *Server) publish(c *client, frame []byte) {
	p, err := s.packet(frame)
	if err != nil {
		s.log.Warn("websocket bus dropped a frame", "remote", c.remote, "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, publishTimeout)
	defer cancel()
	if err := s.cfg.Transport.Publish(ctx, p); err != nil {
		s.log.Warn("websocket bus lost a message", "remote", c.remote, "topic", p.Topic, "err", err)
	}
}

// packet validates frame (envelope.Decode: JSON object, type a valid topic
// level, …) and builds its MQTT packet, refusing one the broker's maximum
// packet size could not carry.
func (s *Server) packet(frame []byte) (bus.Packet, error) {
	m, err := envelope.Decode(frame)
	if err != nil {
		return bus.Packet{}, err
	}
	t, err := topic.Bus(s.cfg.Device, m.Type)
	if err != nil {
		return bus.Packet{}, err
	}
	if n := len(t) + len(frame) + publishOverhead; n > s.cfg.MaxPacket {
		return bus.Packet{}, fmt.Errorf("%w: message %q needs an MQTT packet of about %d bytes, over the maximum of %d", errTooLarge, m.Type, n, s.cfg.MaxPacket)
	}
	return bus.Packet{
		Topic:         t,
		Payload:       frame,
		QoS:           1,
		ContentType:   contentType,
		MessageExpiry: s.expiry,
	}, nil
}
