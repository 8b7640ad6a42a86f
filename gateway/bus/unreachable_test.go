package bus_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// syncBuffer is a log sink safe for the transport's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// freeAddr is a loopback address nobody listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// A broker that cannot be reached is said at WARN, with its address and the
// error, at the first failed attempt and then at most once per
// UnreachableLogEvery (issue 16, point 6).
func TestUnreachableBrokerIsLoggedRateLimited(t *testing.T) {
	addr := freeAddr(t)
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := bus.DialMQTT(ctx, bus.MQTTConfig{URL: "mqtt://" + addr, UnreachableLogEvery: time.Hour,
			Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
		done <- err
	}()
	poll.Until(t, "the first failure logged", 20*time.Second, func() bool {
		return strings.Contains(logs.String(), "cannot reach the MQTT broker")
	})
	line := logs.String()
	for _, want := range []string{"level=WARN", "broker=mqtt://" + addr, "connection refused", "attempts=1"} {
		if !strings.Contains(line, want) {
			t.Errorf("log %q does not say %q", line, want)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("DialMQTT = %v, want the last attempt's error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("DialMQTT did not return after its context ended")
	}
}

// A broker that closes every connection: three more attempts, still one line.
func TestUnreachableBrokerRetriesWithoutMoreLines(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	accepts := 0
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			accepts++
			mu.Unlock()
			c.Close()
		}
	}()
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_, _ = bus.DialMQTT(ctx, bus.MQTTConfig{URL: "mqtt://" + ln.Addr().String(), UnreachableLogEvery: time.Hour,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	}()
	poll.Until(t, "three attempts", 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return accepts >= 3
	})
	poll.Until(t, "the first line", 20*time.Second, func() bool { return strings.Contains(logs.String(), "cannot reach") })
	if n := strings.Count(logs.String(), "cannot reach"); n != 1 {
		t.Errorf("%d lines for 3 attempts within the hour, want 1:\n%s", n, logs.String())
	}
}

func TestUnreachableBrokerIsLoggedAgainAfterTheInterval(t *testing.T) {
	addr := freeAddr(t)
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_, _ = bus.DialMQTT(ctx, bus.MQTTConfig{URL: "mqtt://" + addr, UnreachableLogEvery: 100 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	}()
	poll.Until(t, "a second line with more attempts", 20*time.Second, func() bool {
		return strings.Count(logs.String(), "cannot reach the MQTT broker") >= 2
	})
}

// After Drain, a publish without a connection fails at once instead of
// waiting for the broker; with a connection it is sent as before.
func TestDrainStopsWaitingForTheBroker(t *testing.T) {
	e := newEnv(t)
	var logs syncBuffer
	dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer dcancel()
	m, err := bus.DialMQTT(dctx, bus.MQTTConfig{URL: e.url(), Username: dev, Password: e.device.Secret,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	m.Drain()
	for i := range 200 { // each publish once raced the drain's cancellation
		if err := m.Publish(context.Background(), bus.Packet{Topic: "chorus/v1/kitchen/bus/x", QoS: 1}); err != nil {
			t.Fatalf("publish %d over a live connection after Drain: %v", i, err)
		}
	}
	if err := e.b.Close(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the transport sees the loss", 20*time.Second, func() bool {
		return strings.Contains(logs.String(), "mqtt connection lost")
	})
	// Right at the loss paho may still hand a publish to the dead
	// connection (an error of its own); once it knows, a drained publish
	// fails at once with ErrNotConnected instead of waiting for the broker.
	poll.Until(t, "ErrNotConnected", 20*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := m.Publish(ctx, bus.Packet{Topic: "chorus/v1/kitchen/bus/x", QoS: 1})
		return errors.Is(err, bus.ErrNotConnected)
	})
}
