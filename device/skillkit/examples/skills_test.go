package examples_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/device/process"
	"github.com/chorus-edge/chorus/device/skillkit"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/topic"
)

const (
	testDevice = "pi-kitchen"
	wait       = 15 * time.Second
)

func skillkitConfig() skillkit.Config {
	return skillkit.Config{Logger: slog.New(slog.DiscardHandler)}
}

// harness is a real broker, the device's agent connection and a launcher
// that runs the bundled skills with this test binary as CHORUS_BIN.
type harness struct {
	agent    *brokertest.Client
	launcher *process.Launcher
	settings string
	catalog  *discovery.Catalog
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	dev := brokertest.NewDevice(t, testDevice)
	b := brokertest.Start(t, broker.Config{}, dev.Account)
	agent := brokertest.MustConnect(t, b.Addr(), testDevice, dev.Secret, brokertest.ConnectOptions{ClientID: "agent", CleanStart: true})
	filter, err := topic.BusFilter(testDevice)
	if err != nil {
		t.Fatal(err)
	}
	if rc := agent.Sub(t, filter); rc > 2 {
		t.Fatalf("subscribe %s: reason 0x%02x", filter, rc)
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cat, err := discovery.Discover(discovery.Config{Bundled: []string{bundledSkills}})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	return &harness{
		agent:    agent,
		settings: root,
		catalog:  cat,
		launcher: process.NewLauncher(process.Config{
			MQTTURL: b.URL(), Device: testDevice, Key: dev.Key, KeyVersion: 1,
			SettingsRoot: root, Bin: bin, StopGrace: 5 * time.Second, Logger: brokertest.Logger(t),
		}),
	}
}

// start launches the bundled skill id and waits for its chorus.skill.ready.
// At cleanup it stops the skill and checks that it exited cleanly.
func (h *harness) start(t *testing.T, id string) *process.Process {
	t.Helper()
	s, ok := h.catalog.Get(id)
	if !ok {
		t.Fatalf("skill %s not discovered", id)
	}
	p, err := h.launcher.Start(s)
	if err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	t.Cleanup(func() {
		if err := p.Stop(context.Background()); err != nil {
			t.Errorf("stop %s: %v", id, err)
		}
		if err := p.ExitErr(); err != nil {
			t.Errorf("%s exit after SIGTERM: %v; tail %q", id, err, p.Tail())
		}
	})
	ready := h.expect(t, skillkit.TypeReady, p)
	if got := ready.Data["skill_id"]; got != id {
		t.Fatalf("chorus.skill.ready skill_id = %v, want %s", got, id)
	}
	return p
}

// send publishes m on the device's bus with correlation data corr.
func (h *harness) send(t *testing.T, m envelope.Message, corr string) {
	t.Helper()
	name, err := topic.Bus(testDevice, m.Type)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := envelope.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	pub := &paho.Publish{Topic: name, QoS: 1, Payload: payload, Properties: &paho.PublishProperties{CorrelationData: []byte(corr)}}
	if r, err := h.agent.Publish(ctx, pub); err != nil || r.ReasonCode != 0 {
		t.Fatalf("publish %s: %v %+v", name, err, r)
	}
}

// expectRaw waits for the next message of msgType on the bus, failing
// early when the skill exits.
func (h *harness) expectRaw(t *testing.T, msgType string, p *process.Process) (*paho.Publish, envelope.Message) {
	t.Helper()
	name, err := topic.Bus(testDevice, msgType)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); {
		select {
		case <-p.Done():
			t.Fatalf("skill exited waiting for %s: %v; tail %q", msgType, p.ExitErr(), p.Tail())
		default:
		}
		pub, ok := h.agent.Next(50 * time.Millisecond)
		if !ok || pub.Topic != name {
			continue
		}
		m, err := envelope.Decode(pub.Payload)
		if err != nil {
			t.Fatalf("decode %s: %v", name, err)
		}
		return pub, m
	}
	t.Fatalf("no %s within %s; skill tail %q", msgType, wait, p.Tail())
	return nil, envelope.Message{}
}

func (h *harness) expect(t *testing.T, msgType string, p *process.Process) envelope.Message {
	t.Helper()
	_, m := h.expectRaw(t, msgType, p)
	return m
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
