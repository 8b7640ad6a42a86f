package controller_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/fleet/hadiscovery"
	"github.com/chorus-edge/chorus/fleet/sqlite"
	"github.com/chorus-edge/chorus/gateway/poll"
)

const (
	haDev      = "pi.kitchen_1"
	haConfig   = "homeassistant/device/chorus_pi_dkitchen__1/config"
	haSkills   = "chorus/v1/pi.kitchen_1/skills"
	haUpdate   = "chorus/v1/pi.kitchen_1/skill/hello.chorus/update"
	haUpdateSt = "chorus/v1/pi.kitchen_1/skill/hello.chorus/update/set"
)

// newHAEnv is newEnv with the given Home Assistant settings (no jitter
// unless set) and an integration account, returned connected.
func newHAEnv(t *testing.T, ha controller.HomeAssistant) (*env, *brokertest.Client) {
	t.Helper()
	if ha.Jitter == nil {
		ha.Jitter = func() time.Duration { return 0 }
	}
	e := &env{t: t, dir: t.TempDir()}
	e.b = brokertest.Start(t, broker.Config{})
	op, opSecret := brokertest.NewOperator(t, "watcher")
	integ, integSecret := brokertest.NewIntegration(t, "ha")
	e.opName, e.opSecret, e.local = op.Username, opSecret, []broker.Account{op, integ}
	e.dbPath = filepath.Join(e.dir, "fleet.db")
	db, err := sqlite.Open(e.dbPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := controller.New(controller.Config{
		Store: db, Broker: e.b, LocalAccounts: e.local, ArtifactDir: filepath.Join(e.dir, "artifacts"),
		ValidateSkill: validateSkill, MQTTURL: e.b.URL(), ServerURL: "http://127.0.0.1:0",
		Logger: brokertest.Logger(t), Tick: 50 * time.Millisecond, RepublishAge: 500 * time.Millisecond,
		HomeAssistant: ha,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.db, e.ctl = db, ctl
	t.Cleanup(e.stop)
	return e, brokertest.MustConnect(t, e.b.Addr(), integ.Username, integSecret, brokertest.ConnectOptions{ClientID: "ha"})
}

type haSkill struct {
	ID      string `json:"id"`
	Version string `json:"version"`
	State   string `json:"state"`
	Active  bool   `json:"active"`
	Managed bool   `json:"managed"`
}

// report publishes a skills report as the device's agent.
func (a *agent) report(t *testing.T, skills ...haSkill) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"applied_version": 0, "skills": skills})
	if err != nil {
		t.Fatal(err)
	}
	a.pub(haSkills, b)
}

// nextConfig waits for the next discovery config on the watcher that
// satisfies ok (an empty payload is a removal: cmps nil).
func nextConfig(t *testing.T, w *brokertest.Client, what string, ok func(cmps map[string]map[string]any) bool) *paho.Publish {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		m := w.Expect(t, haConfig, time.Until(deadline))
		var c struct {
			Cmps map[string]map[string]any `json:"components"`
		}
		if len(m.Payload) > 0 {
			if err := json.Unmarshal(expandHA(t, m.Payload), &c); err != nil {
				t.Fatalf("config is not JSON: %v", err)
			}
		}
		if ok(c.Cmps) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("no config with %s", what)
		}
	}
}

func nextUpdate(t *testing.T, w *brokertest.Client, latest string) map[string]string {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		m := w.Expect(t, haUpdate, time.Until(deadline))
		var st map[string]string
		if len(m.Payload) > 0 && json.Unmarshal(m.Payload, &st) == nil && st["latest_version"] == latest {
			return st
		}
	}
}

