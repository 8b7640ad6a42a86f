package wsbus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/chorus-edge/chorus/gateway/envelope/envelopetest"
	"github.com/chorus-edge/chorus/gateway/poll"
)

func TestGreeting(t *testing.T) {
	e := newEnv(t, Config{})
	conn := dialRaw(t, e.srv)
	if got := readText(t, conn); got != greeting {
		t.Fatalf("first frame = %s, want %s", got, greeting)
	}
	want := `{"type":"connected","data":{},"context":{"session":{"session_id":"default"}}}`
	if greeting != want {
		t.Fatalf("greeting constant = %s, want %s (BUS.md §3)", greeting, want)
	}
}

func TestEchoToSenderAndMQTT(t *testing.T) {
	e := newEnv(t, Config{})
	sub := e.mqtt(t, "observer")
	conn := dial(t, e.srv)
	frame := msg("chorus.test")
	send(t, conn, frame)

	if got := readText(t, conn); got != frame {
		t.Errorf("echo to sender = %s, want %s", got, frame)
	}
	p := sub.Expect(t, busTopic(t, "chorus.test"), wait)
	if string(p.Payload) != frame {
		t.Errorf("mqtt payload = %s, want %s", p.Payload, frame)
	}
	if p.QoS != 1 || p.Retain {
		t.Errorf("mqtt qos %d retain %v, want qos 1 not retained", p.QoS, p.Retain)
	}
	if p.Properties == nil || p.Properties.ContentType != "application/json" {
		t.Errorf("mqtt properties %+v, want content type application/json", p.Properties)
	}
	if p.Properties == nil || p.Properties.MessageExpiry == nil || *p.Properties.MessageExpiry == 0 {
		t.Errorf("mqtt properties %+v, want a message expiry", p.Properties)
	}
}

func TestEachMessageOnceToEveryone(t *testing.T) {
	e := newEnv(t, Config{})
	sub := e.mqtt(t, "observer")
	pub := e.mqtt(t, "publisher")
	a, b := dial(t, e.srv), dial(t, e.srv)

	fromA, fromB, fromM := msg("test.from_a"), msg("test.from_b"), msg("test.from_mqtt")
	barA, barB, barM := msg("test.barrier_a"), msg("test.barrier_b"), msg("test.barrier_mqtt")
	send(t, a, fromA)
	send(t, b, fromB)
	pub.Pub(t, busTopic(t, "test.from_mqtt"), []byte(fromM), false)
	send(t, a, barA)
	send(t, b, barB)
	pub.Pub(t, busTopic(t, "test.barrier_mqtt"), []byte(barM), false)

	all := []string{fromA, fromB, fromM, barA, barB, barM}
	wantOnce(t, "client a", countWS(t, a, barA, barB, barM), all...)
	wantOnce(t, "client b", countWS(t, b, barA, barB, barM), all...)
	wantOnce(t, "mqtt observer", countMQTT(t, sub, barA, barB, barM), all...)
}

func TestMQTTPublishReachesAllClients(t *testing.T) {
	e := newEnv(t, Config{})
	pub := e.mqtt(t, "publisher")
	conns := []*websocket.Conn{dial(t, e.srv), dial(t, e.srv), dial(t, e.srv)}
	frame := msg("ovos.utterance.speak")
	if rc := pub.Pub(t, busTopic(t, "ovos.utterance.speak"), []byte(frame), false); rc != 0 {
		t.Fatalf("publish: reason code %#x", rc)
	}
	for i, c := range conns {
		if got := readText(t, c); got != frame {
			t.Errorf("client %d got %s, want %s", i, got, frame)
		}
	}
}

// Valid fixtures, legacy types included, are relayed byte for byte as sent,
// as ovos-messagebus relays the raw string (ovos-behaviour §3.3).
func TestValidFixturesRelayedAsSent(t *testing.T) {
	e := newEnv(t, Config{})
	conn := dial(t, e.srv)
	for _, f := range envelopetest.Fixtures(t) {
		if !f.OK() {
			continue
		}
		send(t, conn, string(f.Raw))
		if got := readText(t, conn); got != string(f.Raw) {
			t.Errorf("%s: echo = %q, want %q", f.Name, got, f.Raw)
		}
	}
}

