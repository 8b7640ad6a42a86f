package bus_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/envelope/envelopetest"
	"github.com/chorus-edge/chorus/gateway/topic"
)

type transportKind string

const (
	viaMQTT   transportKind = "mqtt"
	viaInline transportKind = "inline"
	viaDirect transportKind = "direct" // bus.Direct: handlers on the publisher's goroutine
)

func (e *env) transport(t *testing.T, k transportKind) bus.Transport {
	t.Helper()
	switch k {
	case viaInline:
		return e.inline(t)
	case viaDirect:
		return bus.Direct(e.b)
	}
	return e.dialDevice(t, nil)
}

func TestEmitOnRoundTrip(t *testing.T) {
	cases := []struct {
		name     string
		from, to transportKind
	}{
		{"mqtt to mqtt", viaMQTT, viaMQTT},
		{"inline to inline", viaInline, viaInline},
		{"inline to mqtt", viaInline, viaMQTT},
		{"mqtt to inline", viaMQTT, viaInline},
		{"direct to mqtt", viaDirect, viaMQTT},
		{"mqtt to direct", viaMQTT, viaDirect},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			sender := newClient(t, e.transport(t, tc.from), bus.Config{})
			receiver := newClient(t, e.transport(t, tc.to), bus.Config{})
			speak := collect(t, receiver, "speak")
			anyCh := collect(t, receiver, "")

			want := envelope.New("speak", map[string]any{"utterance": "hello"}).
				WithContext(envelope.KeySource, "skills")
			emit(t, sender, envelope.New("other.type", nil))
			emit(t, sender, want)

			got := next(t, speak)
			if got.Device != dev || got.Topic != "chorus/v1/kitchen/bus/speak" {
				t.Errorf("delivery device %q topic %q", got.Device, got.Topic)
			}
			if g, w := encode(t, got.Message), encode(t, want); g != w {
				t.Errorf("message:\n got %s\nwant %s", g, w)
			}
			for _, wantType := range []string{"other.type", "speak"} { // FIFO per publisher
				if d := next(t, anyCh); d.Message.Type != wantType {
					t.Errorf("OnAny got %q, want %q", d.Message.Type, wantType)
				}
			}
		})
	}
}

// TestEmitWireProperties checks BUS.md §2 on the wire, as a plain MQTT 5
// client sees it.
func TestEmitWireProperties(t *testing.T) {
	for _, k := range []transportKind{viaMQTT, viaInline} {
		t.Run(string(k), func(t *testing.T) {
			e := newEnv(t)
			raw := brokertest.MustConnect(t, e.b.Addr(), e.operator.Username, e.opSecret, brokertest.ConnectOptions{ClientID: "raw"})
			raw.Sub(t, "chorus/v1/+/bus/#")
			c := newClient(t, e.transport(t, k), bus.Config{Expiry: 90 * time.Second})
			emit(t, c, envelope.New("speak", nil))
			p := raw.Expect(t, "chorus/v1/kitchen/bus/speak", wait)
			if p.QoS != 1 || p.Retain {
				t.Errorf("qos %d retain %v, want 1 false", p.QoS, p.Retain)
			}
			if p.Properties == nil || p.Properties.ContentType != "application/json" {
				t.Fatalf("properties %+v: want content type application/json", p.Properties)
			}
			if e := p.Properties.MessageExpiry; e == nil || *e == 0 || *e > 90 {
				t.Errorf("message expiry %v, want 1..90 s", e)
			}
			if string(p.Payload) != `{"type":"speak","data":{},"context":{}}` {
				t.Errorf("payload %s", p.Payload)
			}
		})
	}
}

func TestEmitRefusesBadInput(t *testing.T) {
	e := newEnv(t)
	c := newClient(t, e.inline(t), bus.Config{})
	cases := []struct {
		name string
		m    envelope.Message
	}{
		{"slash in type", envelope.New("a/b", nil)},
		{"wildcard in type", envelope.New("a+", nil)},
		{"empty type", envelope.New("", nil)},
		{"bad number", envelope.New("x", map[string]any{"n": func() {}})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.Emit(context.Background(), tc.m); err == nil {
				t.Fatal("Emit succeeded, want an error")
			}
		})
	}
	if _, err := bus.New(bus.Config{Transport: e.inline(t), Device: "bad/id"}); err == nil {
		t.Error("New with device bad/id succeeded")
	}
}

