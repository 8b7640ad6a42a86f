package bus

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"

	"github.com/chorus-edge/chorus/gateway/mqttmsg"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// Publish sends p and, for QoS > 0, waits for the broker's acknowledgement.
// While the connection is down it waits for the next one, as long as ctx
// allows. A broker refusal (PUBACK reason >= 0x80, e.g. not authorized by the
// ACL) is returned as an error naming the reason.
func (m *MQTT) Publish(ctx context.Context, p Packet) error {
	if err := topic.ValidName(p.Topic); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	pub := toPaho(p)
	for {
		if m.isClosed() {
			return fmt.Errorf("publish %s: %w", p.Topic, ErrClosed)
		}
		if err := m.awaitConnection(ctx); err != nil {
			return fmt.Errorf("publish %s: waiting for the connection: %w", p.Topic, err)
		}
		pctx, cancel := m.untilGone(ctx)
		resp, err := m.cm.Publish(pctx, pub)
		cancel()
		if errors.Is(err, autopaho.ConnectionDownError) {
			continue // dropped between AwaitConnection and Publish (paho.golang#247)
		}
		if err != nil && ctx.Err() == nil && m.gone.Err() != nil {
			return fmt.Errorf("publish %s: %w", p.Topic, ErrNotConnected)
		}
		if resp != nil && resp.ReasonCode >= 0x80 {
			return fmt.Errorf("publish %s: refused by the broker: %s", p.Topic, reasonName(resp.ReasonCode))
		}
		if err != nil {
			return fmt.Errorf("publish %s: %w", p.Topic, err)
		}
		return nil
	}
}

// untilGone is ctx, also ended once the connection is gone after Drain.
// paho waits for a SUBACK, UNSUBACK or PUBACK as long as its context allows,
// across a lost connection, since the session outlives it; while one waits
// it holds syncMu or its caller, and shutdown waited with it.
func (m *MQTT) untilGone(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(m.gone, cancel)
	return c, func() { stop(); cancel() }
}

// awaitConnection waits for a connection until ctx ends or Drain. Once
// drained it never waits: a connection that is up is used, and none is
// ErrNotConnected. (Waiting on a context already cancelled by the drain
// raced the connection's own readiness in paho's select, so a drained
// publish over a live connection failed at random: the agent's offline
// goodbye was lost now and then.)
func (m *MQTT) awaitConnection(ctx context.Context) error {
	if m.drain.Err() != nil {
		if !m.up.Load() {
			return ErrNotConnected
		}
		return nil // cm.Publish says ConnectionDownError if it dropped just now
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(m.drain, cancel)
	defer stop()
	err := m.cm.AwaitConnection(wctx)
	if err != nil && ctx.Err() == nil && m.drain.Err() != nil {
		return ErrNotConnected
	}
	return err
}

func toPaho(p Packet) *paho.Publish {
	props := &paho.PublishProperties{
		ContentType: p.ContentType, ResponseTopic: p.ResponseTopic,
		CorrelationData: p.CorrelationData, User: userProps(p.User),
	}
	if p.MessageExpiry > 0 {
		e := p.MessageExpiry
		props.MessageExpiry = &e
	}
	return &paho.Publish{Topic: p.Topic, Payload: p.Payload, QoS: p.QoS, Retain: p.Retain, Properties: props}
}

func userProps(u mqttmsg.UserProperties) paho.UserProperties {
	var out paho.UserProperties
	for _, p := range u {
		out = append(out, paho.UserProperty{Key: p.Key, Value: p.Value})
	}
	return out
}

// fromPaho copies what paho handed over: paho reuses nothing, but the
// delivery outlives the receive loop, so no slice is shared with it anyway.
func fromPaho(pb *paho.Publish) Packet {
	p := Packet{Topic: pb.Topic, Payload: pb.Payload, QoS: pb.QoS, Retain: pb.Retain}
	if pr := pb.Properties; pr != nil {
		p.ContentType, p.ResponseTopic, p.CorrelationData = pr.ContentType, pr.ResponseTopic, pr.CorrelationData
		if pr.MessageExpiry != nil {
			p.MessageExpiry = *pr.MessageExpiry
		}
		if len(pr.User) > 0 {
			p.User = make(mqttmsg.UserProperties, 0, len(pr.User))
			for _, u := range pr.User {
				p.User = append(p.User, mqttmsg.UserProperty{Key: u.Key, Value: u.Value})
			}
		}
	}
	return p
}

// onPublish runs on paho's routing goroutine: it only queues the delivery.
// The handlers are looked up when it is dispatched, so one removed meanwhile
// is not called.
func (m *MQTT) onPublish(pr paho.PublishReceived) (bool, error) {
	p := fromPaho(pr.Packet)
	m.disp.offer(func() { m.route(p) }, p.Topic)
	return true, nil
}

func (m *MQTT) route(p Packet) {
	for _, h := range m.handlersFor(p.Topic) {
		h(p)
	}
}

func (m *MQTT) handlersFor(name string) []func(Packet) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var hs []func(Packet)
	for f, byID := range m.subs {
		if topic.Match(f, name) {
			for _, h := range byID {
				hs = append(hs, h)
			}
		}
	}
	return hs
}

// Subscribe adds h for filter (QoS 1). The broker is asked once per distinct
// filter; a delivery goes to every handler whose filter matches. A refusal
// (SUBACK reason >= 0x80) is an error; while the connection is down the
// subscription is recorded and made on the next connection.
func (m *MQTT) Subscribe(ctx context.Context, filter string, h func(Packet)) (func(), error) {
	if err := topic.ValidFilter(filter); err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	id, err := m.add(filter, h)
	if err != nil {
		return nil, err
	}
	if err := m.ensure(ctx, filter); err != nil {
		m.remove(filter, id)
		return nil, err
	}
	return m.unsubscriber(filter, id), nil
}

