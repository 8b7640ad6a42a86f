package controller_test

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/controller"
)

const (
	gwConfig = "homeassistant/device/chorus_gateway/config"
	gwFleet  = "chorus/v1/gateway/fleet"
)

// TestHAGatewayDevice: issue #7. The gateway publishes its own device (the
// one every satellite names as via_device) with sensors over a retained
// fleet summary that integrations may read, and publishes both again on
// Home Assistant's birth.
func TestHAGatewayDevice(t *testing.T) {
	t.Parallel()
	e, integ := newHAEnv(t, controller.HomeAssistant{Version: "9.9.9"})
	ctx := context.Background()
	w := e.watcher("homeassistant/#") // wildcards first (see haSetup)
	w.Sub(t, "chorus/v1/gateway/#")
	a := e.startAgent(e.addDevice(haDev), 1, "silent")
	e.publish("hello.chorus", "1.0.0")
	a.report(t, haSkill{ID: "hello.chorus", Version: "1.0.0", State: "loaded", Active: true, Managed: true},
		haSkill{ID: "local_skill", State: "loaded", Active: true})

	w.Expect(t, gwConfig, waitFor)
	m := e.watcher(gwConfig).Expect(t, gwConfig, waitFor) // from the retained store
	if !m.Retain || m.Properties == nil || m.Properties.ContentType != "application/json" {
		t.Fatalf("gateway config: retain=%v properties=%+v", m.Retain, m.Properties)
	}
	var gw struct {
		Dev  map[string]any            `json:"device"`
		O    map[string]any            `json:"origin"`
		Avty string                    `json:"availability_topic"`
		Cmps map[string]map[string]any `json:"components"`
	}
	if err := json.Unmarshal(expandHA(t, m.Payload), &gw); err != nil {
		t.Fatal(err)
	}
	var sat struct {
		Dev map[string]any `json:"device"`
	}
	if err := json.Unmarshal(expandHA(t, e.watcher(haConfig).Expect(t, haConfig, waitFor).Payload), &sat); err != nil {
		t.Fatal(err)
	}
	ids, _ := gw.Dev["identifiers"].([]any)
	fields := []struct {
		name      string
		got, want any
	}{
		{"dev.identifiers is the satellites' via_device", len(ids) == 1 && ids[0] == sat.Dev["via_device"], true},
		{"dev.name", gw.Dev["name"], "Chorus gateway"},
		{"dev.model", gw.Dev["model"], "Chorus gateway"},
		{"dev.sw_version", gw.Dev["sw_version"], "9.9.9"},
		{"dev.via_device", gw.Dev["via_device"], nil},
		{"o.name", gw.O["name"], "chorus"},
		{"o.sw_version", gw.O["sw_version"], "9.9.9"},
		{"availability_topic", gw.Avty, "chorus/v1/gateway/availability"},
		{"components", len(gw.Cmps), 4},
	}
	for _, f := range fields {
		if f.got != f.want {
			t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
		}
	}

	// A rollout to the silent agent stays active.
	if _, err := e.ctl.CreateRollout(ctx, "test", &fleet.Rollout{SkillID: "hello.chorus", Action: fleet.RolloutInstall,
		Targets: []fleet.Target{fleet.DeviceTarget(haDev)}}); err != nil {
		t.Fatal(err)
	}
	summary := waitFleet(t, w, map[string]float64{"devices": 1, "devices_online": 1, "skills_loaded": 2, "rollouts_active": 1})
	// Every component is a sensor on the summary whose template reads one of its fields.
	field := regexp.MustCompile(`^\{\{ value_json\.([a-z_]+) \}\}$`)
	for key, c := range gw.Cmps {
		tpl, _ := c["value_template"].(string)
		f := field.FindStringSubmatch(tpl)
		if c["platform"] != "sensor" || c["state_topic"] != gwFleet || f == nil {
			t.Errorf("component %s = %v", key, c)
			continue
		}
		if _, ok := summary[f[1]]; !ok {
			t.Errorf("component %s reads %q, not in the summary %v", key, f[1], summary)
		}
	}

	// The summary follows the fleet: a skill fails, the device goes offline,
	// a second device is registered.
	a.report(t, haSkill{ID: "hello.chorus", Version: "1.0.0", State: "failed", Managed: true},
		haSkill{ID: "local_skill", State: "loaded", Active: true})
	a.pub("chorus/v1/"+haDev+"/availability", []byte("offline"))
	e.addDevice("pi-2")
	after := map[string]float64{"devices": 2, "devices_online": 0, "skills_loaded": 1, "rollouts_active": 1}
	waitFleet(t, w, after)

	// An integration reads the summary from the retained store (ACL).
	integ.Sub(t, gwFleet)
	if m := integ.Expect(t, gwFleet, waitFor); !m.Retain {
		t.Fatal("fleet summary not retained")
	}

	// Home Assistant's birth: the gateway's config and summary again.
	integ.Pub(t, "homeassistant/status", []byte("online"), false)
	w.Expect(t, gwConfig, waitFor)
	waitFleet(t, w, after)
}

// TestFleetSummaryWithoutHA: the summary is part of the tree and published
// with Home Assistant off; the gateway's config is not.
func TestFleetSummaryWithoutHA(t *testing.T) {
	t.Parallel()
	e, _ := newHAEnv(t, controller.HomeAssistant{Disabled: true})
	w := e.watcher("homeassistant/#")
	w.Sub(t, gwFleet)
	e.addDevice(haDev)
	waitFleet(t, w, map[string]float64{"devices": 1, "devices_online": 0, "skills_loaded": 0, "rollouts_active": 0})
	if m, ok := nextOn(w, gwConfig, 300*time.Millisecond); ok {
		t.Fatalf("gateway config published with Home Assistant off: %s", m.Payload)
	}
}

// waitFleet waits for a fleet summary with the wanted fields and returns it.
func waitFleet(t *testing.T, w *brokertest.Client, want map[string]float64) map[string]any {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	var last map[string]any
	for {
		m, ok := nextOn(w, gwFleet, time.Until(deadline))
		if !ok {
			t.Fatalf("no fleet summary %v; last %v", want, last)
		}
		last = nil
		if err := json.Unmarshal(m.Payload, &last); err != nil {
			t.Fatalf("fleet summary %q: %v", m.Payload, err)
		}
		if matches(last, want) {
			return last
		}
	}
}

func matches(got map[string]any, want map[string]float64) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return len(got) == len(want)
}