func TestMalformedFramesDropped(t *testing.T) {
	e := newEnv(t, Config{})
	sub := e.mqtt(t, "observer")
	sender, other := dial(t, e.srv), dial(t, e.srv)
	n := 0
	for _, f := range envelopetest.Fixtures(t) {
		if !f.OK() {
			send(t, sender, string(f.Raw))
			n++
		}
	}
	sendKind(t, sender, websocket.BinaryMessage, []byte(msg("test.binary")))
	if n == 0 {
		t.Fatal("no malformed fixtures")
	}
	barrier := msg("test.barrier")
	send(t, sender, barrier) // also proves the connection stayed up
	for name, c := range map[string]*websocket.Conn{"sender": sender, "other": other} {
		if got := readText(t, c); got != barrier {
			t.Errorf("%s: next frame = %q, want the barrier", name, got)
		}
	}
	if p, ok := sub.Next(wait); !ok || string(p.Payload) != barrier {
		t.Errorf("mqtt: next message = %v, want the barrier", p)
	}
}

// A malformed message published on MQTT, or one whose payload type is not
// its topic's, never reaches websocket clients (BUS.md §3).
func TestMalformedBusMessagesNotRelayed(t *testing.T) {
	e := newEnv(t, Config{})
	pub := e.mqtt(t, "publisher")
	conn := dial(t, e.srv)
	for _, f := range envelopetest.Fixtures(t) {
		if !f.OK() {
			pub.Pub(t, busTopic(t, "test.bad"), f.Raw, false)
		}
	}
	pub.Pub(t, busTopic(t, "test.allowed"), []byte(msg("ovos.skills.install")), false)
	barrier := msg("test.barrier")
	pub.Pub(t, busTopic(t, "test.barrier"), []byte(barrier), false)
	if got := readText(t, conn); got != barrier {
		t.Errorf("next frame = %q, want the barrier", got)
	}
}

// A frame over websocket.max_msg_size is refused with a log line naming the
// setting, and the connection stays up.
func TestOversizedFrameDropped(t *testing.T) {
	const max = 1024
	logs := &logBuffer{}
	e := newEnv(t, Config{MaxFrame: max, Logger: logs.logger()})
	sub := e.mqtt(t, "observer")
	conn := dial(t, e.srv)

	big := frameOfSize("test.big", max+1)
	exact := frameOfSize("test.exact", max)
	send(t, conn, big)
	send(t, conn, exact)
	if got := readText(t, conn); got != exact {
		t.Errorf("next frame = %.80q…, want the %d-byte frame", got, max)
	}
	if p, ok := sub.Next(wait); !ok || string(p.Payload) != exact {
		t.Errorf("mqtt: next message is not the %d-byte frame", max)
	}
	if want := "1025 bytes, over websocket.max_msg_size (1024 bytes); the connection stays up"; !strings.Contains(logs.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, logs)
	}
}

// frameOfSize returns a valid envelope of exactly n bytes.
func frameOfSize(typ string, n int) string {
	base := `{"type":"` + typ + `","data":{"pad":""}}`
	return strings.Replace(base, `""`, `"`+strings.Repeat("x", n-len(base))+`"`, 1)
}

func TestCloseDropsWithoutCloseFrame(t *testing.T) {
	e := newEnv(t, Config{})
	conns := []*websocket.Conn{dial(t, e.srv), dial(t, e.srv)}
	if err := e.srv.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(wait))
		_, _, err := c.ReadMessage()
		if err == nil {
			t.Errorf("client %d: read succeeded after Close", i)
		}
		if reason := notAbrupt(err); reason != "" {
			t.Errorf("client %d: %s", i, reason)
		}
	}
	if err := e.srv.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	d := websocket.Dialer{HandshakeTimeout: wait}
	if c, _, err := d.Dial(e.srv.ServicesURL(), nil); err == nil {
		c.Close()
		t.Error("dial after Close succeeded")
	}
}