// setup: a device reporting hello.chorus (fleet-managed, catalog 1.0.0) and
// local_skill, with its config and update state seen by the returned watcher.
func haSetup(t *testing.T) (*env, *agent, *brokertest.Client, *brokertest.Client) {
	t.Helper()
	e, integ := newHAEnv(t, controller.HomeAssistant{})
	w := e.watcher("homeassistant/#")
	creds := e.addDevice(haDev)
	a := e.startAgent(creds, 1, "silent")
	e.publish("hello.chorus", "1.0.0")
	a.report(t, haSkill{ID: "hello.chorus", Version: "1.0.0", State: "loaded", Active: true, Managed: true},
		haSkill{ID: "local_skill", State: "loaded", Active: true})
	nextConfig(t, w, "both skills", func(c map[string]map[string]any) bool {
		return c["switch_hello_dchorus"] != nil && c["update_hello_dchorus"] != nil && c["switch_local__skill"] != nil
	})
	// The skills' topics only now: under load the controller can publish a
	// config with one skill and the update state before the config with
	// both, and nextConfig skips what is not a config. Subscribed now, the
	// update state arrives retained if it was published already.
	w.Sub(t, "chorus/v1/"+haDev+"/skill/#")
	return e, a, w, integ
}

func TestHADiscoveryPublished(t *testing.T) {
	t.Parallel()
	e, a, w, _ := haSetup(t)
	st := nextUpdate(t, w, "1.0.0")
	if st["installed_version"] != "1.0.0" || st["title"] != "hello.chorus" {
		t.Fatalf("update state = %v", st)
	}
	// Retained: a late subscriber gets the config and the update state.
	late := e.watcher(haConfig)
	m := late.Expect(t, haConfig, waitFor)
	if !m.Retain {
		t.Fatal("config not retained")
	}
	var cfg struct {
		Dev  map[string]any            `json:"device"`
		Cmps map[string]map[string]any `json:"components"`
	}
	if err := json.Unmarshal(expandHA(t, m.Payload), &cfg); err != nil {
		t.Fatal(err)
	}
	if ids, _ := cfg.Dev["identifiers"].([]any); len(ids) != 1 || ids[0] != "chorus_pi_dkitchen__1" || cfg.Dev["sw_version"] != "test" {
		t.Fatalf("dev = %v", cfg.Dev)
	}
	if got := cfg.Cmps["switch_hello_dchorus"]["command_topic"]; got != "chorus/v1/pi.kitchen_1/skill/hello.chorus/set" {
		t.Fatalf("switch command topic = %v", got)
	}
	if _, ok := cfg.Cmps["update_local__skill"]; ok {
		t.Fatal("an unmanaged skill got an update entity")
	}

	// The same component set again (another state): no new config.
	a.report(t, haSkill{ID: "hello.chorus", Version: "1.0.0", State: "loading", Active: true, Managed: true},
		haSkill{ID: "local_skill", State: "loaded", Active: true})
	poll.Until(t, "report stored", waitFor, func() bool {
		d, _ := e.ctl.GetDevice(context.Background(), haDev)
		return d != nil && strings.Contains(string(d.Reported), "loading")
	})
	if m, ok := nextOn(w, haConfig, 500*time.Millisecond); ok {
		t.Fatalf("config re-published for an unchanged component set: %s", m.Payload)
	}

	// A new version in the catalog shows in the update state.
	e.publish("hello.chorus", "2.0.0")
	if st := nextUpdate(t, w, "2.0.0"); st["installed_version"] != "1.0.0" {
		t.Fatalf("update state = %v", st)
	}

	// local_skill goes away: its switch is withdrawn (platform only).
	a.report(t, haSkill{ID: "hello.chorus", Version: "1.0.0", State: "loaded", Active: true, Managed: true})
	nextConfig(t, w, "local_skill withdrawn", func(c map[string]map[string]any) bool {
		s := c["switch_local__skill"]
		return len(s) == 1 && s["platform"] == "switch" && c["switch_hello_dchorus"]["unique_id"] != nil
	})
}

func TestHARepublishedOnBirth(t *testing.T) {
	t.Parallel()
	_, _, w, integ := haSetup(t)
	nextUpdate(t, w, "1.0.0")
	integ.Pub(t, "homeassistant/status", []byte("offline"), false)
	if m, ok := nextOn(w, haConfig, 300*time.Millisecond); ok {
		t.Fatalf("config published on Home Assistant's offline: %s", m.Payload)
	}
	integ.Pub(t, "homeassistant/status", []byte("online"), false)
	nextConfig(t, w, "the skills, again", func(c map[string]map[string]any) bool { return c["switch_hello_dchorus"] != nil })
	nextUpdate(t, w, "1.0.0")
}