// TestMalformedDropped publishes every malformed wire fixture raw on the bus,
// then a valid message: the malformed ones reach no handler, nothing
// disconnects, and the valid one still arrives.
func TestMalformedDropped(t *testing.T) {
	for _, k := range []transportKind{viaMQTT, viaInline} {
		t.Run(string(k), func(t *testing.T) {
			e := newEnv(t)
			var connects atomic.Int32
			var tr bus.Transport = e.inline(t)
			if k == viaMQTT {
				tr = e.dialDevice(t, &connects)
			}
			c := newClient(t, tr, bus.Config{})
			anyCh := collect(t, c, "")
			typed := collect(t, c, "test.malformed")

			raw := brokertest.MustConnect(t, e.b.Addr(), dev, e.device.Secret, brokertest.ConnectOptions{ClientID: "raw"})
			name := "chorus/v1/kitchen/bus/test.malformed"
			var want uint64
			for _, f := range envelopetest.Fixtures(t) {
				if f.OK() {
					continue
				}
				rc := raw.Pub(t, name, f.Raw, false)
				if rc == 0x99 {
					continue // the broker itself refuses JSON nested too deep (payload format invalid)
				}
				if rc >= 0x80 {
					t.Fatalf("fixture %s: puback 0x%02x", f.Name, rc)
				}
				want += 2 // seen by both handlers
			}
			// A valid message whose type is not the topic's level.
			raw.Pub(t, name, []byte(`{"type":"speak"}`), false)
			want += 2
			// A retained bus message (only the inline client can publish one).
			if err := e.b.Publish(broker.Message{Topic: name, Payload: []byte(`{"type":"test.malformed"}`), QoS: 1, Retain: true}); err != nil {
				t.Fatal(err)
			}
			raw.Pub(t, name, []byte(`{"type":"test.malformed","data":{"ok":true}}`), false)

			for _, ch := range []<-chan bus.Delivery{anyCh, typed} {
				d := next(t, ch)
				if d.Message.Data["ok"] != true {
					t.Errorf("first delivery %s, want the valid message", encode(t, d.Message))
				}
			}
			if got := c.Stats().Malformed; got != want {
				t.Errorf("malformed count %d, want %d", got, want)
			}
			if k == viaMQTT && connects.Load() != 1 {
				t.Errorf("%d connections, want 1 (no disconnect)", connects.Load())
			}
			// A late subscriber is not replayed the retained message.
			late := collect(t, c, "")
			emit(t, c, envelope.New("after", nil))
			if d := next(t, late); d.Message.Type != "after" {
				t.Errorf("late subscriber got %s first", d.Message.Type)
			}
		})
	}
}

// TestConcurrentRequests answers two concurrent requests for the same type in
// the reverse order: each asker must get its own reply.
func TestConcurrentRequests(t *testing.T) {
	for _, k := range []transportKind{viaMQTT, viaInline} {
		t.Run(string(k), func(t *testing.T) {
			e := newEnv(t)
			responder := newClient(t, e.transport(t, k), bus.Config{})
			asked := collect(t, responder, "q.ask")
			askers := []*bus.Client{
				newClient(t, e.transport(t, k), bus.Config{}),
				newClient(t, e.transport(t, k), bus.Config{}),
			}
			type result struct {
				n   int
				d   bus.Delivery
				err error
			}
			results := make(chan result, len(askers))
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			for i, a := range askers {
				go func() {
					d, err := a.Request(ctx, envelope.New("q.ask", map[string]any{"n": i}), "")
					results <- result{i, d, err}
				}()
			}
			reqs := []bus.Delivery{next(t, asked), next(t, asked)}
			for i := len(reqs) - 1; i >= 0; i-- {
				if len(reqs[i].CorrelationData) != 16 {
					t.Fatalf("request correlation data %x, want 16 bytes", reqs[i].CorrelationData)
				}
				resp, err := reqs[i].Message.Response(map[string]any{"n": reqs[i].Message.Data["n"]})
				if err != nil {
					t.Fatal(err)
				}
				if err := responder.Reply(ctx, reqs[i], resp); err != nil {
					t.Fatal(err)
				}
			}
			for range askers {
				r := <-results
				if r.err != nil {
					t.Fatalf("request %d: %v", r.n, r.err)
				}
				if got := fmt.Sprint(r.d.Message.Data["n"]); got != fmt.Sprint(r.n) {
					t.Errorf("request %d got the reply for %s", r.n, got)
				}
				if r.d.Message.Type != "q.ask.response" {
					t.Errorf("reply type %q", r.d.Message.Type)
				}
			}
		})
	}
}

// TestRequestPlainReply: a plain OVOS client replies without correlation
// data; the reply is matched by type alone.
func TestRequestPlainReply(t *testing.T) {
	e := newEnv(t)
	c := newClient(t, e.dialDevice(t, nil), bus.Config{})
	plain := brokertest.MustConnect(t, e.b.Addr(), dev, e.device.Secret, brokertest.ConnectOptions{ClientID: "ovos"})
	plain.Sub(t, "chorus/v1/kitchen/bus/mycroft.skills.list")
	go func() {
		p, ok := plain.Next(wait)
		if !ok || p.Topic != "chorus/v1/kitchen/bus/mycroft.skills.list" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_, _ = plain.Publish(ctx, &paho.Publish{Topic: "chorus/v1/kitchen/bus/skills.listed", QoS: 1,
			Payload: []byte(`{"type":"skills.listed","data":{"skills":["hello.chorus"]}}`)})
	}()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	d, err := c.Request(ctx, envelope.New("mycroft.skills.list", nil), "skills.listed")
	if err != nil {
		t.Fatal(err)
	}
	if d.Message.Type != "skills.listed" || len(d.CorrelationData) != 0 {
		t.Errorf("reply %s corr %x", encode(t, d.Message), d.CorrelationData)
	}
}

