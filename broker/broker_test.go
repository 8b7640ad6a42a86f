package broker_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/gateway/poll"
	"github.com/chorus-edge/chorus/gateway/skillcred"
)

const wait = 20 * time.Second // generous: a loaded 2-core CI machine under -race; a wait that succeeds returns at once

func TestAuthenticate(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-1")
	op, opSecret := brokertest.NewOperator(t, "alice")
	b := brokertest.Start(t, broker.Config{}, dev.Account, op)

	tests := []struct {
		name, user, pass string
		ok               bool
	}{
		{"device", "pi-1", dev.Secret, true},
		{"operator", "operator:alice", opSecret, true},
		{"skill signed by device", skillcred.Username("pi-1", "hello"), skillcred.Mint(dev.Key, 1, "pi-1", "hello"), true},
		{"wrong password", "pi-1", "nope", false},
		{"empty password", "pi-1", "", false},
		{"unknown user", "pi-2", dev.Secret, false},
		{"operator secret on device", "pi-1", opSecret, false},
		{"skill of another device", skillcred.Username("pi-2", "hello"), skillcred.Mint(dev.Key, 1, "pi-2", "hello"), false},
		{"skill credential for other skill", skillcred.Username("pi-1", "evil"), skillcred.Mint(dev.Key, 1, "pi-1", "hello"), false},
		{"skill minted with old key version", skillcred.Username("pi-1", "hello"), skillcred.Mint(dev.Key, 0, "pi-1", "hello"), false},
		// The derived form is Mosquitto's; here the registry holds its key.
		{"skill derived from device secret", skillcred.Username("pi-1", "hello"), skillcred.MintDerived(skillcred.DeriveKey(dev.Secret), 1, "pi-1", "hello"), false},
		{"derived for other skill", skillcred.Username("pi-1", "evil"), skillcred.MintDerived(skillcred.DeriveKey(dev.Secret), 1, "pi-1", "hello"), false},
		{"derived from wrong secret", skillcred.Username("pi-1", "hello"), skillcred.MintDerived(skillcred.DeriveKey("nope"), 1, "pi-1", "hello"), false},
		{"derived with old key version", skillcred.Username("pi-1", "hello"), skillcred.MintDerived(skillcred.DeriveKey(dev.Secret), 0, "pi-1", "hello"), false},
		{"no credentials", "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := brokertest.Connect(t, b.Addr(), tc.user, tc.pass, brokertest.ConnectOptions{})
			if tc.ok {
				if err != nil {
					t.Fatalf("connect: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("connect succeeded, want refusal")
			}
			if c == nil || c.Connack == nil || c.Connack.ReasonCode != 0x86 {
				t.Fatalf("want CONNACK 0x86 (bad username or password), got %+v / %v", c, err)
			}
		})
	}
}

func TestRevokeWhileConnected(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-1")
	other := brokertest.NewDevice(t, "pi-2")
	b := brokertest.Start(t, broker.Config{}, dev.Account, other.Account)
	c1 := brokertest.MustConnect(t, b.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1"})
	c2 := brokertest.MustConnect(t, b.Addr(), "pi-2", other.Secret, brokertest.ConnectOptions{ClientID: "pi-2"})
	skill := brokertest.MustConnect(t, b.Addr(), skillcred.Username("pi-1", "s"), skillcred.Mint(dev.Key, 1, "pi-1", "s"), brokertest.ConnectOptions{ClientID: skillcred.Username("pi-1", "s")})

	// pi-1 is removed; pi-2 stays.
	table, err := broker.NewTable(other.Account)
	if err != nil {
		t.Fatal(err)
	}
	b.SetTable(table)

	for _, c := range []*brokertest.Client{c1, skill} {
		select {
		case <-c.Done():
		case <-time.After(wait):
			t.Fatal("revoked client still connected")
		}
	}
	if rc := c2.Pub(t, "chorus/v1/pi-2/bus/ping", []byte(`{"type":"ping"}`), false); rc != 0 {
		t.Fatalf("remaining client publish: reason %#x", rc)
	}
	if _, err := brokertest.Connect(t, b.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1/pi-1b"}); err == nil {
		t.Fatal("revoked device reconnected")
	}
}

// A client that disconnects cleanly while SetTable revokes it: the broker
// withdraws the Will through its flag on both paths, so the race detector
// finds nothing (mochi's clean disconnect assigned the whole Will struct
// while SetTable stored its flag from another goroutine; seen in
// fleet/httpapi's join tests). Twenty rounds, since whether the two meet
// depends on the scheduler.
func TestRevokeDuringCleanDisconnect(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-1")
	b := brokertest.Start(t, broker.Config{}, dev.Account)
	empty, err := broker.NewTable()
	if err != nil {
		t.Fatal(err)
	}
	full, err := broker.NewTable(dev.Account)
	if err != nil {
		t.Fatal(err)
	}
	will := &paho.WillMessage{Topic: "chorus/v1/pi-1/availability", Payload: []byte("offline"), QoS: 1, Retain: true}
	for i := range 20 {
		b.SetTable(full)
		c := brokertest.MustConnect(t, b.Addr(), "pi-1", dev.Secret,
			brokertest.ConnectOptions{ClientID: fmt.Sprintf("pi-1/r%d", i), Will: will})
		done := make(chan struct{})
		go func() {
			defer close(done)
			b.SetTable(empty)
		}()
		c.Close()
		<-done
	}
}

func TestACL(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-1")
	intg, intgSecret := brokertest.NewIntegration(t, "ha", "speak")
	op, opSecret := brokertest.NewOperator(t, "alice")
	b := brokertest.Start(t, broker.Config{}, dev.Account, intg, op)
	clients := map[string]*brokertest.Client{
		"device":      brokertest.MustConnect(t, b.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1/d"}),
		"skill":       brokertest.MustConnect(t, b.Addr(), skillcred.Username("pi-1", "s"), skillcred.Mint(dev.Key, 1, "pi-1", "s"), brokertest.ConnectOptions{ClientID: skillcred.Username("pi-1", "s")}),
		"integration": brokertest.MustConnect(t, b.Addr(), "integration:ha", intgSecret, brokertest.ConnectOptions{ClientID: "i"}),
		"operator":    brokertest.MustConnect(t, b.Addr(), "operator:alice", opSecret, brokertest.ConnectOptions{ClientID: "o"}),
	}
	pubs := []struct {
		who, topic string
		retain     bool
		ok         bool
	}{
		{"device", "chorus/v1/pi-1/bus/speak", false, true},
		{"device", "chorus/v1/pi-1/skills", true, true},
		{"device", "chorus/v1/pi-1/desired", true, false},
		{"device", "chorus/v1/pi-2/bus/speak", false, false},
		{"device", "chorus/v1/pi-1/bus/speak", true, false},
		{"skill", "chorus/v1/pi-1/bus/speak", false, true},
		{"skill", "chorus/v1/pi-1/availability", true, false},
		{"skill", "chorus/v1/pi-1/skills", false, false},
		{"skill", "chorus/v1/pi-2/bus/speak", false, false},
		{"integration", "chorus/v1/pi-1/skill/hello/set", false, true},
		{"integration", "chorus/v1/pi-1/bus/speak", false, true},
		{"integration", "chorus/v1/pi-1/bus/ovos.skills.install", false, false},
		{"integration", "chorus/v1/pi-1/desired", false, false},
		{"operator", "chorus/v1/pi-9/bus/ovos.skills.install", false, true},
		{"operator", "chorus/v1/pi-1/desired", false, false},
		{"operator", "chorus/v1/pi-1/bus/speak", true, false},
	}
	for _, tc := range pubs {
		t.Run("pub "+tc.who+" "+tc.topic, func(t *testing.T) {
			rc := clients[tc.who].Pub(t, tc.topic, payloadFor(tc.topic, "ON"), tc.retain)
			if tc.ok != (rc < 0x80) {
				t.Fatalf("publish reason %#x, want ok=%v", rc, tc.ok)
			}
		})
	}
	subs := []struct {
		who, filter string
		ok          bool
	}{
		{"device", "chorus/v1/pi-1/#", true},
		{"device", "chorus/v1/pi-1/bus/+", true},
		{"device", "chorus/v1/+/bus/+", false},
		{"device", "#", false},
		{"skill", "chorus/v1/pi-1/bus/+", true},
		{"skill", "chorus/v1/pi-1/desired", false},
		{"skill", "chorus/v1/pi-1/#", false},
		{"integration", "chorus/v1/#", true},
		{"integration", "homeassistant/#", true},
		{"integration", "$SYS/#", false},
		{"integration", "#", false},
		{"operator", "chorus/v1/+/bus/+", true},
		{"operator", "$SYS/broker/version", true},
	}
	for _, tc := range subs {
		t.Run("sub "+tc.who+" "+tc.filter, func(t *testing.T) {
			rc := clients[tc.who].Sub(t, tc.filter)
			if tc.ok != (rc < 0x80) {
				t.Fatalf("subscribe reason %#x, want ok=%v", rc, tc.ok)
			}
		})
	}
}

// A publish outside the ACL reaches no one: the subscriber sees the barrier
// message the same publisher sent after it, and nothing before.
func TestDeniedPublishDeliveredToNoOne(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-1")
	op, opSecret := brokertest.NewOperator(t, "alice")
	b := brokertest.Start(t, broker.Config{}, dev.Account, op)
	watcher := brokertest.MustConnect(t, b.Addr(), "operator:alice", opSecret, brokertest.ConnectOptions{ClientID: "w"})
	watcher.Sub(t, "chorus/v1/#")
	d := brokertest.MustConnect(t, b.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1/d"})
	if rc := d.Pub(t, "chorus/v1/pi-1/desired", []byte("forged"), false); rc != 0x87 {
		t.Fatalf("forged desired: reason %#x, want 0x87", rc)
	}
	d.Pub(t, "chorus/v1/pi-1/bus/barrier", []byte(`{"type":"barrier"}`), false)
	m, ok := watcher.Next(wait)
	if !ok || m.Topic != "chorus/v1/pi-1/bus/barrier" {
		t.Fatalf("first delivery = %+v, want the barrier", m)
	}
}

func TestWillOutsideACLRefused(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-1")
	b := brokertest.Start(t, broker.Config{}, dev.Account)
	_, err := brokertest.Connect(t, b.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{
		ClientID: "pi-1/d", Will: &paho.WillMessage{Topic: "chorus/v1/pi-2/availability", Payload: []byte("offline"), Retain: true, QoS: 1},
	})
	if err == nil {
		t.Fatal("connect with a will on another device's topic succeeded")
	}
	brokertest.MustConnect(t, b.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{
		ClientID: "pi-1/d2", Will: &paho.WillMessage{Topic: "chorus/v1/pi-1/availability", Payload: []byte("offline"), Retain: true, QoS: 1},
	})
}

func TestRetainedAndSessionSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	dev := brokertest.NewDevice(t, "pi-1")
	op, opSecret := brokertest.NewOperator(t, "alice")
	b := brokertest.Start(t, broker.Config{DataDir: dir}, dev.Account, op)
	addr := b.Addr()

	// A persistent session subscribed to the device's bus, then gone.
	sess := brokertest.MustConnect(t, addr, "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1", Expiry: 3600})
	sess.Sub(t, "chorus/v1/pi-1/bus/+")
	sess.Close()

	d := brokertest.MustConnect(t, addr, "operator:alice", opSecret, brokertest.ConnectOptions{ClientID: "op"})
	d.Close()
	pub := brokertest.MustConnect(t, addr, "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1/pub"})
	pub.Pub(t, "chorus/v1/pi-1/skills", []byte(`{"skills":[]}`), true)
	pub.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b2 := brokertest.Start(t, broker.Config{DataDir: dir, MQTTListen: addr}, dev.Account, op)
	w := brokertest.MustConnect(t, b2.Addr(), "operator:alice", opSecret, brokertest.ConnectOptions{ClientID: "op2"})
	w.Sub(t, "chorus/v1/pi-1/skills")
	if m := w.Expect(t, "chorus/v1/pi-1/skills", wait); !m.Retain || string(m.Payload) != `{"skills":[]}` {
		t.Fatalf("retained after restart = %+v", m)
	}

	// The session resumes with its subscription: a message published before
	// it reconnects is queued for it (QoS 1), and SessionPresent is set.
	opc := brokertest.MustConnect(t, b2.Addr(), "operator:alice", opSecret, brokertest.ConnectOptions{ClientID: "op3"})
	opc.Pub(t, "chorus/v1/pi-1/bus/hello", []byte(`{"type":"hello"}`), false)
	again := brokertest.MustConnect(t, b2.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1", Expiry: 3600})
	if !again.Connack.SessionPresent {
		t.Fatal("session not present after restart")
	}
	again.Expect(t, "chorus/v1/pi-1/bus/hello", wait)
}

// A large retained payload is held deflated with the configured dictionary
// and delivered as published, and the dictionary never reaches the store: a
// broker restarted with another dictionary (another version's samples)
// delivers the same bytes.
func TestRetainedLargePayloadWithDictionary(t *testing.T) {
	dir := t.TempDir()
	dev := brokertest.NewDevice(t, "pi-1")
	op, opSecret := brokertest.NewOperator(t, "alice")
	doc := []byte(`{"skills":[` + strings.Repeat(`{"id":"ovos-skill-weather.openvoiceos","state":"loaded","active":true},`, 40) + `{}]}`)
	sample := []byte(`{"skills":[{"id":"ovos-skill-sample.openvoiceos","state":"waiting","active":false}]}`)
	for i, dict := range [][]byte{sample, []byte(strings.Repeat("another version's samples ", 50))} {
		b := brokertest.Start(t, broker.Config{DataDir: dir, RetainedDictionary: dict}, dev.Account, op)
		if i == 0 {
			pub := brokertest.MustConnect(t, b.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1/pub"})
			pub.Pub(t, "chorus/v1/pi-1/skills", doc, true)
			pub.Close()
		}
		w := brokertest.MustConnect(t, b.Addr(), "operator:alice", opSecret, brokertest.ConnectOptions{ClientID: "op"})
		w.Sub(t, "chorus/v1/pi-1/skills")
		if m := w.Expect(t, "chorus/v1/pi-1/skills", wait); !m.Retain || !bytes.Equal(m.Payload, doc) {
			t.Fatalf("start %d: retained = %.80q (%d bytes), want the %d bytes published", i, m.Payload, len(m.Payload), len(doc))
		}
		w.Close()
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// Regression: mochi's default maximum message expiry (24 h) deletes every
// retained message a day after it was stored. Retained state must not expire.
func TestRetainedStateDoesNotExpire(t *testing.T) {
	dir := t.TempDir()
	dev := brokertest.NewDevice(t, "pi-1")
	b := brokertest.Start(t, broker.Config{DataDir: dir}, dev.Account)
	addr := b.Addr()
	d := brokertest.MustConnect(t, addr, "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1/d"})
	d.Pub(t, "chorus/v1/pi-1/birth", []byte(`{"session":1}`), true)
	d.Close()
	b.Close()
	ageStoredRetained(t, dir, 48*time.Hour)

	b2 := brokertest.Start(t, broker.Config{DataDir: dir, MQTTListen: addr}, dev.Account)
	// A sentinel retained with a 1 s expiry: once the expiry sweep removes
	// it, the sweep has run over the two-day-old message too.
	s := brokertest.MustConnect(t, b2.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1/s"})
	expiry := uint32(1)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := s.Publish(ctx, &paho.Publish{Topic: "chorus/v1/pi-1/connectivity", QoS: 1, Retain: true, Payload: []byte("x"),
		Properties: &paho.PublishProperties{MessageExpiry: &expiry}}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the connectivity retained message gone", 10*time.Second, func() bool { return !b2.HasRetained("chorus/v1/pi-1/connectivity") })
	if !b2.HasRetained("chorus/v1/pi-1/birth") {
		t.Fatal("two-day-old retained state was deleted")
	}
	w := brokertest.MustConnect(t, b2.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1/w"})
	w.Sub(t, "chorus/v1/pi-1/birth")
	w.Expect(t, "chorus/v1/pi-1/birth", wait)
}

// Regression for mochi-mqtt/server#501: a truncated MQTT 5 SUBSCRIBE panics
// in mochi's decoder. The listener recovers; the broker keeps serving.
func TestTruncatedSubscribeDoesNotKillBroker(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-1")
	b := brokertest.Start(t, broker.Config{}, dev.Account)
	conn, err := net.DialTimeout("tcp", b.Addr(), wait)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(wait))
	if _, err := conn.Write(connectPacket("pi-1", "pi-1", dev.Secret)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if _, err := conn.Read(buf); err != nil || buf[0] != 0x20 {
		t.Fatalf("no CONNACK: %v %x", err, buf[:4])
	}
	// SUBSCRIBE, remaining length 6: packet id, properties length 0, filter
	// length 1, "a" and no options byte: the decoder indexes past the end.
	if _, err := conn.Write([]byte{0x82, 0x05, 0x00, 0x01, 0x00, 0x00, 0x01}); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte{'a'}); err != nil {
		t.Fatal(err)
	}
	_, _ = conn.Read(buf) // the broker closes this connection
	brokertest.MustConnect(t, b.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1/after"})
}

// payloadFor returns a bus message of the topic's type carrying tag on a bus
// topic (skills must send real envelopes), and tag itself elsewhere; a
// short tag fits every topic class's payload cap (limits_test.go).
func payloadFor(topic, tag string) []byte {
	if t, ok := strings.CutPrefix(topic, "chorus/v1/"); ok {
		if _, typ, ok := strings.Cut(t, "/bus/"); ok {
			return []byte(`{"type":"` + typ + `","data":{"tag":"` + tag + `"}}`)
		}
	}
	return []byte(tag)
}

// connectPacket encodes an MQTT 5 CONNECT with username and password.
func connectPacket(clientID, user, pass string) []byte {
	var body bytes.Buffer
	str := func(s string) { body.WriteByte(byte(len(s) >> 8)); body.WriteByte(byte(len(s))); body.WriteString(s) }
	str("MQTT")
	body.Write([]byte{5, 0xC2, 0, 30, 0}) // v5, username+password+clean start, keepalive 30, no properties
	str(clientID)
	str(user)
	str(pass)
	return append([]byte{0x10, byte(body.Len())}, body.Bytes()...)
}

func TestPortInUse(t *testing.T) {
	b := brokertest.Start(t, broker.Config{})
	_, err := broker.Start(broker.Config{MQTTListen: b.Addr()}, nil)
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("second broker on %s: %v", b.Addr(), err)
	}
}

func TestInlinePublishSubscribe(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-1")
	b := brokertest.Start(t, broker.Config{}, dev.Account)
	got := make(chan broker.Message, 4)
	unsub, err := b.Subscribe("chorus/v1/+/bus/+", func(m broker.Message) { got <- m })
	if err != nil {
		t.Fatal(err)
	}
	d := brokertest.MustConnect(t, b.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1/d"})
	d.Sub(t, "chorus/v1/pi-1/desired")
	d.Pub(t, "chorus/v1/pi-1/bus/ping", []byte(`{"type":"ping"}`), false)
	select {
	case m := <-got:
		if m.Topic != "chorus/v1/pi-1/bus/ping" {
			t.Fatalf("inline got %s", m.Topic)
		}
	case <-time.After(wait):
		t.Fatal("inline subscriber got nothing")
	}
	unsub()
	// Inline publishes bypass the ACL: the controller writes desired.
	if err := b.Publish(broker.Message{Topic: "chorus/v1/pi-1/desired", Payload: []byte(`{}`), QoS: 1, Retain: true,
		User: []broker.UserProperty{{Key: "k", Value: "v"}}}); err != nil {
		t.Fatal(err)
	}
	m := d.Expect(t, "chorus/v1/pi-1/desired", wait)
	if m.Properties == nil || m.Properties.User.Get("k") != "v" {
		t.Fatalf("user property lost: %+v", m.Properties)
	}
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	dev := brokertest.NewDevice(t, "pi-1")
	table, _ := broker.NewTable(dev.Account)
	b, err := broker.Start(broker.Config{MQTTListen: "127.0.0.1:0", WSListen: "127.0.0.1:0", DataDir: t.TempDir(), Logger: brokertest.Logger(t)}, table)
	if err != nil {
		t.Fatal(err)
	}
	c := brokertest.MustConnect(t, b.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1/d"})
	c.Pub(t, "chorus/v1/pi-1/skills", []byte("{}"), true)
	b.Close()
	b.Close() // idempotent
	<-c.Done()
	poll.Until(t, "goroutines back to the count before", wait, func() bool { return runtime.NumGoroutine() <= before })
}

func TestConfigRejected(t *testing.T) {
	_, err := broker.Start(broker.Config{MQTTListen: "127.0.0.1:0", MaxPacketSize: 10}, nil)
	if err == nil || !strings.Contains(err.Error(), "max packet size") {
		t.Fatalf("err = %v", err)
	}
	var target *net.OpError
	_ = errors.As(err, &target)
}

// ageStoredRetained rewrites the creation time of every stored retained
// message to age ago, as if the broker had been running that long.
func ageStoredRetained(t *testing.T, dir string, age time.Duration) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, "broker.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT key, value FROM mqtt_state WHERE kind = 'RET'`)
	if err != nil {
		t.Fatal(err)
	}
	updates := map[string][]byte{}
	for rows.Next() {
		var k string
		var v []byte
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(v, &m); err != nil {
			t.Fatal(err)
		}
		m["created"] = time.Now().Add(-age).Unix()
		updates[k], _ = json.Marshal(m)
	}
	rows.Close()
	if len(updates) == 0 {
		t.Fatal("no retained message stored")
	}
	for k, v := range updates {
		if _, err := db.Exec(`UPDATE mqtt_state SET value = ? WHERE key = ?`, v, k); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSkillManagementTypesAndForgedIDRefused(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-1")
	b := brokertest.Start(t, broker.Config{}, dev.Account)
	s := brokertest.MustConnect(t, b.Addr(), skillcred.Username("pi-1", "s"), skillcred.Mint(dev.Key, 1, "pi-1", "s"), brokertest.ConnectOptions{ClientID: skillcred.Username("pi-1", "s")})
	d := brokertest.MustConnect(t, b.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1/d"})
	tests := []struct {
		name, topic, payload string
		ok                   bool
	}{
		{"plain type", "chorus/v1/pi-1/bus/speak", `{"type":"speak"}`, true},
		{"own skill id", "chorus/v1/pi-1/bus/speak", `{"type":"speak","context":{"skill_id":"s"}}`, true},
		{"forged skill id", "chorus/v1/pi-1/bus/speak", `{"type":"speak","context":{"skill_id":"other"}}`, false},
		{"install", "chorus/v1/pi-1/bus/ovos.skills.install", `{"type":"ovos.skills.install"}`, false},
		{"pip", "chorus/v1/pi-1/bus/ovos.pip.install", `{"type":"ovos.pip.install"}`, false},
		{"skill manager", "chorus/v1/pi-1/bus/skillmanager.deactivate", `{"type":"skillmanager.deactivate"}`, false},
		{"fake internet", "chorus/v1/pi-1/bus/mycroft.internet.connected", `{"type":"mycroft.internet.connected"}`, false},
		{"fake gui", "chorus/v1/pi-1/bus/mycroft.gui.available", `{"type":"mycroft.gui.available"}`, false},
		{"ready", "chorus/v1/pi-1/bus/chorus.skill.ready", `{"type":"chorus.skill.ready","data":{"skill_id":"s"}}`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := s.Pub(t, tc.topic, []byte(tc.payload), false)
			if tc.ok != (rc < 0x80) {
				t.Fatalf("reason %#x, want ok=%v", rc, tc.ok)
			}
		})
	}
	// The device itself may send management types.
	if rc := d.Pub(t, "chorus/v1/pi-1/bus/skillmanager.rescan", []byte(`{"type":"skillmanager.rescan"}`), false); rc != 0 {
		t.Fatalf("device management publish: %#x", rc)
	}
}
