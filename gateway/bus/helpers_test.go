package bus_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/poll"
)

const (
	dev  = "kitchen"
	wait = 5 * time.Second
)

// env is a broker with one device and one operator account.
type env struct {
	b        *broker.Broker
	device   brokertest.Device
	operator broker.Account
	opSecret string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{device: brokertest.NewDevice(t, dev)}
	e.operator, e.opSecret = brokertest.NewOperator(t, "ops")
	// Several clients share the device's account here: connection and
	// rate limits are the broker's tests' business.
	e.b = brokertest.Start(t, brokertest.Unlimited(), e.accounts()...)
	return e
}

func (e *env) accounts() []broker.Account { return []broker.Account{e.device.Account, e.operator} }

// restart closes the broker and starts a new one on the same address with
// the same accounts.
func (e *env) restart(t *testing.T) {
	t.Helper()
	addr := e.b.Addr()
	if err := e.b.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := brokertest.Unlimited()
	cfg.MQTTListen = addr
	e.b = brokertest.Start(t, cfg, e.accounts()...)
}

func (e *env) url() string { return "mqtt://" + e.b.Addr() }

// dialDevice connects as the device's agent; connects counts OnConnect calls.
func (e *env) dialDevice(t *testing.T, connects *atomic.Int32) *bus.MQTT {
	t.Helper()
	return dial(t, bus.MQTTConfig{URL: e.url(), Username: dev, Password: e.device.Secret}, connects)
}

func (e *env) dialOperator(t *testing.T) *bus.MQTT {
	t.Helper()
	return dial(t, bus.MQTTConfig{URL: e.url(), Username: e.operator.Username, Password: e.opSecret}, nil)
}

func dial(t *testing.T, cfg bus.MQTTConfig, connects *atomic.Int32) *bus.MQTT {
	t.Helper()
	if connects != nil {
		cfg.OnConnect = func(context.Context) { connects.Add(1) }
	}
	cfg.Logger = brokertest.Logger(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	m, err := bus.DialMQTT(ctx, cfg)
	if err != nil {
		t.Fatalf("dial %s: %v", cfg.URL, err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func (e *env) inline(t *testing.T) *bus.InlineTransport {
	t.Helper()
	tr := bus.Inline(e.b)
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

func newClient(t *testing.T, tr bus.Transport, cfg bus.Config) *bus.Client {
	t.Helper()
	cfg.Transport = tr
	if cfg.Device == "" {
		cfg.Device = dev
	}
	if cfg.Logger == nil {
		cfg.Logger = brokertest.Logger(t)
	}
	c, err := bus.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// collect registers a handler for msgType ("" = any) that sends each
// delivery to the returned channel.
func collect(t *testing.T, c *bus.Client, msgType string) <-chan bus.Delivery {
	t.Helper()
	ch := make(chan bus.Delivery, 100)
	h := func(_ context.Context, d bus.Delivery) { ch <- d }
	var err error
	if msgType == "" {
		_, err = c.OnAny(h)
	} else {
		_, err = c.On(msgType, h)
	}
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func next(t *testing.T, ch <-chan bus.Delivery) bus.Delivery {
	t.Helper()
	select {
	case d := <-ch:
		return d
	case <-time.After(wait):
		t.Fatalf("no delivery within %s", wait)
		return bus.Delivery{}
	}
}

func emit(t *testing.T, c *bus.Client, m envelope.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := c.Emit(ctx, m); err != nil {
		t.Fatalf("emit %s: %v", m.Type, err)
	}
}

func encode(t *testing.T, m envelope.Message) string {
	t.Helper()
	b, err := envelope.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// goroutinesSettle waits until no more than base goroutines run.
func goroutinesSettle(t *testing.T, base int) {
	t.Helper()
	err := poll.Wait(context.Background(), fmt.Sprintf("goroutines down to %d", base), wait, func() bool {
		return runtime.NumGoroutine() <= base
	})
	if err != nil {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Fatalf("%v: %d running\n%s", err, runtime.NumGoroutine(), buf[:n])
	}
}
