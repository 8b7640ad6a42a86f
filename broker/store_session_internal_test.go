package broker

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/storage"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/chorus-edge/chorus/gateway/poll"
)

// rawClient is a bare MQTT 5 connection that never acknowledges a
// delivery, so its QoS 1 messages stay in flight.
type rawClient struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialRaw(t *testing.T, addr, id, user, pass string, expiry uint32) *rawClient {
	t.Helper()
	return dialRawSession(t, addr, id, user, pass, expiry, true)
}

// dialRawSession is dialRaw with the CONNECT's clean start flag chosen.
func dialRawSession(t *testing.T, addr, id, user, pass string, expiry uint32, clean bool) *rawClient {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	c := &rawClient{conn: conn, r: bufio.NewReader(conn)}
	c.send(t, packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Connect}, ProtocolVersion: 5,
		Connect: packets.ConnectParams{
			ProtocolName: []byte("MQTT"), Clean: clean, Keepalive: 30, ClientIdentifier: id,
			UsernameFlag: true, Username: []byte(user), PasswordFlag: true, Password: []byte(pass),
		},
		Properties: packets.Properties{SessionExpiryInterval: expiry, SessionExpiryIntervalFlag: expiry > 0},
	})
	if typ, body := c.next(t); typ != packets.Connack || len(body) < 2 || body[1] != 0 {
		t.Fatalf("CONNACK: type %d body %x", typ, body)
	}
	return c
}

func (c *rawClient) send(t *testing.T, pk packets.Packet) {
	t.Helper()
	var buf bytes.Buffer
	var err error
	switch pk.FixedHeader.Type {
	case packets.Connect:
		err = pk.ConnectEncode(&buf)
	case packets.Subscribe:
		err = pk.SubscribeEncode(&buf)
	case packets.Disconnect:
		err = pk.DisconnectEncode(&buf)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.conn.Write(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
}

// next reads one packet: its type and its body.
func (c *rawClient) next(t *testing.T) (byte, []byte) {
	t.Helper()
	h, err := c.r.ReadByte()
	if err != nil {
		t.Fatal(err)
	}
	n, shift := 0, 0
	for {
		b, err := c.r.ReadByte()
		if err != nil {
			t.Fatal(err)
		}
		n |= int(b&0x7f) << shift
		if b&0x80 == 0 {
			break
		}
		shift += 7
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c.r, body); err != nil {
		t.Fatal(err)
	}
	return h >> 4, body
}

func (c *rawClient) subscribe(t *testing.T, filter string) {
	t.Helper()
	c.send(t, packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Subscribe, Qos: 1}, ProtocolVersion: 5, PacketID: 1,
		Filters: packets.Subscriptions{{Filter: filter, Qos: 1}},
	})
	if typ, _ := c.next(t); typ != packets.Suback {
		t.Fatalf("got packet type %d, want SUBACK", typ)
	}
}

// deliverWhileClearing publishes once, at QoS 1, on topic from inside
// mochi's clearing of client's in-flight messages (ClearInflights, after
// OnDisconnect): the delivery a publisher makes to a client mochi has not
// yet removed. It lands in the client's in-flight messages after mochi took
// their list, so nothing clears it.
type deliverWhileClearing struct {
	mqtt.HookBase
	b      *Broker
	client string
	topic  string
	fired  atomic.Bool
}

func (h *deliverWhileClearing) ID() string           { return "test-deliver-while-clearing" }
func (h *deliverWhileClearing) Provides(b byte) bool { return b == mqtt.OnQosDropped }

func (h *deliverWhileClearing) OnQosDropped(cl *mqtt.Client, _ packets.Packet) {
	if cl.ID != h.client || !h.fired.CompareAndSwap(false, true) {
		return
	}
	if err := h.b.Publish(Message{Topic: h.topic, Payload: []byte(`{"type":"late"}`), QoS: 1}); err != nil {
		panic(err)
	}
}

// A session that ends with its connection (clean, or a persistent one whose
// expiry is set to 0 at DISCONNECT) must leave no row in broker.db, even
// for a QoS 1 delivery mochi makes to it after OnDisconnect: such a row is
// never deleted, and would be loaded at every start for a client that
// cannot come back.
func TestEndedSessionLeavesNoInflightRow(t *testing.T) {
	for _, tc := range []struct {
		name   string
		expiry uint32
	}{
		{"clean session", 0},
		{"persistent session ended at DISCONNECT", 3600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			b, secret := startStoreBroker(t, dir, slog.New(slog.DiscardHandler))
			const id, topic = "operator:alice/watcher", "chorus/v1/pi-1/bus/hello"
			late := &deliverWhileClearing{b: b, client: id, topic: topic}
			if err := b.srv.AddHook(late, nil); err != nil {
				t.Fatal(err)
			}

			c := dialRaw(t, b.Addr(), id, "operator:alice", secret, tc.expiry)
			c.subscribe(t, "chorus/v1/pi-1/bus/+")
			if err := b.Publish(Message{Topic: topic, Payload: []byte(`{"type":"hello"}`), QoS: 1}); err != nil {
				t.Fatal(err)
			}
			if typ, _ := c.next(t); typ != packets.Publish {
				t.Fatalf("got packet type %d, want PUBLISH", typ) // left unacknowledged: in flight
			}
			if tc.expiry > 0 {
				c.send(t, packets.Packet{
					FixedHeader: packets.FixedHeader{Type: packets.Disconnect}, ProtocolVersion: 5,
					Properties: packets.Properties{SessionExpiryIntervalFlag: true}, // expiry 0: the session ends
				})
			}
			c.conn.Close()
			poll.Until(t, "the late delivery", 10*time.Second, late.fired.Load)
			poll.Until(t, "the client removed", 10*time.Second, func() bool { _, ok := b.srv.Clients.Get(id); return !ok })
			b.Close()

			for _, k := range storedKeysIn(t, dir) {
				if strings.HasPrefix(k, "IFM_"+id+":") || strings.HasPrefix(k, "CL_"+id) || strings.HasPrefix(k, "SUB_"+id+":") {
					t.Errorf("row %s left by an ended session", k)
				}
			}
		})
	}
}