func TestPortInUse(t *testing.T) {
	e := newEnv(t, Config{})
	_, err := Start(context.Background(), Config{Transport: inlineTransport{e.b}, Device: testDevice, Listen: e.srv.Addr()})
	if err == nil {
		t.Fatalf("second server on %s started", e.srv.Addr())
	}
	if !strings.Contains(err.Error(), e.srv.Addr()) {
		t.Errorf("error %q does not name the address", err)
	}
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	e := newEnv(t, Config{})
	_ = e.srv.Close()
	before := runtime.NumGoroutine()

	srv := startServer(t, e.b, Config{})
	a, b := dial(t, srv), dial(t, srv)
	send(t, a, msg("test.x"))
	readText(t, a)
	readText(t, b)
	if err := srv.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	_ = a.Close()
	_ = b.Close()
	err := poll.Wait(context.Background(), fmt.Sprintf("goroutines back to %d after Close", before), wait, func() bool {
		return runtime.NumGoroutine() <= before
	})
	if err != nil {
		buf := make([]byte, 1<<20)
		t.Fatalf("%v: %d running:\n%s", err, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
	}
}

func TestStartRefusesBadConfig(t *testing.T) {
	tr := failingTransport{errors.New("no broker")}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no transport", Config{Device: testDevice}, "no transport"},
		{"bad device", Config{Transport: tr, Device: "a/b"}, "device"},
		{"route without slash", Config{Transport: tr, Device: testDevice, Route: "core"}, "route"},
		{"frame over OVOS's 25 MB", Config{Transport: tr, Device: testDevice, MaxFrame: MaxMaxFrame + 1}, "25"},
		{"budget below a frame", Config{Transport: tr, Device: testDevice, MaxFrame: 2 << 20, FrameBudget: 1 << 20}, "frame budget"},
		{"short secret", Config{Transport: tr, Device: testDevice, Secret: []byte("short")}, "secret"},
		{"subscribe fails", Config{Transport: tr, Device: testDevice}, "no broker"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Listen = "127.0.0.1:0"
			srv, err := Start(context.Background(), tc.cfg)
			if err == nil {
				srv.Close()
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to mention %q", err, tc.want)
			}
		})
	}
}

// A client that stops reading is disconnected when its queue overflows; the
// others keep receiving everything (BUS.md §3). The drop is the same kill as
// Close's, whose abruptness TestCloseDropsWithoutCloseFrame checks: draining
// megabytes through the tiny receive window used here would take minutes.
func TestSlowClientDisconnected(t *testing.T) {
	e := newEnv(t, Config{QueueLen: 4, WriteTimeout: time.Minute})
	pub := e.mqtt(t, "publisher")
	dialSmallBuffer(t, e.srv) // never reads
	fast := dial(t, e.srv)
	payload := frameOfSize("test.bulk", 64<<10)
	const max = 1000 // 64 MB: far more than socket buffers hold
	for i := 0; clientCount(e.srv) == 2; i++ {
		if i == max {
			t.Fatalf("slow client still connected after %d messages", max)
		}
		pub.Pub(t, busTopic(t, "test.bulk"), []byte(payload), false)
		if got := readText(t, fast); got != payload {
			t.Fatalf("fast client: message %d differs", i)
		}
	}
	barrier := msg("test.barrier")
	pub.Pub(t, busTopic(t, "test.barrier"), []byte(barrier), false)
	if got := readText(t, fast); got != barrier {
		t.Errorf("fast client: next frame is not the barrier")
	}
}

// clientCount returns the number of registered clients.
func clientCount(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients)
}

// notAbrupt says why a client's read error is not an abrupt TCP drop, or ""
// when it is. gorilla reports EOF without a close frame as a *CloseError with
// code 1006 (CloseAbnormalClosure), a code RFC 6455 §7.4.1 reserves for
// exactly that and forbids in a close frame (gorilla refuses it on receipt),
// so any other *CloseError means the server sent a close frame, after which
// ovos-bus-client would never reconnect (BUS.md §3).
func notAbrupt(err error) string {
	var ce *websocket.CloseError
	if errors.As(err, &ce) && ce.Code != websocket.CloseAbnormalClosure {
		return "got a close frame: " + err.Error()
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "connection still open"
	}
	return ""
}

// dialSmallBuffer dials with a tiny TCP receive buffer, so a client that
// stops reading backs up into the server's queue quickly.
func dialSmallBuffer(t *testing.T, srv *Server) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{
		HandshakeTimeout: wait,
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(4096)
			}
			return c, err
		},
	}
	conn, resp, err := d.Dial(srv.ServicesURL(), nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	_ = resp.Body.Close()
	t.Cleanup(func() { _ = conn.Close() })
	if got := readText(t, conn); got != greeting {
		t.Fatalf("greeting = %s", got)
	}
	return conn
}
