package skillmanager

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/gateway/poll"
)

func TestActivateDeactivatePersisted(t *testing.T) {
	e := newEnv(t)
	writeSkill(t, e.root, skillSpec{id: "a"})
	writeSkill(t, e.root, skillSpec{id: "b", ready: "message", autoReady: true})
	writeSkill(t, e.root, skillSpec{id: "c"})
	m := e.start()
	e.waitState("a", StateLoaded)
	pidA := e.launch.lastPID("a")

	replies := []struct {
		name string
		typ  string
		data map[string]any
		want string
	}{
		{"deactivate a", TypeDeactivate, map[string]any{"skill": "a"}, `{}`},
		{"deactivate unknown", TypeDeactivate, map[string]any{"skill": "nope"}, `{"error":"unknown skill"}`},
		{"deactivate malformed", TypeDeactivate, map[string]any{"skill": 7}, `{"error":"malformed skillmanager.deactivate: data.skill must be a non-empty string"}`},
		{"activate unknown", TypeActivate, map[string]any{"skill": "nope"}, `{"error":"unknown skill"}`},
		{"activate malformed", TypeActivate, map[string]any{}, `{"error":"malformed skillmanager.activate: data.skill must be a non-empty string"}`},
		{"activate active c", TypeActivate, map[string]any{"skill": "c"}, `{}`},
	}
	for _, r := range replies {
		if got := jsonString(e.request(r.typ, r.data)); got != r.want {
			t.Errorf("%s: reply %s, want %s", r.name, got, r.want)
		}
	}
	if alive(pidA) {
		t.Error("deactivated skill still running")
	}
	e.waitState("a", StateInactive)
	data, _ := os.ReadFile(filepath.Join(filepath.Dir(e.root), "inactive.json"))
	if !strings.Contains(string(data), `"a"`) {
		t.Fatalf("inactive file = %s", data)
	}
	list := e.request(TypeList, nil)
	if jsonString(list["a"]) != `{"active":false,"id":"a"}` || jsonString(list["b"]) != `{"active":true,"id":"b"}` {
		t.Errorf("list = %v", list)
	}
	e.rec.expect(t, 0, TypeSkillsList, nil)
	// A scan does not reload it.
	e.request(TypeRescan, nil)
	if n := e.launch.starts("a"); n != 1 {
		t.Fatalf("inactive skill restarted by a pass (%d starts)", n)
	}

	// A restart keeps it off.
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	m2 := e.start()
	e.waitState("a", StateInactive)
	e.waitState("b", StateLoaded)
	if n := e.launch.starts("a"); n != 1 {
		t.Fatalf("inactive skill started after restart (%d starts)", n)
	}
	if got := jsonString(e.request(TypeActivate, map[string]any{"skill": "a"})); got != `{}` {
		t.Fatalf("activate a = %s", got)
	}
	e.waitState("a", StateLoaded)
	data, _ = os.ReadFile(filepath.Join(filepath.Dir(e.root), "inactive.json"))
	if strings.Contains(string(data), `"a"`) {
		t.Fatalf("inactive file after activate = %s", data)
	}

	// keep deactivates every other skill, with no reply.
	e.emit(TypeKeep, map[string]any{"skill": "b"})
	e.waitState("a", StateInactive)
	e.waitState("c", StateInactive)
	e.waitState("b", StateLoaded)
	mark := e.rec.mark()
	e.emit(TypeActivate, map[string]any{"skill": "all"})
	e.rec.expect(t, mark, TypeActivate+".response", nil)
	e.waitState("a", StateLoaded)
	e.waitState("c", StateLoaded)
	_ = m2
}

func TestRescanReply(t *testing.T) {
	e := newEnv(t)
	m, err := New(e.config())
	if err != nil {
		t.Fatal(err)
	}
	// Not ready (subscribed, startup not run): empty list, no pass.
	if err := m.subscribe(); err != nil {
		t.Fatal(err)
	}
	writeSkill(t, e.root, skillSpec{id: "early"})
	if got := jsonString(e.request(TypeRescan, nil)); got != `{"loaded":[]}` {
		t.Fatalf("rescan before ready = %s", got)
	}
	e.emit(TypeSkillsInstallComplete, nil) // before ready: nothing
	for _, off := range m.offs {
		off()
	}
	if n := e.launch.starts("early"); n != 0 {
		t.Fatalf("loaded before ready: %d", n)
	}
	e.start()
	e.waitState("early", StateLoaded)
	writeSkill(t, e.root, skillSpec{id: "fresh", ready: "message", autoReady: true})
	if got := jsonString(e.request(TypeRescan, nil)); got != `{"loaded":["fresh"]}` {
		t.Fatalf("rescan = %s", got)
	}
	if got := jsonString(e.request(TypeRescan, nil)); got != `{"loaded":[]}` {
		t.Fatalf("second rescan = %s", got)
	}
}

