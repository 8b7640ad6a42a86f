package bus_test

import (
	"bufio"
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
	"github.com/mochi-mqtt/server/v2/packets"
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

// silentBroker accepts one MQTT connection, acknowledges its CONNECT and
// pings, reads up to the first packet of type want (packets.Publish, …)
// and acknowledges nothing more: the broker of a gateway that dies with that
// packet in flight. lose closes the connection and the listener, so
// reconnecting is refused.
type silentBroker struct {
	ln        net.Listener
	want      byte
	published chan struct{} // closed once the want packet was read
	conn      chan net.Conn
}

func newSilentBroker(t *testing.T, want byte) *silentBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &silentBroker{ln: ln, want: want, published: make(chan struct{}), conn: make(chan net.Conn, 1)}
	go b.serve()
	t.Cleanup(b.lose)
	return b
}

func (b *silentBroker) serve() {
	c, err := b.ln.Accept()
	if err != nil {
		return
	}
	b.conn <- c
	r := bufio.NewReader(c)
	for { // one packet at a time, framed by the fork's decoders
		b0, err := r.ReadByte()
		if err != nil {
			return
		}
		var fh packets.FixedHeader
		if err := fh.Decode(b0); err != nil {
			return
		}
		n, _, err := packets.DecodeLength(r)
		if err != nil {
			return
		}
		if _, err := r.Discard(n); err != nil {
			return
		}
		var reply []byte
		switch fh.Type {
		case b.want:
			close(b.published)
			return
		case packets.Connect: // CONNACK, MQTT 5: no session, success, no properties
			reply = []byte{packets.Connack << 4, 0x03, 0x00, 0x00, 0x00}
		case packets.Pingreq:
			reply = []byte{packets.Pingresp << 4, 0x00}
		}
		if _, err := c.Write(reply); err != nil {
			return
		}
	}
}

// dial connects a transport to the broker, closed when the test ends.
func (b *silentBroker) dial(t *testing.T, log *slog.Logger) *bus.MQTT {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := bus.DialMQTT(ctx, bus.MQTTConfig{URL: "mqtt://" + b.ln.Addr().String(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func (b *silentBroker) lose() {
	b.ln.Close()
	select {
	case c := <-b.conn:
		c.Close()
	default:
	}
}

// A QoS 1 publish still waiting for its PUBACK when the broker goes away
// gives up once the transport is drained, whichever comes first, instead of
// holding shutdown for the rest of its context (an agent took 10 s to stop
// after SIGTERM with its gateway killed, TestAgentBrokerUnreachableE2E).
func TestDrainEndsAPublishAwaitingItsAck(t *testing.T) {
	for _, drainFirst := range []bool{true, false} {
		name := map[bool]string{true: "drained then lost", false: "lost then drained"}[drainFirst]
		t.Run(name, func(t *testing.T) {
			b := newSilentBroker(t, packets.Publish)
			var logs syncBuffer
			m := b.dial(t, slog.New(slog.NewTextHandler(&logs, nil)))
			done := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				done <- m.Publish(ctx, bus.Packet{Topic: "chorus/v1/kitchen/availability", Payload: []byte("offline"), QoS: 1})
			}()
			select {
			case <-b.published:
			case <-time.After(20 * time.Second):
				t.Fatal("the publish never reached the broker")
			}
			if drainFirst {
				m.Drain()
				b.lose()
			} else {
				b.lose()
				poll.Until(t, "the transport sees the loss", 20*time.Second, func() bool {
					return strings.Contains(logs.String(), "mqtt connection lost")
				})
				m.Drain()
			}
			select {
			case err := <-done:
				if !errors.Is(err, bus.ErrNotConnected) {
					t.Fatalf("publish = %v, want ErrNotConnected", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the publish still waits for its PUBACK after Drain and the connection's loss")
			}
		})
	}
}

// The same for a SUBSCRIBE waiting for its SUBACK: it held the transport's
// subscription lock, and every unsubscribe of the shutdown behind it.
func TestDrainEndsASubscribeAwaitingItsAck(t *testing.T) {
	b := newSilentBroker(t, packets.Subscribe)
	m := b.dial(t, slog.New(slog.DiscardHandler))
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_, err := m.Subscribe(ctx, "chorus/v1/kitchen/bus/x", func(bus.Packet) {})
		done <- err
	}()
	select {
	case <-b.published:
	case <-time.After(20 * time.Second):
		t.Fatal("the subscribe never reached the broker")
	}
	m.Drain()
	b.lose()
	select {
	case <-done: // refused or cancelled: what matters is that it returned
	case <-time.After(10 * time.Second):
		t.Fatal("the subscribe still waits for its SUBACK after Drain and the connection's loss")
	}
}
