package skillmanager

import (
	"context"
	"fmt"
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

func TestUninstallMatrix(t *testing.T) {
	tests := []struct {
		name       string
		skills     []string
		change     func(t *testing.T, root string)
		wantLoaded []string
		wantGone   []string
	}{
		{name: "gone: directory removed", skills: []string{"a", "b"},
			change:     func(t *testing.T, root string) { os.RemoveAll(filepath.Join(root, "a")) },
			wantLoaded: []string{"b"}, wantGone: []string{"a"}},
		{name: "broken but declared stays loaded", skills: []string{"a", "b"},
			change: func(t *testing.T, root string) {
				os.Remove(filepath.Join(root, "a", "run.sh")) // invalid: exec missing, SKILL.md still there
			},
			wantLoaded: []string{"a", "b"}},
		{name: "cannot tell: root unreadable unloads nothing", skills: []string{"a", "b"},
			change: func(t *testing.T, root string) {
				os.RemoveAll(root)
				if err := os.WriteFile(root, []byte("not a dir"), 0o644); err != nil { // a root that is not a directory
					t.Fatal(err)
				}
			},
			wantLoaded: []string{"a", "b"}},
		{name: "nothing discoverable but something declared keeps all", skills: []string{"a", "b"},
			change: func(t *testing.T, root string) {
				os.RemoveAll(filepath.Join(root, "a"))
				os.Remove(filepath.Join(root, "b", "run.sh"))
			},
			wantLoaded: []string{"a", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			for _, id := range tc.skills {
				writeSkill(t, e.root, skillSpec{id: id})
			}
			m := e.start()
			pids := map[string]int{}
			for _, id := range tc.skills {
				e.waitState(id, StateLoaded)
				pids[id] = e.launch.lastPID(id)
				// on-start is ready at fork; wait until the shell has read
				// run.sh and exec'ed, or removing the file kills it.
				pid := pids[id]
				poll.Until(t, id+" exec'ed", waitFor, func() bool {
					b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
					return strings.HasPrefix(string(b), "sleep")
				})
			}
			tc.change(t, e.root)
			mark := e.rec.mark()
			e.emit(TypeSkillsUninstallComplete, nil)
			for _, id := range tc.wantGone {
				e.rec.expect(t, mark, TypeDetachSkill, skillIs(id))
				poll.Until(t, id+" exited", waitFor, func() bool { return !alive(pids[id]) })
				m.mu.Lock()
				tracked := m.tracked[id] != nil
				m.mu.Unlock()
				if tracked {
					t.Errorf("%s still tracked", id)
				}
			}
			// Prove the handler ran to the end: a rescan round trip after it
			// is answered, then nothing else was detached.
			e.emit(TypePipUninstallComplete, nil)
			e.request(TypeRescan, nil)
			for _, id := range tc.wantLoaded {
				if !alive(pids[id]) {
					t.Errorf("%s was stopped", id)
				}
				if n := e.rec.count(mark, TypeDetachSkill, skillIs(id)); n != 0 {
					t.Errorf("%s detached %d times", id, n)
				}
				m.mu.Lock()
				ok := m.tracked[id] != nil && m.tracked[id].proc != nil
				m.mu.Unlock()
				if !ok {
					t.Errorf("%s no longer tracked", id)
				}
			}
		})
	}
}

// A verdict against a load in flight stops that load on its way out; it is
// never tracked nor announced, and a reinstall then loads normally.
func TestUninstallInFlightThenReinstall(t *testing.T) {
	e := newEnv(t)
	m := e.start(func(c *Config) { c.ReadyTimeout = time.Minute }) // the load stays in flight until told

	up := filepath.Join(t.TempDir(), "up")
	writeSkill(t, e.root, skillSpec{id: "slow", ready: "message", // never ready by itself
		script: fmt.Sprintf("touch %q\nexec sleep 600", up)})
	mark := e.rec.mark()
	go e.request(TypeRescan, nil)
	e.waitState("slow", StateLoading)
	// The shell has read run.sh before the directory goes (removing it
	// earlier fails the start instead of exercising the verdict).
	poll.Until(t, "slow running", waitFor, func() bool { _, err := os.Stat(up); return err == nil })
	pid := e.launch.lastPID("slow")
	os.RemoveAll(filepath.Join(e.root, "slow"))
	e.emit(TypeSkillsUninstallComplete, nil)
	poll.Until(t, "verdict recorded", waitFor, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		a := m.loading["slow"]
		return a != nil && a.gone
	})
	if err := e.obs.Emit(context.Background(), envelope.New(TypeSkillReady, map[string]any{"skill_id": "slow"}).WithContext("skill_id", "slow")); err != nil { // the load now finishes
		t.Fatal(err)
	}
	e.rec.expect(t, mark, TypeDetachSkill, skillIs("slow"))
	poll.Until(t, "slow stopped", waitFor, func() bool { return !alive(pid) })
	if n := e.rec.count(mark, TypeSkillLoaded, skillIs("slow")); n != 0 {
		t.Fatalf("abandoned load announced %d times", n)
	}
	m.mu.Lock()
	tracked := m.tracked["slow"] != nil
	m.mu.Unlock()
	if tracked {
		t.Fatal("abandoned load tracked")
	}
	writeSkill(t, e.root, skillSpec{id: "slow", ready: "message", autoReady: true})
	got := e.request(TypeRescan, nil)
	if jsonString(got["loaded"]) != `["slow"]` {
		t.Fatalf("rescan after reinstall = %v", got)
	}
	e.rec.expect(t, mark, TypeSkillLoaded, skillIs("slow"))
}

