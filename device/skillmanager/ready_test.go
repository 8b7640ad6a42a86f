package skillmanager

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// mycroft.skills.is_ready answers as ovos-core's ProcessStatus does at each
// stage (false while the startup load runs, true once it is done), and
// mycroft.ready goes out once, after mycroft.skills.initialized, with OVOS's
// shape: no data, a context holding only the session.
func TestMycroftReadyOnceAfterStartup(t *testing.T) {
	e := newEnv(t)
	writeSkill(t, e.root, skillSpec{id: "slow", ready: "message"})
	mark := e.rec.mark()
	done := make(chan *Manager, 1)
	go func() { done <- e.start(func(c *Config) { c.ReadyTimeout = 20 * time.Second }) }()
	poll.Until(t, "slow loading", waitFor, func() bool { return e.launch.starts("slow") == 1 })
	if got := e.request(TypeIsReady, nil); got["status"] != false {
		t.Errorf("is_ready during the startup load = %v, want false", got)
	}
	if got := e.request(TypeIsAlive, nil); got["status"] != true {
		t.Errorf("is_alive during the startup load = %v, want true", got)
	}
	if n := e.rec.count(mark, TypeReady, nil); n != 0 {
		t.Fatalf("%d mycroft.ready before the startup load finished", n)
	}
	if err := e.obs.Emit(context.Background(), envelope.New(TypeSkillReady, map[string]any{"skill_id": "slow"}).WithContext("skill_id", "slow")); err != nil {
		t.Fatal(err)
	}
	m := <-done
	ready := e.rec.expect(t, mark, TypeReady, nil)
	if len(ready.Data) != 0 {
		t.Errorf("mycroft.ready data = %v, want {}", ready.Data)
	}
	if len(ready.Context) != 1 || ready.SessionID() != "default" {
		t.Errorf("mycroft.ready context = %v, want only the default session", ready.Context)
	}
	if got := e.request(TypeIsReady, nil); got["status"] != true {
		t.Errorf("is_ready after startup = %v, want true", got)
	}
	order := e.rec.order(mark, TypeInitialized, TypeReady)
	if idx(order, TypeInitialized) < 0 || idx(order, TypeInitialized) > idx(order, TypeReady) {
		t.Errorf("bus order = %v, want initialized before ready", order)
	}
	// Later state changes (a rescan loading a new skill) never repeat it:
	// ovos-skill-launcher reloads its skill on every mycroft.ready.
	writeSkill(t, e.root, skillSpec{id: "late"})
	rescan := e.request(TypeRescan, nil)
	if ids, _ := rescan["loaded"].([]any); len(ids) != 1 {
		t.Fatalf("rescan = %v", rescan)
	}
	e.request(TypeIsReady, nil) // a round trip after the rescan's state changes
	if n := e.rec.count(mark, TypeReady, nil); n != 1 || !m.ReadySent() {
		t.Errorf("%d mycroft.ready, want exactly 1", n)
	}
}

// ready_settings beyond "skills": mycroft.ready waits for the internet flag
// and for a named skill to be loaded.
func TestReadySettingsWait(t *testing.T) {
	e := newEnv(t)
	writeSkill(t, e.root, skillSpec{id: "web", reqs: "internet"})
	mark := e.rec.mark()
	m := e.start(func(c *Config) {
		c.ReadySettings = []string{configs.ReadySkills, configs.ReadyInternetSkills, "web"}
		c.CheckInternet = func(context.Context) (bool, error) { return false, nil }
	})
	e.waitState("web", StateWaiting)
	if m.ReadySent() || e.rec.count(mark, TypeReady, nil) != 0 {
		t.Fatal("mycroft.ready before internet_skills and web were met")
	}
	e.emit(TypeInternetConnected, nil)
	e.rec.expect(t, mark, TypeReady, nil)
	if got := states(m)["web"]; got != StateLoaded {
		t.Errorf("web is %s once mycroft.ready went out, want loaded", got)
	}
}

func TestCheckReadySettings(t *testing.T) {
	for _, ok := range [][]string{nil, {"skills"}, {"skills", "network_skills", "internet", "ovos-skill-hello-world.openvoiceos"}} {
		if err := configs.CheckReadySettings(ok); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	for _, bad := range [][]string{{"audio"}, {"skills", "PHAL"}, {" "}} {
		err := configs.CheckReadySettings(bad)
		if err == nil || !strings.Contains(err.Error(), "ready_settings") {
			t.Errorf("%v: err = %v, want a ready_settings error", bad, err)
		}
	}
}
