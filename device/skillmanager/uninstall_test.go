package skillmanager

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/gateway/envelope"
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
				waitUntil(t, id+" exec'ed", func() bool {
					b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
					return strings.HasPrefix(string(b), "sleep")
				})
			}
			tc.change(t, e.root)
			mark := e.rec.mark()
			e.emit(TypeSkillsUninstallComplete, nil)
			for _, id := range tc.wantGone {
				e.rec.expect(t, mark, TypeDetachSkill, skillIs(id))
				waitUntil(t, id+" exited", func() bool { return !alive(pids[id]) })
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

	writeSkill(t, e.root, skillSpec{id: "slow", ready: "message"}) // never ready by itself
	mark := e.rec.mark()
	go e.request(TypeRescan, nil)
	e.waitState("slow", StateLoading)
	pid := e.launch.lastPID("slow")
	os.RemoveAll(filepath.Join(e.root, "slow"))
	e.emit(TypeSkillsUninstallComplete, nil)
	waitUntil(t, "verdict recorded", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		a := m.loading["slow"]
		return a != nil && a.gone
	})
	if err := e.obs.Emit(context.Background(), envelope.New(TypeSkillReady, map[string]any{"skill_id": "slow"}).WithContext("skill_id", "slow")); err != nil { // the load now finishes
		t.Fatal(err)
	}
	e.rec.expect(t, mark, TypeDetachSkill, skillIs("slow"))
	waitUntil(t, "slow stopped", func() bool { return !alive(pid) })
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
// not the one stopped.
func TestUninstallOverlappingReplacement(t *testing.T) {
	e := newEnv(t)
	writeSkill(t, e.root, skillSpec{id: "a"})
	m := e.start()
	e.waitState("a", StateLoaded)
	oldPID := e.launch.lastPID("a")
	os.RemoveAll(filepath.Join(e.root, "a"))
	replaced := make(chan struct{})
	m.mu.Lock()
	runCtx := m.runCtx
	m.testAfterTake = func() {
		// Between the take and the stops: reinstall and load again.
		writeSkill(t, e.root, skillSpec{id: "a"})
		m.runPass(runCtx, "overlapping", nil)
		close(replaced)
	}
	m.mu.Unlock()
	e.emit(TypeSkillsUninstallComplete, nil)
	<-replaced
	waitUntil(t, "old process stopped", func() bool { return !alive(oldPID) })
	newPID := e.launch.lastPID("a")
	if newPID == oldPID || !alive(newPID) {
		t.Fatalf("replacement pid %d (old %d) alive=%v", newPID, oldPID, alive(newPID))
	}
	s := e.waitState("a", StateLoaded)
	_ = s
	m.mu.Lock()
	cur := m.tracked["a"]
	m.mu.Unlock()
	if cur == nil || cur.proc == nil || cur.proc.PID() != newPID {
		t.Fatalf("tracked entry is not the replacement")
	}
}