func TestHARemovedWithDevice(t *testing.T) {
	t.Parallel()
	e, _, w, _ := haSetup(t)
	nextUpdate(t, w, "1.0.0")
	if err := e.ctl.RemoveDevice(context.Background(), "test", haDev); err != nil {
		t.Fatal(err)
	}
	nextConfig(t, w, "an empty payload", func(c map[string]map[string]any) bool { return c == nil })
	if m := w.Expect(t, haUpdate, waitFor); len(m.Payload) != 0 {
		t.Fatalf("update state %q, want it cleared", m.Payload)
	}
	// Both were cleared retained: a new subscriber gets nothing retained
	// (the gateway's own config stays). A live clear may still arrive: the
	// removed device is reconciled once more and cleared again.
	late := e.watcher(haConfig)
	late.Sub(t, "chorus/v1/"+haDev+"/skill/#")
	for end := time.Now().Add(500 * time.Millisecond); ; {
		m, ok := late.Next(time.Until(end))
		if !ok {
			break
		}
		if m.Retain || len(m.Payload) > 0 {
			t.Fatalf("retained %s = %q left after removal", m.Topic, m.Payload)
		}
	}
}

func TestHAUpdateInstallCreatesRollout(t *testing.T) {
	t.Parallel()
	e, _, w, integ := haSetup(t)
	e.publish("hello.chorus", "2.0.0")
	nextUpdate(t, w, "2.0.0")
	integ.Pub(t, haUpdateSt, []byte("nonsense"), false) // ignored
	integ.Pub(t, haUpdateSt, []byte("install"), false)
	var rs []*fleet.Rollout
	poll.Until(t, "a rollout", waitFor, func() bool {
		rs, _ = e.ctl.ListRollouts(context.Background(), fleet.RolloutFilter{SkillID: "hello.chorus"})
		return len(rs) > 0
	})
	r := rs[0]
	if len(rs) != 1 || r.Version != "2.0.0" || r.Action != fleet.RolloutInstall || r.CreatedBy != controller.IntegrationActor ||
		len(r.Targets) != 1 || r.Targets[0] != fleet.DeviceTarget(haDev) {
		t.Fatalf("rollouts = %d, first %+v", len(rs), r)
	}
}

func TestHADisabled(t *testing.T) {
	t.Parallel()
	e, _ := newHAEnv(t, controller.HomeAssistant{Disabled: true})
	w := e.watcher("homeassistant/#")
	creds := e.addDevice(haDev)
	a := e.startAgent(creds, 1, "silent")
	a.report(t, haSkill{ID: "local_skill", State: "loaded", Active: true})
	poll.Until(t, "report stored", waitFor, func() bool {
		d, _ := e.ctl.GetDevice(context.Background(), haDev)
		return d != nil && len(d.Reported) > 0
	})
	if m, ok := w.Next(500 * time.Millisecond); ok {
		t.Fatalf("published %s while disabled", m.Topic)
	}
}

// nextOn returns the next message on topic within d, skipping others.
func nextOn(c *brokertest.Client, topic string, d time.Duration) (*paho.Publish, bool) {
	deadline := time.Now().Add(d)
	for {
		m, ok := c.Next(time.Until(deadline))
		if !ok {
			return nil, false
		}
		if m.Topic == topic {
			return m, true
		}
	}
}

// expandHA decodes a discovery config as Home Assistant does: its
// abbreviated keys back to full names (an empty payload stays empty).
func expandHA(t *testing.T, payload []byte) []byte {
	t.Helper()
	if len(payload) == 0 {
		return payload
	}
	b, err := hadiscovery.ExpandJSON(payload)
	if err != nil {
		t.Fatalf("discovery config: %v", err)
	}
	return b
}