// The removal list is taken under the lock and stopped outside it: a
// replacement loaded for the same id by a pass that overlaps the stop is
// not the one stopped. The old process holds its stop open (it traps TERM
// and exits only when the test releases it), so the reinstall's pass runs
// while the uninstall is still stopping it.
func TestUninstallOverlappingReplacement(t *testing.T) {
	e := newEnv(t)
	e.launch.real = process.NewLauncher(process.Config{MQTTURL: e.brk.URL(), Device: device, Key: e.dev.Key, KeyVersion: 1,
		Bin: "/bin/false", StopGrace: time.Minute, Logger: brokertest.Logger(t)})
	hold := t.TempDir()
	up, release := filepath.Join(hold, "up"), filepath.Join(hold, "release")
	writeSkill(t, e.root, skillSpec{id: "a", script: fmt.Sprintf(
		"trap 'while [ ! -e %q ]; do sleep 0.05; done; exit 0' TERM\ntouch %q\nsleep 600 & wait", release, up)})
	m := e.start()
	e.waitState("a", StateLoaded)
	oldPID := e.launch.lastPID("a")
	poll.Until(t, "the old process set its trap", waitFor, func() bool { _, err := os.Stat(up); return err == nil })
	t.Cleanup(func() { os.WriteFile(release, nil, 0o644) })

	os.RemoveAll(filepath.Join(e.root, "a"))
	e.emit(TypeSkillsUninstallComplete, nil)
	poll.Until(t, "the uninstall took a", waitFor, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.tracked["a"] == nil
	})
	writeSkill(t, e.root, skillSpec{id: "a"}) // reinstalled while the old one stops
	e.emit(TypeSkillsInstallComplete, nil)
	poll.Until(t, "the replacement started", waitFor, func() bool { return e.launch.starts("a") == 2 })
	newPID := e.launch.lastPID("a")
	e.waitState("a", StateLoaded)
	if !alive(oldPID) {
		t.Fatal("the old process ended before the test released it: the overlap was not exercised")
	}

	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "old process stopped", waitFor, func() bool { return !alive(oldPID) })
	if newPID == oldPID || !alive(newPID) {
		t.Fatalf("replacement pid %d (old %d) alive=%v", newPID, oldPID, alive(newPID))
	}
	m.mu.Lock()
	cur := m.tracked["a"]
	m.mu.Unlock()
	if cur == nil || cur.proc == nil || cur.proc.PID() != newPID {
		t.Fatalf("tracked entry is not the replacement")
	}
}
