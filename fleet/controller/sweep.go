package controller

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// sweepRemoved clears the retained topics the controller itself publishes
// for a device (its Home Assistant discovery config, its skills' update
// states, its desired document) when the device is not in the registry: the
// clears of a removal are re-derived from the registry at start, so a crash
// right after `device rm` leaves no ghost (issue 16 §7). The device's own
// state topics are cleared by the inbox (clearStale) when the subscriptions
// deliver them retained, which Start does after this: Home Assistant sees
// its config go before the availability topic it names.
//
// The embedded broker hands a new subscription its retained messages before
// Subscribe returns; an external broker sends them after its SUBACK, so
// with SweepWait set the subscriptions stay for that long and what arrives
// meanwhile is swept by a goroutine.
func (c *Controller) sweepRemoved(ctx context.Context) error {
	filters := []string{topic.AllSkillUpdate, topic.AllDesired}
	if !c.ha.cfg.Disabled {
		filters = append([]string{c.ha.cfg.Prefix + "/device/+/config"}, filters...)
	}
	sw := &sweeper{wake: make(chan struct{}, 1)}
	var unsubs []func()
	for _, f := range filters {
		u, err := c.cfg.Broker.Subscribe(f, sw.put)
		if err != nil {
			for _, u := range unsubs {
				u()
			}
			return err
		}
		unsubs = append(unsubs, u)
	}
	c.sweep(ctx, sw.take())
	if c.cfg.SweepWait <= 0 {
		for _, u := range unsubs {
			u()
		}
		return nil
	}
	c.goRun(func() {
		defer func() {
			for _, u := range unsubs {
				u()
			}
		}()
		end := time.NewTimer(c.cfg.SweepWait)
		defer end.Stop()
		for {
			select {
			case <-c.ctx.Done():
				return
			case <-end.C:
				c.sweep(c.ctx, sw.take())
				return
			case <-sw.wake:
				c.sweep(c.ctx, sw.take())
			}
		}
	})
	return nil
}

// sweeper collects the sweep subscriptions' retained messages; the broker
// handlers only append.
type sweeper struct {
	wake chan struct{} // signalled after an append

	mu   sync.Mutex // guards msgs
	msgs []broker.Message
}

func (s *sweeper) put(m broker.Message) {
	if len(m.Payload) == 0 {
		return // already clear
	}
	s.mu.Lock()
	s.msgs = append(s.msgs, broker.Message{Topic: m.Topic})
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *sweeper) take() []broker.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.msgs
	s.msgs = nil
	return out
}

// sweep clears each message's topic whose device is not in the registry
// (and not a device of LocalAccounts), in the order received.
func (c *Controller) sweep(ctx context.Context, msgs []broker.Message) {
	known := map[string]bool{}
	for _, m := range msgs {
		dev, ok := c.sweptDevice(m.Topic)
		if !ok || c.local[dev] {
			continue
		}
		in, seen := known[dev]
		if !seen {
			_, err := c.store.GetDevice(ctx, dev)
			if err != nil && fleet.ErrorCode(err) != fleet.ENOTFOUND {
				c.log.Warn("start-up sweep: look up device", "device", dev, "error", err)
				continue
			}
			in = err == nil
			known[dev] = in
		}
		if in {
			continue
		}
		c.log.Info("clearing a retained topic of a removed device", "topic", m.Topic, "device", dev)
		if err := c.cfg.Broker.Publish(broker.Message{Topic: m.Topic, QoS: 1, Retain: true}); err != nil {
			c.log.Warn("clear retained topic", "topic", m.Topic, "error", err)
		}
	}
}

// sweptDevice is the device a swept topic belongs to: a Home Assistant
// device config's object id (chorus_<HAEscape(id)>, never the gateway's
// own), or the device level of a chorus/v1 topic.
func (c *Controller) sweptDevice(t string) (string, bool) {
	if rest, ok := strings.CutPrefix(t, c.ha.cfg.Prefix+"/device/chorus_"); ok {
		esc, ok := strings.CutSuffix(rest, "/config")
		if !ok {
			return "", false
		}
		dev, err := topic.HAUnescape(esc)
		if err != nil || dev == topic.ReservedDevice || topic.ValidDeviceID(dev) != nil {
			return "", false
		}
		return dev, true
	}
	p, err := topic.Parse(t)
	if err != nil || p.Device == topic.ReservedDevice {
		return "", false
	}
	return p.Device, true
}
