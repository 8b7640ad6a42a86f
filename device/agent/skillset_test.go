package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// A Home Assistant skill switch: an integration publishing OFF on
// skill/<id>/set deactivates the skill (the skills topic follows, the
// choice is persisted), ON activates it again; other payloads change nothing.
func TestSkillSwitch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	integ, secret := brokertest.NewIntegration(t, "ha")
	f.b = brokertest.Start(t, broker.Config{}, f.dev.Account, integ)
	obs := brokertest.MustConnect(t, f.b.Addr(), integ.Username, secret, brokertest.ConnectOptions{ClientID: "ha"})
	obs.Sub(t, "chorus/v1/pi-1/skills")
	f.cfg.MQTTURL = "mqtt://" + f.b.Addr()
	bundled := f.cfg.Bundled[0]
	writeSkill(t, filepath.Join(bundled, "hello"), "hello.chorus")

	a, err := Start(context.Background(), f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	waitSkill(t, obs, "hello.chorus", "loaded", true)

	const set = "chorus/v1/pi-1/skill/hello.chorus/set"
	for _, p := range []string{"toggle", "on", ""} {
		if rc := obs.Pub(t, set, []byte(p), false); rc != 0 {
			t.Fatalf("publish %q on %s: reason %#x", p, set, rc)
		}
	}
	if rc := obs.Pub(t, set, []byte("OFF"), false); rc != 0 {
		t.Fatalf("publish OFF: reason %#x", rc)
	}
	waitSkill(t, obs, "hello.chorus", "inactive", false)
	// The report can show the skill inactive a moment before the file is written.
	var b []byte
	var rerr error
	if err := poll.Wait(context.Background(), "inactive set persisted", wait, func() bool {
		b, rerr = os.ReadFile(filepath.Join(f.cfg.DataDir, "inactive.json"))
		return rerr == nil && strings.Contains(string(b), "hello.chorus")
	}); err != nil {
		t.Fatalf("%v: %q %v", err, b, rerr)
	}

	obs.Pub(t, set, []byte("ON"), false)
	waitSkill(t, obs, "hello.chorus", "loaded", true)
}

func writeSkill(t *testing.T, dir, id string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	md := "---\nname: " + id + "\nversion: 1.0.0\nexec: run.sh\nready: on-start\n---\nA test skill.\n"
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// waitSkill waits for a skills report in which id has state and active.
func waitSkill(t *testing.T, obs *brokertest.Client, id, state string, active bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		m := obs.Expect(t, "chorus/v1/pi-1/skills", time.Until(deadline))
		var rep struct {
			Skills []struct {
				ID, State string
				Active    bool
			}
		}
		if err := json.Unmarshal(m.Payload, &rep); err != nil {
			t.Fatal(err)
		}
		for _, s := range rep.Skills {
			if s.ID == id && s.State == state && s.Active == active {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no report with %s %s active=%v", id, state, active)
		}
	}
}