// While the store cannot write, a clean connect of a client id that never
// had a stored session must queue nothing: before, each queued a delete of
// its client record, so pending grew with every distinct client id.
func TestCleanConnectsQueueNothingWhileStoreFails(t *testing.T) {
	dir := t.TempDir()
	logs := &storeLog{}
	b, secret := startStoreBroker(t, dir, slog.New(slog.NewTextHandler(logs, nil)))
	if _, err := b.store.db.Exec("PRAGMA max_page_count = 1"); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(Message{Topic: "full/x", Payload: bytes.Repeat([]byte("x"), 8192), QoS: 1, Retain: true}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the write failure logged", 10*time.Second, func() bool { return strings.Contains(logs.String(), "broker store: write failed") })

	const n = 20
	for i := range n {
		id := fmt.Sprintf("clean-%d", i)
		dialRaw(t, b.Addr(), id, "operator:alice", secret, 0).conn.Close()
		poll.Until(t, id+" removed", 10*time.Second, func() bool { _, ok := b.srv.Clients.Get(id); return !ok })
	}
	b.store.mu.Lock()
	var queued []string
	for k := range b.store.pending {
		if k.kind == kindClient {
			queued = append(queued, k.key())
		}
	}
	b.store.mu.Unlock()
	if len(queued) > 0 {
		t.Fatalf("pending client changes after %d clean connects: %d (%q), want none", n, len(queued), queued)
	}
}

// storedKeysIn lists the row keys of broker.db in dir.
func storedKeysIn(t *testing.T, dir string) []string {
	t.Helper()
	rows, err := storeFile(t, dir).Query(`SELECT key FROM mqtt_state ORDER BY key`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	return keys
}

// An offline persistent session whose expiry passes leaves no row behind:
// not its client record, nor its subscriptions, nor the messages in flight
// to it (mochi removes an expired client without clearing it, so without the
// hook deleting them they were loaded again at every start).
func TestExpiredSessionLeavesNoRows(t *testing.T) {
	dir := t.TempDir()
	b, secret := startStoreBroker(t, dir, slog.New(slog.DiscardHandler))
	const id = "expiring"
	c := dialRaw(t, b.Addr(), id, "operator:alice", secret, 1) // expires 1 s after it goes
	c.subscribe(t, "chorus/v1/pi-1/bus/+")
	if err := b.Publish(Message{Topic: "chorus/v1/pi-1/bus/hello", Payload: []byte(`{"type":"hello"}`), QoS: 1}); err != nil {
		t.Fatal(err)
	}
	if typ, _ := c.next(t); typ != packets.Publish {
		t.Fatalf("got packet type %d, want PUBLISH", typ) // left unacknowledged: in flight
	}
	hasRows := func() bool {
		for _, k := range storedKeysIn(t, dir) {
			if strings.Contains(k, id) {
				return true
			}
		}
		return false
	}
	poll.Until(t, "the session's rows stored", 10*time.Second, hasRows)
	c.conn.Close()
	poll.Until(t, "the session expired", 10*time.Second, func() bool { _, ok := b.srv.Clients.Get(id); return !ok })
	poll.Until(t, "the session's rows deleted", 10*time.Second, func() bool { return !hasRows() })
}

// startStoreBroker starts a broker with its store in dir and one operator
// account, "operator:alice"; it returns the broker (closed at the test's
// end; closing twice is harmless) and alice's secret.
func startStoreBroker(t *testing.T, dir string, log *slog.Logger) (*Broker, string) {
	t.Helper()
	secret, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	table, err := NewTable(OperatorAccount("alice", HashSecret(secret)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Start(Config{DataDir: dir, MQTTListen: "127.0.0.1:0", Logger: log}, table)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, secret
}

// droppedRecorder counts OnQosDropped calls for one client id.
type droppedRecorder struct {
	mqtt.HookBase
	client string
	n      atomic.Int32
}

func (h *droppedRecorder) ID() string           { return "test-dropped-recorder" }
func (h *droppedRecorder) Provides(b byte) bool { return b == mqtt.OnQosDropped }
func (h *droppedRecorder) OnQosDropped(cl *mqtt.Client, _ packets.Packet) {
	if cl.ID == h.client {
		h.n.Add(1)
	}
}

// A resumed session's in-flight messages move to the new connection: none is
// dropped on the way (the store would delete its row and add it again behind
// any message delivered during the resend, so a restart re-sent them out of
// order), and their stored order is the order they were published in.
func TestTakeoverKeepsInflightRowsInOrder(t *testing.T) {
	dir := t.TempDir()
	b, secret := startStoreBroker(t, dir, slog.New(slog.DiscardHandler))
	const id, topic = "operator:alice/keeper", "chorus/v1/pi-1/bus/hello"
	dropped := &droppedRecorder{client: id}
	if err := b.srv.AddHook(dropped, nil); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, b.Addr(), id, "operator:alice", secret, 3600)
	c.subscribe(t, "chorus/v1/pi-1/bus/+")
	c.conn.Close()
	poll.Until(t, "the connection gone", 10*time.Second, func() bool { cl, ok := b.srv.Clients.Get(id); return ok && cl.Closed() })
	for i := range 3 {
		if err := b.Publish(Message{Topic: topic, Payload: fmt.Appendf(nil, `{"n":%d}`, i), QoS: 1}); err != nil {
			t.Fatal(err)
		}
	}
	inflight := func() []string {
		var out []string
		rows, err := storeFile(t, dir).Query(`SELECT key FROM mqtt_state WHERE kind = ? ORDER BY seq`, storage.InflightKey)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				t.Fatal(err)
			}
			out = append(out, k)
		}
		return out
	}
	poll.Until(t, "three rows stored", 10*time.Second, func() bool { return len(inflight()) == 3 })
	before := inflight()

	c = dialRawSession(t, b.Addr(), id, "operator:alice", secret, 3600, false)
	for range 3 {
		if typ, _ := c.next(t); typ != packets.Publish {
			t.Fatalf("got packet type %d, want the resent PUBLISH", typ)
		}
	}
	if err := b.Publish(Message{Topic: topic, Payload: []byte(`{"n":3}`), QoS: 1}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "four rows stored", 10*time.Second, func() bool { return len(inflight()) == 4 })
	if n := dropped.n.Load(); n != 0 {
		t.Errorf("the takeover dropped %d in-flight messages, want 0", n)
	}
	if after := inflight(); !slices.Equal(after[:3], before) {
		t.Errorf("stored order after the takeover %q, want %q then the new one", after, before)
	}
}

// publishOnTakeover publishes once, at QoS 1, when mochi logs that a
// session was taken over: after the session was copied to the new
// connection and before that connection is registered, the moment a
// publisher still finds the old client.
type publishOnTakeover struct {
	slog.Handler
	b     atomic.Pointer[Broker]
	topic string
	fired atomic.Bool
}

func (h *publishOnTakeover) Enabled(context.Context, slog.Level) bool { return true }
func (h *publishOnTakeover) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *publishOnTakeover) WithGroup(string) slog.Handler            { return h }

