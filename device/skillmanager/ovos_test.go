package skillmanager

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/device/process"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// ovosEnv is an env whose launcher runs runtime ovos skills with script as
// the "launcher" (a real process; what the launcher says on the bus the
// test plays through ObserveSkillMessage, as the agent's drop-in does).
func ovosEnv(t *testing.T, script string) *env {
	e := newEnv(t)
	bin := filepath.Join(t.TempDir(), "launcher")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.ovosBin = bin
	e.launch.real = process.NewLauncher(process.Config{MQTTURL: e.brk.URL(), Device: device, Key: e.dev.Key, KeyVersion: 1,
		Bin: "/bin/false", StopGrace: 2 * time.Second, Logger: brokertest.Logger(t),
		OVOS: process.OVOS{Launcher: bin, Root: t.TempDir(), SkillURL: func(s string) string { return "ws://127.0.0.1:1/core/skill/" + s + "/x" }},
	})
	return e
}

func writeOVOSSkill(t *testing.T, root, id string) {
	t.Helper()
	dir := filepath.Join(root, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: "+id+"\ndescription: x\nruntime: ovos\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sleeper is a launcher that waits and exits cleanly on SIGTERM, as
// ovos-skill-launcher does (ovos-utils wait_for_exit_signal).
const sleeper = "trap 'exit 0' TERM\nsleep 600 & wait"

func launcherSays(m *Manager, skill, typ, id string) {
	m.ObserveSkillMessage(skill, envelope.New(typ, map[string]any{"id": id, "path": nil}))
}

// The startup does not wait for a launcher (it loads on mycroft.ready,
// after it); the skill is loading until its own launcher reports, then
// loaded; the manager announces mycroft.skill.loaded but never a
// mycroft.skills.loaded of its own. A report naming another skill, or
// from another skill's connection, changes nothing.
func TestOVOSLoadedOnLauncherReport(t *testing.T) {
	e := ovosEnv(t, sleeper)
	writeOVOSSkill(t, e.root, "hello.ovos")
	writeOVOSSkill(t, e.root, "other.ovos")
	mark := e.rec.mark()
	m := e.start()
	e.rec.expect(t, mark, TypeReady, nil)
	if got := states(m)["hello.ovos"]; got != StateLoading {
		t.Fatalf("hello.ovos is %s after startup, want loading", got)
	}
	launcherSays(m, "other.ovos", TypeSkillsLoaded, "hello.ovos")
	launcherSays(m, "hello.ovos", TypeSkillsLoaded, "other.ovos")
	if got := states(m)["hello.ovos"]; got != StateLoading {
		t.Fatalf("hello.ovos is %s after reports not its own, want loading", got)
	}
	launcherSays(m, "hello.ovos", TypeSkillsLoaded, "hello.ovos")
	e.waitState("hello.ovos", StateLoaded)
	e.rec.expect(t, mark, TypeSkillLoaded, skillIs("hello.ovos"))
	// Loaded after the startup pass (which loaded nothing), its load asks
	// for training itself.
	e.rec.expect(t, mark, TypeTrain, nil)
	if n := e.rec.count(mark, TypeSkillsLoaded, nil); n != 0 {
		t.Errorf("the manager sent %d mycroft.skills.loaded for a launcher's skill", n)
	}
	if got := states(m)["other.ovos"]; got != StateLoading {
		t.Errorf("other.ovos is %s, want loading", got)
	}
}

// The launcher's mycroft.skills.loading_failure fails the load with the
// reason and the backoff, and stops the launcher; the manager adds no
// loading_failure of its own (the launcher sent it).
func TestOVOSLoadingFailure(t *testing.T) {
	e := ovosEnv(t, sleeper)
	writeOVOSSkill(t, e.root, "bad.ovos")
	mark := e.rec.mark()
	m := e.start()
	poll.Until(t, "the launcher started", waitFor, func() bool { return e.launch.starts("bad.ovos") == 1 })
	pid := e.launch.lastPID("bad.ovos")
	launcherSays(m, "bad.ovos", TypeLoadingFailure, "bad.ovos")
	s := e.waitState("bad.ovos", StateFailed)
	if !strings.Contains(s.Error, "loading_failure") || s.Attempts != 1 || s.NextRetry == nil {
		t.Errorf("failed report %+v", s)
	}
	poll.Until(t, "the launcher stopped", waitFor, func() bool { return !alive(pid) })
	e.request(TypeIsReady, nil) // a round trip after the failure's effects
	if n := e.rec.count(mark, TypeLoadingFailure, nil); n != 0 {
		t.Errorf("the manager sent %d loading_failure for a launcher's skill", n)
	}
}

// A launcher that exits, or never reports, fails the load with why.
func TestOVOSLauncherExitsOrNeverReports(t *testing.T) {
	e := ovosEnv(t, "echo cannot import ovos_workshop >&2\nexit 3")
	writeOVOSSkill(t, e.root, "gone.ovos")
	e.start()
	s := e.waitState("gone.ovos", StateFailed)
	if !strings.Contains(s.Error, "launcher exited before the skill loaded") || !strings.Contains(s.Error, "cannot import ovos_workshop") {
		t.Errorf("error %q", s.Error)
	}

	e = ovosEnv(t, sleeper)
	writeOVOSSkill(t, e.root, "mute.ovos")
	e.start(func(c *Config) { c.OVOSLoadTimeout = 300 * time.Millisecond })
	s = e.waitState("mute.ovos", StateFailed)
	if !strings.Contains(s.Error, "did not report mycroft.skills.loaded") {
		t.Errorf("error %q", s.Error)
	}
}

// Deactivate stops the launcher; one that exits cleanly has sent its own
// detach_skill (SkillContainer.run unloads on SIGTERM), so the manager
// sends none. One that had to be killed gets the manager's.
func TestOVOSDeactivateDetachOnce(t *testing.T) {
	// Each launcher writes "$0.ready" once its TERM trap is set, so the
	// deactivate never races the shell's start-up (a TERM before the trap
	// would end the shell by the signal and change the case under test).
	for _, c := range []struct {
		script  string
		detach  int
		comment string
	}{
		{"trap 'exit 0' TERM\ntouch \"$0.ready\"\nsleep 600 & wait", 0, "clean exit"},
		{"trap '' TERM\ntouch \"$0.ready\"\nsleep 600 & wait\nsleep 600", 1, "killed"},
	} {
		e := ovosEnv(t, c.script)
		writeOVOSSkill(t, e.root, "hello.ovos")
		m := e.start()
		poll.Until(t, "the launcher set its TERM trap", waitFor, func() bool {
			_, err := os.Stat(e.ovosBin + ".ready")
			return err == nil
		})
		launcherSays(m, "hello.ovos", TypeSkillsLoaded, "hello.ovos")
		e.waitState("hello.ovos", StateLoaded)
		mark := e.rec.mark()
		if got := e.request(TypeDeactivate, map[string]any{"skill": "hello.ovos"}); len(got) != 0 {
			t.Fatalf("%s: deactivate = %v", c.comment, got)
		}
		// The detach is sent before the reply, but the observer's handlers
		// may see the two in either order: wait for an owed one; for none,
		// a later round trip on the same connection bounds the wait.
		if c.detach == 1 {
			e.rec.expect(t, mark, TypeDetachSkill, nil)
		}
		e.request(TypeIsReady, nil)
		if n := e.rec.count(mark, TypeDetachSkill, nil); n != c.detach {
			t.Errorf("%s: the manager sent %d detach_skill, want %d", c.comment, n, c.detach)
		}
	}
}