func (m *MQTT) add(filter string, h func(Packet)) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, fmt.Errorf("subscribe %s: %w", filter, ErrClosed)
	}
	m.nextID++
	if m.subs[filter] == nil {
		m.subs[filter] = map[uint64]func(Packet){}
	}
	m.subs[filter][m.nextID] = h
	return m.nextID, nil
}

// remove deletes a handler and reports whether its filter has none left.
func (m *MQTT) remove(filter string, id uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.subs[filter], id)
	if len(m.subs[filter]) == 0 {
		delete(m.subs, filter)
		return true
	}
	return false
}

func (m *MQTT) wanted(filter string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.subs[filter]) > 0
}

func (m *MQTT) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// ensure makes the broker hold filter on the current connection.
func (m *MQTT) ensure(ctx context.Context, filter string) error {
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	if m.onBroker[filter] {
		return nil
	}
	sa, err := m.subscribeRetryingIDs(ctx, filter)
	switch {
	case sa != nil && len(sa.Reasons) > 0 && sa.Reasons[0] >= 0x80:
		return fmt.Errorf("subscribe %s: refused by the broker: %s", filter, reasonName(sa.Reasons[0]))
	case errors.Is(err, autopaho.ConnectionDownError):
		return nil // restore subscribes it on the next connection
	case err != nil:
		return fmt.Errorf("subscribe %s: %w", filter, err)
	}
	m.onBroker[filter] = true
	return nil
}

// codeIDInUse is SUBACK's "packet identifier in use".
const codeIDInUse = 0x91

// subscribeRetryingIDs subscribes, retrying a few times when the broker
// answers "packet identifier in use". mochi v2.7.9 checks a SUBSCRIBE's id
// against its own outbound in-flight publishes to the client, although the
// two sides number packets independently [MQTT-2.2.1]; the next attempt gets
// another id from paho, or the same one once the publish holding it is acked.
func (m *MQTT) subscribeRetryingIDs(ctx context.Context, filter string) (*paho.Suback, error) {
	for attempt := 0; ; attempt++ {
		sctx, cancel := m.untilGone(ctx)
		sa, err := m.cm.Subscribe(sctx, subscribePacket(filter))
		cancel()
		if err != nil || sa == nil || len(sa.Reasons) == 0 || sa.Reasons[0] != codeIDInUse || attempt == 4 {
			return sa, err
		}
		m.log.Debug("subscribe: packet id in use on the broker; retrying", "filter", filter)
		select { // the in-flight publish holding the id completes in moments
		case <-ctx.Done():
			return sa, err
		case <-time.After(time.Duration(attempt+1) * 20 * time.Millisecond):
		}
	}
}

// subscribePacket subscribes at QoS 1 with Retain As Published, so Packet.Retain
// means the same on every transport: published retained (the inline client
// sees the flag as published too), or replayed at subscribe [MQTT-3.3.1-9].
// That is how a retained message on a bus topic is told apart and ignored.
func subscribePacket(filters ...string) *paho.Subscribe {
	s := &paho.Subscribe{}
	for _, f := range filters {
		s.Subscriptions = append(s.Subscriptions, paho.SubscribeOptions{Topic: f, QoS: 1, RetainAsPublished: true})
	}
	return s
}

// unsubscriber returns the idempotent removal of one handler. The broker is
// told on a tracked goroutine (the caller may be a handler), and only if no
// handler wants the filter by then.
func (m *MQTT) unsubscriber(filter string, id uint64) func() {
	var once bool
	return func() {
		m.mu.Lock()
		if once || m.closed {
			once = true
			m.mu.Unlock()
			return
		}
		once = true
		m.wg.Add(1)
		m.mu.Unlock()
		if !m.remove(filter, id) {
			m.wg.Done()
			return
		}
		go m.release(filter)
	}
}

func (m *MQTT) release(filter string) {
	defer m.wg.Done()
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	if m.wanted(filter) || !m.onBroker[filter] {
		return
	}
	delete(m.onBroker, filter)
	tctx, cancel := context.WithTimeout(m.ctx, subscribeTimeout)
	defer cancel()
	ctx, stop := m.untilGone(tctx)
	defer stop()
	if _, err := m.cm.Unsubscribe(ctx, &paho.Unsubscribe{Topics: []string{filter}}); err != nil && m.ctx.Err() == nil {
		m.log.Debug("mqtt unsubscribe", "filter", filter, "err", err)
	}
}

// restore subscribes every wanted filter on a new connection, in one
// SUBSCRIBE. The broker may have kept the session, but Chorus does not rely
// on it (a broker restart or an expired session loses it).
func (m *MQTT) restore() {
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	m.onBroker = map[string]bool{}
	m.mu.Lock()
	filters := slices.Sorted(maps.Keys(m.subs))
	m.mu.Unlock()
	if len(filters) == 0 {
		return
	}
	tctx, cancel := context.WithTimeout(m.ctx, subscribeTimeout)
	defer cancel()
	ctx, stop := m.untilGone(tctx)
	defer stop()
	sa, err := m.cm.Subscribe(ctx, subscribePacket(filters...))
	if sa == nil {
		m.log.Warn("mqtt restore subscriptions", "err", err, "filters", len(filters))
		return // the connection is gone; the next one restores again
	}
	for i, f := range filters {
		if i < len(sa.Reasons) && sa.Reasons[i] < 0x80 {
			m.onBroker[f] = true
			continue
		}
		code := byte(0x80)
		if i < len(sa.Reasons) {
			code = sa.Reasons[i]
		}
		m.log.Warn("mqtt restore subscription refused", "filter", f, "reason", reasonName(code))
	}
}
