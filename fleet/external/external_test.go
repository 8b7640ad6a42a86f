package external

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"sync"
	"testing"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/skillcred"
)

func testAuth(t *testing.T) (Auth, string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := broker.NewTable(
		broker.DeviceAccount("pi-1", broker.HashSecret("dev-secret"), pub, 2),
		broker.DeviceAccount("pi-2", broker.HashSecret("other"), pub, 1),
		broker.IntegrationAccount("ha", broker.HashSecret("int-secret"), "speak"),
		broker.OperatorAccount("alice", broker.HashSecret("op-secret")),
	)
	if err != nil {
		t.Fatal(err)
	}
	a := Auth{Table: func() *broker.Table { return tbl }, Super: Superuser{Username: "controller", Password: "ctl"}}
	return a, skillcred.Mint(priv, 2, "pi-1", "hello")
}

func TestAuthenticate(t *testing.T) {
	a, skillPW := testAuth(t)
	for _, c := range []struct {
		user, pw  string
		ok, super bool
	}{
		{"pi-1", "dev-secret", true, false},
		{"pi-1", "dev-secreT", false, false},
		{"pi-1", "", false, false},
		{"nobody", "dev-secret", false, false},
		{"integration:ha", "int-secret", true, false},
		{"operator:alice", "op-secret", true, false},
		{"skill:pi-1:hello", skillPW, true, false},
		{"skill:pi-1:other", skillPW, false, false}, // signature names another skill
		{"skill:pi-2:hello", skillPW, false, false}, // another device's key version
		{"controller", "ctl", true, true},
		{"controller", "nope", false, false},
	} {
		ok, super := a.Authenticate(c.user, c.pw)
		if ok != c.ok || super != c.super {
			t.Errorf("Authenticate(%q, %q) = %v, %v; want %v, %v", c.user, c.pw, ok, super, c.ok, c.super)
		}
	}
	if ok, _ := (Auth{}).Authenticate("pi-1", "dev-secret"); ok {
		t.Error("no table: authenticated")
	}
	if ok, _ := (Auth{Table: func() *broker.Table { return nil }, Super: Superuser{Username: "controller"}}).Authenticate("controller", ""); ok {
		t.Error("superuser without a password authenticated")
	}
}

// The rows of docs/security.md's ACL matrix that an HTTP authz backend can decide.
func TestAuthorize(t *testing.T) {
	a, _ := testAuth(t)
	const pub, sub = ActionPublish, ActionSubscribe
	for _, c := range []struct {
		user, topic, action string
		retain, want        bool
	}{
		{"pi-1", "chorus/v1/pi-1/availability", pub, true, true},
		{"pi-1", "chorus/v1/pi-1/skills", pub, true, true},
		{"pi-1", "chorus/v1/pi-1/bus/speak", pub, false, true},
		{"pi-1", "chorus/v1/pi-1/bus/speak", pub, true, false}, // retained bus message
		{"pi-1", "chorus/v1/pi-1/desired", pub, true, false},
		{"pi-1", "chorus/v1/pi-1/skill/x/update", pub, false, false},
		{"pi-1", "chorus/v1/pi-2/bus/speak", pub, false, false},
		{"pi-1", "chorus/v1/pi-1/#", sub, false, true},
		{"pi-1", "chorus/v1/pi-2/#", sub, false, false},
		{"pi-1", "chorus/v1/#", sub, false, false},
		{"skill:pi-1:hello", "chorus/v1/pi-1/bus/speak", pub, false, true},
		{"skill:pi-1:hello", "chorus/v1/pi-1/bus/skillmanager.activate", pub, false, false},
		{"skill:pi-1:hello", "chorus/v1/pi-1/skills", pub, false, false},
		{"skill:pi-1:hello", "chorus/v1/pi-1/bus/+", sub, false, true},
		{"skill:pi-1:hello", "chorus/v1/pi-1/desired", sub, false, false},
		{"integration:ha", "chorus/v1/#", sub, false, true},
		{"integration:ha", "homeassistant/#", sub, false, true},
		{"integration:ha", "chorus/v1/pi-2/skill/x/set", pub, false, true},
		{"integration:ha", "chorus/v1/pi-2/skill/x/set", pub, true, false},
		{"integration:ha", "chorus/v1/pi-2/bus/speak", pub, false, true},
		{"integration:ha", "chorus/v1/pi-2/bus/recognizer_loop:utterance", pub, false, false},
		{"integration:ha", "chorus/v1/pi-2/desired", pub, true, false},
		{"operator:alice", "chorus/v1/pi-2/bus/x", pub, false, true},
		{"operator:alice", "$SYS/#", sub, false, true},
		{"operator:alice", "chorus/v1/pi-2/skill/x/set", pub, false, false},
		{"controller", "chorus/v1/pi-1/desired", pub, true, true},
		{"nobody", "chorus/v1/#", sub, false, false},
		{"pi-1", "chorus/v1/pi-1/#", "all", false, false},
	} {
		if got := a.Authorize(c.user, c.topic, c.action, c.retain); got != c.want {
			t.Errorf("Authorize(%q, %q, %s, retain=%v) = %v; want %v", c.user, c.topic, c.action, c.retain, got, c.want)
		}
	}
}

type fakeTransport struct {
	mu   sync.Mutex
	pubs []bus.Packet
	subs map[string]func(bus.Packet)
}

func (f *fakeTransport) Publish(_ context.Context, p bus.Packet) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pubs = append(f.pubs, p)
	return nil
}

func (f *fakeTransport) Subscribe(_ context.Context, filter string, h func(bus.Packet)) (func(), error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs == nil {
		f.subs = map[string]func(bus.Packet){}
	}
	f.subs[filter] = h
	return func() {}, nil
}

func TestAdapter(t *testing.T) {
	ft := &fakeTransport{}
	a := New(ft)
	err := a.Publish(broker.Message{Topic: "chorus/v1/pi-1/desired", Payload: []byte("{}"), QoS: 1, Retain: true,
		ContentType: "application/json", User: broker.UserProperties{{Key: "k", Value: "v"}}})
	if err != nil {
		t.Fatal(err)
	}
	p := ft.pubs[0]
	if p.Topic != "chorus/v1/pi-1/desired" || !p.Retain || p.QoS != 1 || p.ContentType != "application/json" || p.User.Get("k") != "v" {
		t.Fatalf("published %+v", p)
	}
	var got broker.Message
	if _, err := a.Subscribe("chorus/v1/+/skills", func(m broker.Message) { got = m }); err != nil {
		t.Fatal(err)
	}
	ft.subs["chorus/v1/+/skills"](bus.Packet{Topic: "chorus/v1/pi-1/skills", Payload: []byte("x"), Retain: true, User: broker.UserProperties{{Key: "b", Value: "2"}, {Key: "a", Value: "1"}}})
	if got.Topic != "chorus/v1/pi-1/skills" || !got.Retain || len(got.User) != 2 || got.User[0].Key != "b" { // in the order sent
		t.Fatalf("delivered %+v", got)
	}
	if a.Table() != nil {
		t.Fatal("table before SetTable")
	}
	tbl, _ := broker.NewTable()
	a.SetTable(tbl)
	if a.Table() != tbl {
		t.Fatal("SetTable not recorded")
	}
}
