package bus

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// ErrNoReply is returned by Request when ctx ends before a reply arrives; the
// error also wraps ctx's error.
var ErrNoReply = errors.New("no reply")

// correlationLen is the size of the random MQTT 5 correlation data.
const correlationLen = 16

// Request emits m and waits, until ctx ends, for its reply: the first message
// of type replyType (default m.Type + ".response") on the device's bus that
// carries the request's correlation data, or none at all (a plain OVOS
// client's reply, matched by type alone as OVOS does; BUS.md §2). It
// subscribes before it publishes, so a fast reply is never missed, and
// concurrent requests for the same type never take each other's replies when
// the replies carry correlation data.
func (c *Client) Request(ctx context.Context, m envelope.Message, replyType string) (Delivery, error) {
	if replyType == "" {
		replyType = m.Type + ".response"
	}
	if replyType == m.Type {
		return Delivery{}, fmt.Errorf("request %q: the reply type must differ from the request's, or the request answers itself", m.Type)
	}
	replyTopic, err := topic.Bus(c.dev, replyType)
	if err != nil {
		return Delivery{}, fmt.Errorf("request %q: %w", m.Type, err)
	}
	corr := make([]byte, correlationLen)
	if _, err := rand.Read(corr); err != nil {
		return Delivery{}, fmt.Errorf("request %q: correlation data: %w", m.Type, err)
	}
	replies := make(chan Packet, 16)
	unsub, err := c.tr.Subscribe(ctx, replyTopic, func(p Packet) {
		if p.Retain || len(p.CorrelationData) > 0 && !bytes.Equal(p.CorrelationData, corr) {
			return
		}
		select {
		case replies <- p:
		default: // the asker has enough candidates queued
		}
	})
	if err != nil {
		return Delivery{}, fmt.Errorf("request %q: %w", m.Type, err)
	}
	defer unsub()
	if err := c.emit(ctx, m, corr, replyTopic); err != nil {
		return Delivery{}, fmt.Errorf("request: %w", err)
	}
	return c.awaitReply(ctx, replies, replyType)
}

func (c *Client) awaitReply(ctx context.Context, replies <-chan Packet, replyType string) (Delivery, error) {
	for {
		select {
		case p := <-replies:
			d, err := ParseDelivery(p)
			if err != nil {
				c.stats.malformed.Add(1)
				c.log.Warn("bus: malformed reply dropped", "topic", p.Topic, "err", err)
				continue
			}
			return d, nil
		case <-ctx.Done():
			return Delivery{}, fmt.Errorf("%w of type %s from device %s: %w", ErrNoReply, replyType, c.dev, ctx.Err())
		case <-c.ctx.Done():
			return Delivery{}, fmt.Errorf("request: %w", ErrClosed)
		}
	}
}