func TestRequestTimeout(t *testing.T) {
	e := newEnv(t)
	c := newClient(t, e.inline(t), bus.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Request(ctx, envelope.New("nobody.home", nil), "")
	if !errors.Is(err, bus.ErrNoReply) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrNoReply and DeadlineExceeded", err)
	}
	if want := "no reply of type nobody.home.response from device kitchen"; !strings.Contains(err.Error(), want) {
		t.Errorf("err %q does not say %q", err, want)
	}
	if _, err := c.Request(context.Background(), envelope.New("x", nil), "x"); err == nil {
		t.Error("a request whose reply type is its own type succeeded")
	}
}

// TestHandlerIsolation: a panicking handler and a blocked one do not stop a
// third from getting every message in order.
func TestHandlerIsolation(t *testing.T) {
	for _, k := range []transportKind{viaMQTT, viaInline} {
		t.Run(string(k), func(t *testing.T) {
			e := newEnv(t)
			c := newClient(t, e.transport(t, k), bus.Config{QueueSize: 4})
			if _, err := c.On("tick", func(context.Context, bus.Delivery) { panic("boom") }); err != nil {
				t.Fatal(err)
			}
			blocked := make(chan struct{})
			if _, err := c.On("tick", func(ctx context.Context, _ bus.Delivery) {
				select {
				case <-ctx.Done():
				case <-blocked:
				}
			}); err != nil {
				t.Fatal(err)
			}
			defer close(blocked)
			ok := collect(t, c, "tick")
			sender := newClient(t, e.transport(t, k), bus.Config{})
			const n = 20
			for i := range n {
				emit(t, sender, envelope.New("tick", map[string]any{"i": i}))
				if got := fmt.Sprint(next(t, ok).Message.Data["i"]); got != fmt.Sprint(i) {
					t.Fatalf("delivery %d has i=%s", i, got)
				}
			}
			// The blocked handler holds one message and queues 4: the rest drop.
			eventually(t, wait, "panics and drops counted", func() bool {
				s := c.Stats()
				return s.Panics >= 1 && s.Dropped >= n-5
			})
		})
	}
}

func TestOff(t *testing.T) {
	for _, k := range []transportKind{viaMQTT, viaInline} {
		t.Run(string(k), func(t *testing.T) {
			e := newEnv(t)
			c := newClient(t, e.transport(t, k), bus.Config{})
			first := make(chan bus.Delivery, 10)
			off, err := c.On("speak", func(_ context.Context, d bus.Delivery) { first <- d })
			if err != nil {
				t.Fatal(err)
			}
			second := collect(t, c, "speak")
			off()
			off() // idempotent
			emit(t, c, envelope.New("speak", nil))
			next(t, second)
			select {
			case d := <-first:
				t.Errorf("removed handler got %s", d.Message.Type)
			default:
			}
		})
	}
}

func TestCloseClient(t *testing.T) {
	e := newEnv(t)
	c := newClient(t, e.inline(t), bus.Config{})
	collect(t, c, "")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Emit(context.Background(), envelope.New("x", nil)); !errors.Is(err, bus.ErrClosed) {
		t.Errorf("Emit after Close: %v, want ErrClosed", err)
	}
	if _, err := c.On("x", func(context.Context, bus.Delivery) {}); !errors.Is(err, bus.ErrClosed) {
		t.Errorf("On after Close: %v, want ErrClosed", err)
	}
}

func TestParseDelivery(t *testing.T) {
	name, err := topic.Bus(dev, "speak")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		p       bus.Packet
		wantErr error
	}{
		{"ok", bus.Packet{Topic: name, Payload: []byte(`{"type":"speak"}`), CorrelationData: []byte{1}}, nil},
		{"not bus", bus.Packet{Topic: "chorus/v1/kitchen/birth", Payload: []byte(`{"type":"speak"}`)}, bus.ErrNotBus},
		{"outside tree", bus.Packet{Topic: "x/y", Payload: []byte(`{"type":"speak"}`)}, bus.ErrNotBus},
		{"retained", bus.Packet{Topic: name, Payload: []byte(`{"type":"speak"}`), Retain: true}, bus.ErrRetained},
		{"type mismatch", bus.Packet{Topic: name, Payload: []byte(`{"type":"other"}`)}, bus.ErrTypeMismatch},
		{"not json", bus.Packet{Topic: name, Payload: []byte(`nope`)}, envelope.ErrNotJSON},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := bus.ParseDelivery(tc.p)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err == nil && (d.Device != dev || d.Message.Type != "speak" || string(d.CorrelationData) != "\x01") {
				t.Errorf("delivery %+v", d)
			}
		})
	}
}
