//go:build !chorus_agent

package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/gateway/poll"
)

// fleetOnline reads the registry's online flags with `chorus fleet device list`.
func fleetOnline(t *testing.T, work, gw string) map[string]bool {
	t.Helper()
	out, err := runChorus(t, work, "fleet", "device", "list", "-o", "json", "--data-dir", gw)
	if err != nil {
		return nil
	}
	var list struct {
		Devices []struct {
			ID     string `json:"id"`
			Online bool   `json:"online"`
		} `json:"devices"`
	}
	if json.Unmarshal([]byte(out), &list) != nil {
		return nil
	}
	m := map[string]bool{}
	for _, d := range list.Devices {
		m[d.ID] = d.Online
	}
	return m
}

func waitOnline(t *testing.T, work, gw string, want map[string]bool) {
	t.Helper()
	var got map[string]bool
	if err := poll.Wait(context.Background(), "the devices' online states", 30*time.Second, func() bool {
		got = fleetOnline(t, work, gw)
		ok := got != nil
		for id, on := range want {
			if got[id] != on {
				ok = false
			}
		}
		return ok
	}); err != nil {
		t.Fatalf("%v: online = %v, want %v", err, got, want)
	}
}

// Issue 16 point 4: `install --all --wait` with one device offline (an
// agent that was enrolled, ran and stopped) ends once every online device
// finished, names the offline device and why, and exits 3 ("not done");
// a skill that needs the internet, on agents without it (no check URL is
// configured, so the agents report no internet), counts as installed and
// says it waits for the internet instead of timing out.
func TestRolloutFinishesWithOfflineDeviceE2E(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	gw := filepath.Join(work, "gateway")
	g := startChorus(t, work, "gateway", "--data-dir", gw, "--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0")
	waitUp(t, g, gw)
	fleet := func(args ...string) []string { return append(append([]string{"fleet"}, args...), "--data-dir", gw) }

	agents := map[string]*proc{}
	for _, d := range []string{"pi-1", "pi-2", "pi-3"} {
		creds := filepath.Join(work, d+".json")
		mustChorus(t, work, fleet("device", "add", d, "--credentials-out", creds)...)
		agents[d] = startChorus(t, work, "agent", "--credentials", creds, "--data-dir", filepath.Join(work, "agent-"+d),
			"--skills", t.TempDir(), "--ws-listen", "off")
	}
	waitOnline(t, work, gw, map[string]bool{"pi-1": true, "pi-2": true, "pi-3": true})
	if err := agents["pi-3"].stop(t, 30*time.Second); err != nil {
		t.Fatalf("pi-3's agent: %v", err)
	}
	waitOnline(t, work, gw, map[string]bool{"pi-1": true, "pi-2": true, "pi-3": false})

	skill := filepath.Join(work, "fleet.weather")
	os.MkdirAll(skill, 0o755)
	os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: fleet.weather\ndescription: Tells the weather.\n"+
		"version: 1.0.0\nexec: run.sh\nrequirements: internet\n---\nWeather.\n"), 0o644)
	os.WriteFile(filepath.Join(skill, "run.sh"), []byte("#!/bin/sh\nexec \"$CHORUS_BIN\" skill example hello\n"), 0o755)
	mustChorus(t, work, fleet("skill", "publish", skill)...)

	// --timeout is per device and far off: the wait must end because only
	// the offline device is left, not because anything timed out.
	cmd := exec.Command(chorusBin, fleet("install", "fleet.weather", "--all", "--timeout", "10m", "--wait")...)
	cmd.Dir = work
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("install --wait did not end with pi-3 offline:\n%s", out)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != fleetNotDone {
		t.Fatalf("install --wait: %v, want exit %d\n%s", err, fleetNotDone, out)
	}
	for _, want := range []string{"  pi-3: queued: offline since 20", "rollout 1 not done", "1 left waiting for offline devices"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("install --wait output lacks %q:\n%s", want, out)
		}
	}

	show := mustChorus(t, work, fleet("rollout", "show", "1")...)
	for _, d := range []string{"pi-1", "pi-2"} {
		if !rowHas(show, d, "succeeded", "installed, waiting for internet") {
			t.Errorf("rollout show: %s is not succeeded and waiting for internet:\n%s", d, show)
		}
	}
	if !rowHas(show, "pi-3", "queued", "offline since 20") {
		t.Errorf("rollout show: pi-3 is not queued as offline:\n%s", show)
	}
	if !strings.Contains(show, "in_progress") || strings.Contains(show, "timed_out") {
		t.Errorf("rollout show: want the rollout in progress and nothing timed out:\n%s", show)
	}

	// The API says the same, with the execution blocked.
	js := mustChorus(t, work, fleet("rollout", "show", "1", "-o", "json")...)
	var d struct {
		Executions []struct {
			DeviceID string `json:"device_id"`
			State    string `json:"state"`
			Reason   string `json:"reason"`
			Blocked  bool   `json:"blocked"`
		} `json:"executions"`
	}
	if err := json.Unmarshal([]byte(js), &d); err != nil {
		t.Fatal(err)
	}
	for _, x := range d.Executions {
		if x.DeviceID == "pi-3" && (!x.Blocked || !strings.HasPrefix(x.Reason, "offline since ")) {
			t.Errorf("API pi-3: %+v", x)
		}
	}
}

// rowHas reports whether a table line starting with id holds every word.
func rowHas(table, id string, words ...string) bool {
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, id+" ") {
			continue
		}
		for _, w := range words {
			if !strings.Contains(line, w) {
				return false
			}
		}
		return true
	}
	return false
}
