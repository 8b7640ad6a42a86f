package wsbus

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/gateway/topic"
)

const (
	testDevice = "pi-1"
	wait       = 5 * time.Second // bound on every wait for an effect
)

// env is a real broker, a device account and a Server on 127.0.0.1:0.
type env struct {
	b   *broker.Broker
	dev brokertest.Device
	srv *Server
}

// newEnv starts the broker and the server; cfg may set limits.
func newEnv(t *testing.T, cfg Config) *env {
	t.Helper()
	e := &env{dev: brokertest.NewDevice(t, testDevice)}
	e.b = brokertest.Start(t, broker.Config{}, e.dev.Account)
	e.srv = startServer(t, e.b, cfg)
	return e
}

func startServer(t *testing.T, b *broker.Broker, cfg Config) *Server {
	t.Helper()
	cfg.Transport = inlineTransport{b}
	cfg.Device = testDevice
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = brokertest.Logger(t)
	}
	srv, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// mqtt connects a device-account MQTT client subscribed to the device's bus.
func (e *env) mqtt(t *testing.T, id string) *brokertest.Client {
	t.Helper()
	c := brokertest.MustConnect(t, e.b.Addr(), testDevice, e.dev.Secret, brokertest.ConnectOptions{ClientID: id})
	if rc := c.Sub(t, "chorus/v1/"+testDevice+"/bus/#"); rc > 1 {
		t.Fatalf("subscribe: reason code %#x", rc)
	}
	return c
}

// dialRaw opens a websocket connection without consuming the greeting.
func dialRaw(t *testing.T, srv *Server) *websocket.Conn {
	t.Helper()
	return dialURL(t, srv.ServicesURL())
}

// dialURL opens a websocket connection to url without consuming the greeting.
func dialURL(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: wait}
	conn, resp, err := d.Dial(url, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("dial: status %d", resp.StatusCode)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// dial opens a services connection and checks and consumes the greeting.
func dial(t *testing.T, srv *Server) *websocket.Conn {
	t.Helper()
	return greeted(t, dialRaw(t, srv))
}

// dialSkill opens skill's connection and checks and consumes the greeting.
func dialSkill(t *testing.T, srv *Server, skill string) *websocket.Conn {
	t.Helper()
	return greeted(t, dialURL(t, srv.SkillURL(skill)))
}

func greeted(t *testing.T, conn *websocket.Conn) *websocket.Conn {
	t.Helper()
	if got := readText(t, conn); got != greeting {
		t.Fatalf("greeting = %s, want %s", got, greeting)
	}
	return conn
}

// readText reads the next frame within wait and checks it is text.
func readText(t *testing.T, conn *websocket.Conn) string {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	kind, b, err := conn.ReadMessage()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if kind != websocket.TextMessage {
		t.Fatalf("read: frame kind %d, want text", kind)
	}
	return string(b)
}

func send(t *testing.T, conn *websocket.Conn, frame string) {
	t.Helper()
	sendKind(t, conn, websocket.TextMessage, []byte(frame))
}

func sendKind(t *testing.T, conn *websocket.Conn, kind int, frame []byte) {
	t.Helper()
	_ = conn.SetWriteDeadline(time.Now().Add(wait))
	if err := conn.WriteMessage(kind, frame); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// msg returns a valid envelope of type typ.
func msg(typ string) string {
	return fmt.Sprintf(`{"type":%q,"data":{"n":1},"context":{}}`, typ)
}

func busTopic(t *testing.T, typ string) string {
	t.Helper()
	tp, err := topic.Bus(testDevice, typ)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// countWS reads conn until every barrier frame has arrived and returns how
// many times each frame was received. Order is only promised per publisher
// (BUS.md §2), so a duplicate from a publisher shows up before its barrier.
func countWS(t *testing.T, conn *websocket.Conn, barriers ...string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for !seenAll(counts, barriers) {
		counts[readText(t, conn)]++
	}
	return counts
}

// countMQTT is countWS for an MQTT subscriber, by payload.
func countMQTT(t *testing.T, c *brokertest.Client, barriers ...string) map[string]int {
	t.Helper()
	return countMQTTWithin(t, c, wait, barriers...)
}

// countMQTTWithin is countMQTT waiting up to d for each message, for a
// barrier queued behind work that takes seconds under the race detector.
func countMQTTWithin(t *testing.T, c *brokertest.Client, d time.Duration, barriers ...string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for !seenAll(counts, barriers) {
		p, ok := c.Next(d)
		if !ok {
			t.Fatalf("mqtt: barriers %q not all received within %s; got %v", barriers, d, counts)
		}
		counts[string(p.Payload)]++
	}
	return counts
}

func seenAll(counts map[string]int, keys []string) bool {
	for _, k := range keys {
		if counts[k] == 0 {
			return false
		}
	}
	return true
}

// wantOnce fails unless counts holds exactly the keys of want, once each.
func wantOnce(t *testing.T, who string, counts map[string]int, want ...string) {
	t.Helper()
	if len(counts) != len(want) {
		t.Errorf("%s: got %d distinct messages %v, want %d", who, len(counts), counts, len(want))
	}
	for _, w := range want {
		if counts[w] != 1 {
			t.Errorf("%s: %s received %d times, want once", who, w, counts[w])
		}
	}
}
