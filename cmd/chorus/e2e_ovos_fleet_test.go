//go:build !chorus_agent

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/device/ovosrt/ovostest"
)

// The second "done when": an OVOS skill's Python source tree,
// packed with `chorus skill pack`, is rolled out from the gateway to two
// agents, which install its wheel offline and run it under the (stand-in)
// launcher; the uninstall removes it with its Python packages; an archive
// with a broken wheel fails the execution with pip's error.
func TestFleetOVOSSkillE2E(t *testing.T) {
	t.Parallel()
	launcher := ovostest.Launcher(t)
	ovostest.NeedPip(t)
	work := t.TempDir()
	gw := filepath.Join(work, "gateway")
	g := startChorus(t, work, "gateway", "--data-dir", gw, "--mqtt-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0")
	up := waitUp(t, g, gw)
	fleetArgs := func(args ...string) []string { return append(args, "--data-dir", gw) }

	conf := filepath.Join(work, "agent.json")
	cfg := `{"skills": {"ovos": {"launcher": "` + launcher + `", "python": "` + ovostest.Python + `"}}}`
	if err := os.WriteFile(conf, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	devices := []string{"pi-a", "pi-b"}
	for _, d := range devices {
		creds := filepath.Join(work, d+".json")
		mustChorus(t, work, fleetArgs("fleet", "device", "add", d, "--tag", "kitchen", "--credentials-out", creds)...)
		startChorus(t, work, "agent", "--config", conf, "--credentials", creds, "--data-dir", filepath.Join(work, "agent-"+d),
			"--skills", t.TempDir(), "--ws-listen", "127.0.0.1:0")
	}
	obs := brokertest.MustConnect(t, mqttAddr(t, up.MQTTURL), up.Observer.Username, up.Observer.Password, brokertest.ConnectOptions{ClientID: "obs"})
	obs.Sub(t, "chorus/v1/+/skills")

	src := filepath.Join(work, "src")
	ovostest.WriteSource(t, src, helloOVOS)
	archive := filepath.Join(work, "hello.tar.gz")
	out := mustChorus(t, work, "skill", "pack", src, "--python", ovostest.Python, "-o", archive)
	if !strings.Contains(out, "packed "+helloOVOS+" 1.0.0") {
		t.Fatalf("pack: %s", out)
	}
	mustChorus(t, work, fleetArgs("fleet", "skill", "publish", archive)...)
	mustChorus(t, work, fleetArgs("fleet", "install", helloOVOS, "--tag", "kitchen", "--timeout", "120s", "--wait", "--poll-interval", "200ms")...)
	waitAllSkills(t, obs, devices, func(s map[string]string) bool { return s[helloOVOS] == "loaded" })
	for _, d := range devices {
		site := filepath.Join(work, "agent-"+d, "agents", d, "installed", helloOVOS, "site", ovostest.Module, "__init__.py")
		if _, err := os.Stat(site); err != nil {
			t.Errorf("%s: the wheel is not installed in the skill's site: %v", d, err)
		}
	}

	mustChorus(t, work, fleetArgs("fleet", "uninstall", helloOVOS, "--tag", "kitchen", "--timeout", "120s", "--wait", "--poll-interval", "200ms")...)
	waitAllSkills(t, obs, devices, func(s map[string]string) bool { _, ok := s[helloOVOS]; return !ok })
	for _, d := range devices {
		if _, err := os.Stat(filepath.Join(work, "agent-"+d, "agents", d, "installed", helloOVOS)); !os.IsNotExist(err) {
			t.Errorf("%s: the skill's directory (and its Python packages) is still there: %v", d, err)
		}
	}

	// A broken wheel: the install fails, with pip's words in the execution.
	bad := filepath.Join(work, "broken.ovos")
	os.MkdirAll(filepath.Join(bad, "wheels"), 0o755)
	os.WriteFile(filepath.Join(bad, "SKILL.md"), []byte("---\nname: broken.ovos\nversion: 1.0.0\ndescription: A broken wheel.\nruntime: ovos\n---\n"), 0o644)
	os.WriteFile(filepath.Join(bad, "wheels", "broken-1.0-py3-none-any.whl"), []byte("not a wheel"), 0o644)
	mustChorus(t, work, fleetArgs("fleet", "skill", "publish", bad)...)
	out, err := runChorus(t, work, fleetArgs("fleet", "install", "broken.ovos", "--device", "pi-a", "--timeout", "120s", "--wait", "--poll-interval", "200ms")...)
	if err == nil || !strings.Contains(out, "pip install broken-1.0-py3-none-any.whl") || !strings.Contains(out, "is invalid") {
		t.Fatalf("install of a broken wheel: %v\n%s", err, out)
	}
}