func TestInstallCompleteRestartsUpgraded(t *testing.T) {
	e := newEnv(t)
	writeSkill(t, e.root, skillSpec{id: "up"})
	m := e.start()
	e.waitState("up", StateLoaded)
	oldPID := e.launch.lastPID("up")
	writeSkill(t, e.root, skillSpec{id: "up", version: "2.0.0"})
	writeSkill(t, e.root, skillSpec{id: "new"})
	mark := e.rec.mark()
	e.emit(TypeSkillsInstallComplete, nil)
	e.rec.expect(t, mark, TypeDetachSkill, skillIs("up"))
	e.waitState("up", StateLoaded, func(s SkillReport) bool { return s.Version == "2.0.0" })
	e.waitState("new", StateLoaded)
	if alive(oldPID) || e.launch.lastPID("up") == oldPID {
		t.Fatal("old version still running")
	}
	_ = m
}

func TestTrainingNeverBlocks(t *testing.T) {
	e := newEnv(t)
	writeSkill(t, e.root, skillSpec{id: "a"})
	m := e.start(func(c *Config) { c.TrainTimeout = time.Hour })
	if got := m.Snapshot().Skills.Training.Status; got != "pending" {
		t.Fatalf("training = %q", got)
	}
	// Nobody answers training: passes carry on.
	writeSkill(t, e.root, skillSpec{id: "b"})
	start := time.Now()
	if got := jsonString(e.request(TypeRescan, nil)); got != `{"loaded":["b"]}` {
		t.Fatalf("rescan = %s", got)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("pass blocked on training for %s", d)
	}
	e.emit(TypeTrained, map[string]any{"error": "padatious exploded"})
	poll.Until(t, "training failure reported", waitFor, func() bool {
		tr := m.Snapshot().Skills.Training
		return tr.Status == "failed" && tr.Error == "padatious exploded"
	})

	e2 := newEnv(t)
	writeSkill(t, e2.root, skillSpec{id: "a"})
	m2 := e2.start(func(c *Config) { c.TrainTimeout = 200 * time.Millisecond })
	poll.Until(t, "training timeout reported", waitFor, func() bool { return m2.Snapshot().Skills.Training.Status == "timeout" })
}

func TestBlacklist(t *testing.T) {
	e := newEnv(t)
	writeSkill(t, e.root, skillSpec{id: "bad"})
	writeSkill(t, e.root, skillSpec{id: "good"})
	e.setBlacklist("bad")
	e.start()
	e.waitState("good", StateLoaded)
	e.waitState("bad", StateBlacklisted)
	if n := e.launch.starts("bad"); n != 0 {
		t.Fatal("blacklisted skill started")
	}
	// Adding a running skill to the blacklist does not unload it.
	e.setBlacklist("bad", "good")
	e.request(TypeRescan, nil)
	e.waitState("good", StateLoaded)
	// Removing it lets the next pass load it.
	e.setBlacklist()
	if got := jsonString(e.request(TypeRescan, nil)); got != `{"loaded":["bad"]}` {
		t.Fatalf("rescan after unblacklist = %s", got)
	}
}

func TestCloseStopsEverySkill(t *testing.T) {
	e := newEnv(t)
	writeSkill(t, e.root, skillSpec{id: "a"})
	writeSkill(t, e.root, skillSpec{id: "b", script: `trap '' TERM; while :; do sleep 0.05; done`}) // ignores SIGTERM
	m := e.start()
	e.waitState("a", StateLoaded)
	e.waitState("b", StateLoaded)
	pa, pb := e.launch.lastPID("a"), e.launch.lastPID("b")
	mark := e.rec.mark()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if alive(pa) || alive(pb) {
		t.Fatal("a skill survived Close")
	}
	e.rec.expect(t, mark, TypeDetachSkill, skillIs("a"))
	e.rec.expect(t, mark, TypeDetachSkill, skillIs("b"))
	if m.Status() != StatusStopping {
		t.Fatalf("status = %s", m.Status())
	}
	e.snapMu.Lock()
	last := e.snaps[len(e.snaps)-1]
	e.snapMu.Unlock()
	if last.Status != StatusStopping {
		t.Fatalf("last OnChange status = %s", last.Status)
	}
	if err := m.Close(ctx); err != nil {
		t.Fatal("second Close:", err)
	}
}