func (h *publishOnTakeover) Handle(_ context.Context, r slog.Record) error {
	if b := h.b.Load(); b != nil && r.Message == "session taken over" && h.fired.CompareAndSwap(false, true) {
		if err := b.Publish(Message{Topic: h.topic, Payload: []byte(`{"n":"late"}`), QoS: 1}); err != nil {
			panic(err)
		}
	}
	return nil
}

// A message delivered to the old client while its session is taken over
// reaches the new connection, after the resumed ones (v2.7.9 lost it).
func TestTakeoverKeepsALateDelivery(t *testing.T) {
	const id, topic = "operator:alice/keeper", "chorus/v1/pi-1/bus/hello"
	h := &publishOnTakeover{Handler: slog.DiscardHandler, topic: topic}
	b, secret := startStoreBroker(t, t.TempDir(), slog.New(h))
	h.b.Store(b)
	c := dialRaw(t, b.Addr(), id, "operator:alice", secret, 3600)
	c.subscribe(t, "chorus/v1/pi-1/bus/+")
	c.conn.Close()
	poll.Until(t, "the connection gone", 10*time.Second, func() bool { cl, ok := b.srv.Clients.Get(id); return ok && cl.Closed() })
	if err := b.Publish(Message{Topic: topic, Payload: []byte(`{"n":"queued"}`), QoS: 1}); err != nil {
		t.Fatal(err)
	}

	c = dialRawSession(t, b.Addr(), id, "operator:alice", secret, 3600, false)
	var got []string
	for len(got) < 2 {
		typ, body := c.next(t)
		if typ != packets.Publish {
			t.Fatalf("got packet type %d, want PUBLISH (so far %q)", typ, got)
		}
		for _, n := range []string{"queued", "late"} {
			if bytes.Contains(body, []byte(n)) {
				got = append(got, n)
			}
		}
	}
	if !h.fired.Load() || !slices.Equal(got, []string{"queued", "late"}) {
		t.Fatalf("delivered %q (late publish made: %v), want the queued message then the late one", got, h.fired.Load())
	}
}
