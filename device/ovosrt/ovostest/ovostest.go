// Package ovostest gives tests a stock OVOS skill to run without a Python
// package index: the stand-in ovos-skill-launcher (../standin) and a small
// OVOS-style skill package whose opm.skills entry point the launcher finds,
// the way ovos-plugin-manager does.
package ovostest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
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
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "..", "standin", "ovos-skill-launcher")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("stand-in launcher: %v", err)
	}
	dir, err := os.MkdirTemp("", "ovos-standin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "ovos-skill-launcher")
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// Module is the Python module of the test skill: an OVOS-style skill class
// built with the bus and its id (as PluginSkillLoader does), which
// registers a padatious intent and answers it with speak. With
// HELLO_SKILL_FAIL in its environment its constructor raises.
const Module = "hello_skill"

const moduleSource = `import os


class HelloWorldSkill:
    name = "Hello World"

    def __init__(self, bus, skill_id):
        if os.environ.get("HELLO_SKILL_FAIL"):
            raise RuntimeError("HELLO_SKILL_FAIL is set")
        self.bus, self.skill_id = bus, skill_id
        self.intent = skill_id + ":HelloWorldIntent.intent"
        bus.emit("padatious:register_intent",
                 {"name": self.intent, "lang": "en-US", "samples": ["hello world"]},
                 {"skill_id": skill_id})
        bus.on(self.intent, self.handle_hello)

    def handle_hello(self, message):
        self.bus.emit("speak", {"utterance": "Hello world", "lang": "en-US"}, {"skill_id": self.skill_id})

    def shutdown(self):
        self.bus.remove_all(self.intent)
`

// Dist is the test skill's distribution name.
func Dist(skillID string) string {
	return "hello-" + strings.NewReplacer(".", "-", "_", "-").Replace(skillID)
}

// WriteSite installs the test skill for skillID into site the way pip
// leaves a wheel: the module and a dist-info directory whose
// entry_points.txt names skillID in the opm.skills group.
func WriteSite(t testing.TB, site, skillID string) {
	t.Helper()
	dist := strings.ReplaceAll(Dist(skillID), "-", "_")
	info := filepath.Join(site, dist+"-1.0.0.dist-info")
	files := map[string]string{
		filepath.Join(site, Module, "__init__.py"): moduleSource,
		filepath.Join(info, "METADATA"):            "Metadata-Version: 2.1\nName: " + Dist(skillID) + "\nVersion: 1.0.0\n",
		filepath.Join(info, "entry_points.txt"):    "[opm.skills]\n" + skillID + " = " + Module + ":HelloWorldSkill\n",
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

// WriteSkill writes a runtime ovos skill directory for skillID under root,
// with the test skill installed in its site directory; it returns the
// directory.
func WriteSkill(t testing.TB, root, skillID string) string {
	t.Helper()
	dir := filepath.Join(root, skillID)
	doc := "---\nname: " + skillID + "\ndescription: The hello-world OVOS skill, run by ovos-skill-launcher.\nruntime: ovos\npython_package: " + Dist(skillID) + "\n---\n"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	WriteSite(t, filepath.Join(dir, "site"), skillID)
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
		filepath.Join(dir, Module, "__init__.py"): moduleSource,
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
