// Package ovostest gives tests a stock OVOS skill to run without a Python
// package index: the stand-in ovos-skill-launcher (device/ovosrt/standin, embedded) and a small
// OVOS-style skill package whose opm.skills entry point the launcher finds,
// the way ovos-plugin-manager does.
package ovostest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/chorus-edge/chorus/device/agentbench"
	"github.com/chorus-edge/chorus/device/ovosrt/standin"
)

// Python is Debian's interpreter, which python3-websocket installs for.
const Python = "/usr/bin/python3"

// Need skips t when Debian's python3 with python3-websocket is missing,
// and fails it under CI=true (scripts/test.sh installs them).
func Need(t testing.TB) {
	t.Helper()
	out, err := exec.Command(Python, "-c", "import websocket").CombinedOutput()
	if err == nil {
		return
	}
	msg := fmt.Sprintf("the OVOS stand-in needs %s with python3-websocket (apt-get install python3 python3-websocket): %v %s", Python, err, out)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// NeedPip is Need for building and installing wheels offline: Debian's
// python3-pip, python3-setuptools and python3-wheel.
func NeedPip(t testing.TB) {
	t.Helper()
	out, err := exec.Command(Python, "-c", "import setuptools, wheel, pip").CombinedOutput()
	if err == nil {
		return
	}
	msg := fmt.Sprintf("building wheels needs %s with python3-pip, python3-setuptools and python3-wheel (apt-get install them): %v %s", Python, err, out)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Launcher copies the stand-in launcher into a fresh directory every user
// can reach (skills under their own uids run it) and returns its path.
func Launcher(t testing.TB) string {
	t.Helper()
	Need(t)
	dir, err := os.MkdirTemp("", "ovos-standin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "ovos-skill-launcher")
	if err := os.WriteFile(path, standin.Launcher, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// Module is the test skill's Python module (agentbench.OVOSModule).
const Module = agentbench.OVOSModule

// Dist is the test skill's distribution name.
func Dist(skillID string) string { return agentbench.OVOSDist(skillID) }

// WriteSite installs the test skill for skillID into site as pip would.
func WriteSite(t testing.TB, site, skillID string) {
	t.Helper()
	if err := agentbench.WriteOVOSSite(site, skillID); err != nil {
		t.Fatal(err)
	}
}

// WriteSkill writes a runtime ovos skill directory for skillID under root,
// with the test skill installed in its site directory; it returns the
// directory.
func WriteSkill(t testing.TB, root, skillID string) string {
	t.Helper()
	dir, err := agentbench.WriteOVOSSkill(root, skillID)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// WriteSource writes an OVOS skill source tree for skillID (setup.py with
// the opm.skills entry point), as `chorus skill pack` takes it.
func WriteSource(t testing.TB, dir, skillID string) {
	t.Helper()
	setup := fmt.Sprintf(`from setuptools import setup

setup(
    name=%q,
    version="1.0.0",
    packages=[%q],
    entry_points={"opm.skills": ["%s = %s:HelloWorldSkill"]},
)
`, Dist(skillID), Module, skillID, Module)
	files := map[string]string{
		filepath.Join(dir, "setup.py"):            setup,
		filepath.Join(dir, Module, "__init__.py"): agentbench.OVOSSource(),
	}
	for path, body := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
