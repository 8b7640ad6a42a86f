package bus_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/poll"
)

func TestDialRefused(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name, user, pass string
	}{
		{"wrong password", dev, "not-the-secret"},
		{"unknown user", "nobody", "x"},
		{"no credentials", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			m, err := bus.DialMQTT(ctx, bus.MQTTConfig{URL: e.url(), Username: tc.user, Password: tc.pass})
			if err == nil {
				_ = m.Close()
				t.Fatal("DialMQTT succeeded")
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("refusal took %s, want fail fast", d)
			}
			var ce *bus.ConnectError
			if !errors.As(err, &ce) || ce.Code != 0x86 {
				t.Errorf("err %v, want a *ConnectError with code 0x86", err)
			}
			if !strings.Contains(err.Error(), "bad username or password") {
				t.Errorf("err %q does not say bad username or password", err)
			}
		})
	}
}

func TestDialErrors(t *testing.T) {
	cases := []struct {
		name, url, want string
	}{
		{"bad scheme", "http://127.0.0.1:1", "scheme"},
		{"no host", "mqtt://", "no host"},
		{"nobody listening", "mqtt://127.0.0.1:1", "deadline exceeded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			_, err := bus.DialMQTT(ctx, bus.MQTTConfig{URL: tc.url})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestPublishRefusedByACL(t *testing.T) {
	e := newEnv(t)
	m := e.dialDevice(t, nil)
	err := m.Publish(context.Background(), bus.Packet{Topic: "chorus/v1/other/bus/speak", QoS: 1, Payload: []byte(`{"type":"speak"}`)})
	if err == nil || !strings.Contains(err.Error(), "not authorized") {
		t.Fatalf("err = %v, want not authorized", err)
	}
	_, err = m.Subscribe(context.Background(), "chorus/v1/other/#", func(bus.Packet) {})
	if err == nil || !strings.Contains(err.Error(), "not authorized") {
		t.Fatalf("subscribe err = %v, want not authorized", err)
	}
}

func TestOnConnect(t *testing.T) {
	e := newEnv(t)
	got := make(chan *bus.MQTT, 1)
	m := dial(t, bus.MQTTConfig{URL: e.url(), Username: dev, Password: e.device.Secret,
		OnConnect: func(ctx context.Context) { got <- bus.MQTTFromContext(ctx) }}, nil)
	select {
	case c := <-got:
		if c != m {
			t.Errorf("MQTTFromContext = %p, want %p", c, m)
		}
	default:
		t.Fatal("OnConnect not called before DialMQTT returned")
	}
}

// TestSubscriptionsSurviveBrokerRestart: the new broker has no session, so
// the transport must subscribe again by itself.
func TestSubscriptionsSurviveBrokerRestart(t *testing.T) {
	e := newEnv(t)
	var connects atomic.Int32
	c := newClient(t, e.dialDevice(t, &connects), bus.Config{})
	speak := collect(t, c, "speak")
	anyCh := collect(t, c, "")

	e.restart(t)
	poll.Until(t, "reconnect", 20*time.Second, func() bool { return connects.Load() >= 2 })

	raw := brokertest.MustConnect(t, e.b.Addr(), e.operator.Username, e.opSecret, brokertest.ConnectOptions{ClientID: "raw"})
	raw.Pub(t, "chorus/v1/kitchen/bus/speak", []byte(`{"type":"speak","data":{"after":"restart"}}`), false)
	for _, ch := range []<-chan bus.Delivery{speak, anyCh} {
		if d := next(t, ch); d.Message.Data["after"] != "restart" {
			t.Errorf("got %s", encode(t, d.Message))
		}
	}
	// Emit works on the new connection too.
	emit(t, c, envelope.New("speak", map[string]any{"n": 2}))
	if d := next(t, speak); d.Message.Data["n"] == nil {
		t.Errorf("got %s", encode(t, d.Message))
	}
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	e := newEnv(t)
	base := runtime.NumGoroutine()
	func() {
		m := e.dialDevice(t, nil)
		in := bus.Inline(e.b)
		for _, tr := range []bus.Transport{m, in} {
			c, err := bus.New(bus.Config{Transport: tr, Device: dev})
			if err != nil {
				t.Fatal(err)
			}
			ch := collect(t, c, "speak")
			emit(t, c, envelope.New("speak", nil))
			next(t, ch)
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			_, _ = c.Request(ctx, envelope.New("ping", nil), "")
			cancel()
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		}
		for _, closer := range []interface{ Close() error }{m, in, m, in} { // twice: idempotent
			if err := closer.Close(); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case <-m.Done():
		default:
			t.Error("Done not closed after Close")
		}
		if err := m.Publish(context.Background(), bus.Packet{Topic: "chorus/v1/kitchen/bus/x"}); !errors.Is(err, bus.ErrClosed) {
			t.Errorf("Publish after Close: %v, want ErrClosed", err)
		}
	}()
	goroutinesSettle(t, base)
}

func TestDialWebsocket(t *testing.T) {
	d := brokertest.NewDevice(t, dev)
	b := brokertest.Start(t, broker.Config{WSListen: "127.0.0.1:0"}, d.Account)
	m := dial(t, bus.MQTTConfig{URL: "ws://" + b.WSAddr() + broker.DefaultWSPath, Username: dev, Password: d.Secret}, nil)
	c := newClient(t, m, bus.Config{})
	ch := collect(t, c, "speak")
	emit(t, c, envelope.New("speak", nil))
	if got := next(t, ch); got.Message.Type != "speak" {
		t.Errorf("got %s", got.Message.Type)
	}
}
