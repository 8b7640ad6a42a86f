//go:build !chorus_agent

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/gateway/loopbackport"
)

// runChorus runs one chorus command to completion and returns its output.
func runChorus(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(chorusBin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustChorus(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := runChorus(t, dir, args...)
	if err != nil {
		t.Fatalf("chorus %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// writeFleetSkill writes a skill that runs the bundled hello example under
// another id, so it needs no build step.
func writeFleetSkill(t *testing.T, dir, id, version string) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(fmt.Sprintf(
		"---\nname: %s\ndescription: A fleet-managed greeting.\nversion: %s\nexec: run.sh\n---\nGreets.\n", id, version)), 0o644)
	os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\nexec \"$CHORUS_BIN\" skill example hello\n"), 0o755)
}

// The fleet scenario, driven as an operator would: a gateway, three
// agents with their own data dirs, a published skill rolled out to a tag
// with a canary, then uninstalled.
func TestFleetE2E(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	gw := filepath.Join(work, "gateway")
	g := startChorus(t, work, "gateway", "--data-dir", gw, "--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0")
	up := waitUp(t, g, gw)
	fleetArgs := func(args ...string) []string { return append(args, "--data-dir", gw) }

	devices := []string{"pi-1", "pi-2", "pi-3"}
	for _, d := range devices {
		creds := filepath.Join(work, d+".json")
		mustChorus(t, work, fleetArgs("fleet", "device", "add", d, "--tag", "kitchen", "--credentials-out", creds)...)
		startChorus(t, work, "agent", "--credentials", creds, "--data-dir", filepath.Join(work, "agent-"+d),
			"--skills", t.TempDir(), "--ws-listen", "off")
	}

	obs := brokertest.MustConnect(t, mqttAddr(t, up.MQTTURL), up.Observer.Username, up.Observer.Password, brokertest.ConnectOptions{ClientID: "obs"})
	obs.Sub(t, "chorus/v1/+/skills")
	skills := filepath.Join(work, "fleet.hello")
	writeFleetSkill(t, skills, "fleet.hello", "1.0.0")
	mustChorus(t, work, fleetArgs("fleet", "skill", "publish", skills)...)

	// A typo is refused with a suggestion and installs nothing.
	out, err := runChorus(t, work, fleetArgs("fleet", "install", "fleet.helo", "--tag", "kitchen")...)
	if err == nil || !strings.Contains(out, "fleet.hello") {
		t.Fatalf("install with a typo: %v\n%s", err, out)
	}

	mustChorus(t, work, fleetArgs("fleet", "install", "fleet.hello", "--tag", "kitchen", "--canary", "1",
		"--timeout", "60s", "--wait", "--poll-interval", "200ms")...)
	waitAllSkills(t, obs, devices, func(s map[string]string) bool { return s["fleet.hello"] == "loaded" })

	mustChorus(t, work, fleetArgs("fleet", "uninstall", "fleet.hello", "--tag", "kitchen", "--timeout", "60s", "--wait", "--poll-interval", "200ms")...)
	waitAllSkills(t, obs, devices, func(s map[string]string) bool { _, ok := s["fleet.hello"]; return !ok })

	list := mustChorus(t, work, fleetArgs("fleet", "device", "list")...)
	for _, d := range devices {
		if !strings.Contains(list, d) {
			t.Fatalf("device list lacks %s:\n%s", d, list)
		}
	}
	if audit := mustChorus(t, work, fleetArgs("fleet", "audit")...); !strings.Contains(audit, "fleet.hello") {
		t.Fatalf("audit lacks the rollout:\n%s", audit)
	}
}

// waitAllSkills waits until every device's retained skills payload satisfies cond.
func waitAllSkills(t *testing.T, c *brokertest.Client, devices []string, cond func(map[string]string) bool) {
	t.Helper()
	done := map[string]bool{}
	deadline := time.Now().Add(60 * time.Second)
	for len(done) < len(devices) {
		m, ok := c.Next(time.Until(deadline))
		if !ok {
			t.Fatalf("devices done: %v of %v", done, devices)
		}
		dev := strings.TrimSuffix(strings.TrimPrefix(m.Topic, "chorus/v1/"), "/skills")
		var s skillsTopic
		if len(m.Payload) > 0 && json.Unmarshal(m.Payload, &s) == nil {
			states := map[string]string{}
			for _, sk := range s.Skills {
				states[sk.ID] = sk.State
			}
			if cond(states) {
				done[dev] = true
			} else {
				delete(done, dev)
			}
		}
	}
}

// A backup taken while the gateway runs, restored into an empty data dir,
// brings back the registry, the catalog and the assignments: an agent with
// its old credentials and an empty disk converges on the restored gateway.
//
// The restored gateway listens on the first one's ports, which are its own
// (gateway/loopbackport: no 127.0.0.1:0 listener is handed one while it is
// free), so the test runs beside others.
func TestBackupRestoreE2E(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	gwA := filepath.Join(work, "gateway-a")
	g := startChorus(t, work, "gateway", "--data-dir", gwA, "--mqtt-listen", loopbackport.Addr(t), "--http-listen", loopbackport.Addr(t))
	up := waitUp(t, g, gwA)
	creds := filepath.Join(work, "pi-1.json")
	mustChorus(t, work, "fleet", "device", "add", "pi-1", "--tag", "kitchen", "--credentials-out", creds, "--data-dir", gwA)
	agent := startChorus(t, work, "agent", "--credentials", creds, "--data-dir", filepath.Join(work, "agent-1"), "--skills", t.TempDir(), "--ws-listen", "off")
	skill := filepath.Join(work, "fleet.hello")
	writeFleetSkill(t, skill, "fleet.hello", "1.0.0")
	mustChorus(t, work, "fleet", "skill", "publish", skill, "--data-dir", gwA)
	// install --wait ends once every online device finished: pi-1 must be
	// online first, or it ends at once with pi-1 waiting offline (exit 3),
	// as it did under load once the test ran beside others.
	waitOnline(t, work, gwA, map[string]bool{"pi-1": true})
	mustChorus(t, work, "fleet", "install", "fleet.hello", "--tag", "kitchen", "--timeout", "60s", "--wait", "--poll-interval", "200ms", "--data-dir", gwA)

	archive := filepath.Join(work, "backup.tar.gz")
	mustChorus(t, work, "gateway", "backup", archive, "--data-dir", gwA)
	if err := agent.stop(t, 15*time.Second); err != nil {
		t.Fatalf("agent exit: %v", err)
	}
	if err := g.stop(t, 10*time.Second); err != nil {
		t.Fatalf("gateway exit: %v", err)
	}

	gwB := filepath.Join(work, "gateway-b")
	mustChorus(t, work, "gateway", "restore", archive, "--data-dir", gwB)
	g2 := startChorus(t, work, "gateway", "--data-dir", gwB, "--mqtt-listen", mqttAddr(t, up.MQTTURL),
		"--http-listen", strings.TrimPrefix(up.HTTPURL, "http://"))
	up2 := waitUp(t, g2, gwB)
	obs := brokertest.MustConnect(t, mqttAddr(t, up2.MQTTURL), up2.Observer.Username, up2.Observer.Password, brokertest.ConnectOptions{ClientID: "obs"})
	obs.Sub(t, "chorus/v1/+/skills")
	startChorus(t, work, "agent", "--credentials", creds, "--data-dir", filepath.Join(work, "agent-1-new"), "--skills", t.TempDir(), "--ws-listen", "off")
	waitAllSkills(t, obs, []string{"pi-1"}, func(s map[string]string) bool { return s["fleet.hello"] == "loaded" })
	if out := mustChorus(t, work, "fleet", "skill", "list", "--data-dir", gwB); !strings.Contains(out, "fleet.hello") {
		t.Fatalf("restored catalog:\n%s", out)
	}
}

// The README's "satellite and hub" example, as written: one gateway, two
// real agents, one route; an utterance on the satellite is answered by the
// hub's echo-hub skill and the answer is spoken on the satellite.
func TestSatelliteHubE2E(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	gw := filepath.Join(work, "chorus-data")
	g := startChorus(t, work, "gateway", "--data-dir", gw, "--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0")
	waitUp(t, g, gw)
	mustChorus(t, work, "fleet", "device", "add", "hub", "--credentials-out", "hub.json")
	mustChorus(t, work, "fleet", "device", "add", "pi-kitchen", "--credentials-out", "pi-kitchen.json")
	mustChorus(t, work, "fleet", "route", "add", "pi-kitchen", "--hub", "hub")
	hub := startChorus(t, work, "agent", "--credentials", "hub.json", "--skills", filepath.Join(mustAbs(t, "../../configs/skills")),
		"--data-dir", "./hub-data", "--ws-listen", "off")
	startChorus(t, work, "agent", "--credentials", "pi-kitchen.json", "--data-dir", "./sat-data", "--ws-listen", "off")

	// The hub's echo-hub skill must be loaded before the utterance is sent.
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(hub.out.String(), "echo-hub.chorus") || !strings.Contains(hub.out.String(), "skill manager ready") {
		if time.Now().After(deadline) {
			t.Fatalf("hub never became ready:\n%s", hub.out.String())
		}
		time.Sleep(100 * time.Millisecond) // poll interval, bounded by the deadline
	}
	listen := startChorus(t, work, "bus", "listen", "speak", "--device", "pi-kitchen")
	for !strings.Contains(listen.out.String(), "subscribed") {
		if time.Now().After(deadline) {
			t.Fatalf("listen never subscribed:\n%s", listen.out.String())
		}
		time.Sleep(50 * time.Millisecond) // poll interval, bounded by the deadline
	}
	for {
		// Resend until answered: the hub's skill may still be connecting its bus.
		mustChorus(t, work, "bus", "send", "recognizer_loop:utterance", "--device", "pi-kitchen", "--data", `{"utterances": ["good morning"]}`)
		wait := time.Now().Add(3 * time.Second)
		for time.Now().Before(wait) {
			if strings.Contains(listen.out.String(), "You said: good morning") {
				return
			}
			time.Sleep(50 * time.Millisecond) // poll interval, bounded
		}
		if time.Now().After(deadline) {
			t.Fatalf("no speak on the satellite:\n%s\nhub:\n%s", listen.out.String(), hub.out.String())
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
