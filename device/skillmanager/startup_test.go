package skillmanager

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/poll"
)

func TestStartupGating(t *testing.T) {
	e := newEnv(t)
	writeSkill(t, e.root, skillSpec{id: "offline"})
	writeSkill(t, e.root, skillSpec{id: "lan", reqs: "network", ready: "message", autoReady: true})
	writeSkill(t, e.root, skillSpec{id: "web", reqs: "internet"})
	writeSkill(t, e.root, skillSpec{id: "screen", reqs: "gui"})
	writeSkill(t, e.root, skillSpec{id: "gpu", reqs: "gpu"})
	writeSkill(t, e.root, skillSpec{id: "tpu", reqs: "tpu"})
	mark := e.rec.mark()
	m := e.start(func(c *Config) {
		c.Capabilities = []string{"tpu"}
		c.CheckInternet = func(context.Context) (bool, error) { return true, nil }
	})
	if m.Status() != StatusReady {
		t.Fatalf("status = %s", m.Status())
	}
	// The offline pass loads what needs nothing (or only a met capability)
	// before the startup check's event is emitted.
	offline := e.rec.expect(t, mark, TypeSkillLoaded, skillIs("offline"))
	_ = offline
	e.rec.expect(t, mark, TypeInternetConnected, nil)
	e.rec.expect(t, mark, TypeInitialized, nil)
	got := states(m)
	want := map[string]State{"offline": StateLoaded, "lan": StateLoaded, "web": StateLoaded, "tpu": StateLoaded,
		"screen": StateWaiting, "gpu": StateWaiting}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: state %s, want %s", id, got[id], w)
		}
	}
	if s, _ := skillOf(m, "screen"); jsonString(s.WaitingFor) != `["gui"]` {
		t.Errorf("screen waiting_for = %v", s.WaitingFor)
	}
	if s, _ := skillOf(m, "gpu"); jsonString(s.WaitingFor) != `["gpu"]` {
		t.Errorf("gpu waiting_for = %v", s.WaitingFor)
	}
	// Order on the bus: offline loaded, then the internet event, then the
	// internet skills, then initialized.
	order := e.rec.order(mark, TypeSkillLoaded, TypeInternetConnected, TypeInitialized)
	if idx(order, "skill:offline") > idx(order, TypeInternetConnected) ||
		idx(order, TypeInternetConnected) > idx(order, "skill:web") ||
		idx(order, "skill:web") > idx(order, TypeInitialized) {
		t.Errorf("bus order = %v", order)
	}
	e.rec.expect(t, mark, TypeSkillsLoaded, func(d map[string]any) bool {
		return d["id"] == "lan" && d["name"] == "lan" && d["path"] != ""
	})
	e.rec.expect(t, mark, TypeTrain, nil)
	c := m.Snapshot().Connectivity
	if !c.Network || !c.Internet || c.GUI || c.Source != "http-check" {
		t.Errorf("connectivity = %+v", c)
	}
}

func TestConnectivityTransitions(t *testing.T) {
	e := newEnv(t)
	writeSkill(t, e.root, skillSpec{id: "lan", reqs: "network"})
	writeSkill(t, e.root, skillSpec{id: "web", reqs: "internet"})
	writeSkill(t, e.root, skillSpec{id: "screen", reqs: "gui"})
	m := e.start(func(c *Config) {
		c.CheckInternet = func(context.Context) (bool, error) { return false, errors.New("probe refused") }
	})
	if c := m.Snapshot().Connectivity; c.Network || c.Internet || c.Reason == "" {
		t.Fatalf("connectivity after failed check = %+v", c)
	}
	e.waitState("lan", StateWaiting)

	steps := []struct {
		name  string
		event string
		data  map[string]any
		want  map[string]State
		deg   map[string]bool
		flags [3]bool // network, internet, gui
	}{
		{"network up loads lan", TypeNetworkConnected, nil,
			map[string]State{"lan": StateLoaded, "web": StateWaiting, "screen": StateWaiting}, nil, [3]bool{true, false, false}},
		{"internet up loads web", TypeInternetConnected, nil,
			map[string]State{"lan": StateLoaded, "web": StateLoaded}, nil, [3]bool{true, true, false}},
		{"internet down unloads nothing, web degraded", TypeInternetDisconnected, nil,
			map[string]State{"lan": StateLoaded, "web": StateLoaded}, map[string]bool{"web": true, "lan": false}, [3]bool{true, false, false}},
		{"network down clears internet too", TypeNetworkDisconnected, nil,
			map[string]State{"lan": StateLoaded, "web": StateLoaded}, map[string]bool{"web": true, "lan": true}, [3]bool{false, false, false}},
		{"gui permanent loads screen", TypeGUIAvailable, map[string]any{"permanent": true},
			map[string]State{"screen": StateLoaded}, nil, [3]bool{false, false, true}},
		{"gui unavailable ignored after permanent", TypeGUIUnavailable, nil,
			map[string]State{"screen": StateLoaded}, map[string]bool{"screen": false}, [3]bool{false, false, true}},
		{"network up again, no double load", TypeNetworkConnected, nil,
			map[string]State{"lan": StateLoaded}, map[string]bool{"lan": false}, [3]bool{true, false, true}},
		{"network down ignored after permanent gui", TypeNetworkDisconnected, nil,
			map[string]State{"lan": StateLoaded}, map[string]bool{"lan": false}, [3]bool{true, false, true}},
	}
	for _, st := range steps {
		e.emit(st.event, st.data)
		poll.Until(t, st.name+": flags", waitFor, func() bool {
			c := m.Snapshot().Connectivity
			return [3]bool{c.Network, c.Internet, c.GUI} == st.flags
		})
		for id, w := range st.want {
			s := e.waitState(id, w)
			if d, ok := st.deg[id]; ok && s.Degraded != d {
				t.Errorf("%s: %s degraded = %v, want %v", st.name, id, s.Degraded, d)
			}
		}
	}
	for _, id := range []string{"lan", "web", "screen"} {
		if n := e.launch.starts(id); n != 1 {
			t.Errorf("%s started %d times, want 1", id, n)
		}
	}
}

// Events that arrive while Start runs are remembered and replayed after the
// startup check, before ready; the PHAL answer (from the agent's trusted
// channel, AskPHAL) is used when it comes.
func TestStartupReplayAndPHAL(t *testing.T) {
	tests := []struct {
		name       string
		answer     *[2]bool // PHAL's network, internet; nil = no answer
		early      string   // event emitted while PHAL is asked
		wantLoaded []string
		wantWait   []string
		source     string
	}{
		{name: "no PHAL, early network event replayed", early: TypeNetworkConnected,
			wantLoaded: []string{"lan"}, wantWait: []string{"web"}},
		{name: "PHAL says internet", answer: &[2]bool{true, true},
			wantLoaded: []string{"lan", "web"}, source: "phal"},
		{name: "PHAL says network only, early gui replayed", answer: &[2]bool{true, false},
			early: TypeGUIAvailable, wantLoaded: []string{"lan"}, wantWait: []string{"web"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			writeSkill(t, e.root, skillSpec{id: "lan", reqs: "network"})
			writeSkill(t, e.root, skillSpec{id: "web", reqs: "internet"})
			ask := func(ctx context.Context) (bool, bool, error) {
				if tc.early != "" {
					e.emit(tc.early, nil)
					// Let the early event land first, so it is queued before ready.
					time.Sleep(100 * time.Millisecond) // ordering aid, not a wait for an effect
				}
				if tc.answer == nil {
					<-ctx.Done()
					return false, false, ctx.Err()
				}
				return tc.answer[0], tc.answer[1], nil
			}
			m := e.start(func(c *Config) { c.PHALTimeout = time.Second; c.AskPHAL = ask })
			for _, id := range tc.wantLoaded {
				if got := states(m)[id]; got != StateLoaded {
					t.Errorf("%s: %s right after Start, want loaded", id, got)
				}
			}
			for _, id := range tc.wantWait {
				if got := states(m)[id]; got != StateWaiting {
					t.Errorf("%s: %s, want waiting", id, got)
				}
			}
			c := m.Snapshot().Connectivity
			if tc.source != "" && c.Source != tc.source {
				t.Errorf("source = %q, want %q", c.Source, tc.source)
			}
			if tc.early == TypeGUIAvailable && !c.GUI {
				t.Errorf("early gui event not replayed: %+v", c)
			}
			if tc.answer == nil && c.Reason != "no internet check configured" {
				t.Errorf("reason = %q", c.Reason)
			}
		})
	}
}

// The manager never takes a PHAL answer off the bus, where any skill may
// publish one: unsolicited answers and replies to the question leave the
// internet down (issue 14, finding 3).
func TestPHALAnswerOnBusIgnored(t *testing.T) {
	e := newEnv(t)
	writeSkill(t, e.root, skillSpec{id: "web", reqs: "internet"})
	yes := map[string]any{"internet_connected": true, "network_connected": true}
	off, err := e.obs.On("ovos.PHAL.internet_check", func(ctx context.Context, d busDelivery) {
		_ = e.obs.Reply(ctx, d, d.Message.Reply("ovos.PHAL.internet_check.response", yes))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer off()
	ask := func(ctx context.Context) (bool, bool, error) {
		e.emit("ovos.PHAL.internet_check", nil)
		e.emit("ovos.PHAL.internet_check.response", yes) // unsolicited
		<-ctx.Done()
		return false, false, ctx.Err()
	}
	m := e.start(func(c *Config) { c.PHALTimeout = 300 * time.Millisecond; c.AskPHAL = ask })
	if c := m.Snapshot().Connectivity; c.Internet || c.Source == "phal" {
		t.Errorf("connectivity %+v after bus answers, want internet down from the HTTP check", c)
	}
	if got := states(m)["web"]; got != StateWaiting {
		t.Errorf("web: %s, want waiting", got)
	}
}

func TestStatusQueries(t *testing.T) {
	e := newEnv(t)
	m := e.start()
	for _, typ := range []string{TypeIsAlive, TypeIsReady, TypeAllLoaded} {
		if got := e.request(typ, nil); got["status"] != true {
			t.Errorf("%s = %v, want true", typ, got)
		}
	}
	m.mu.Lock()
	m.status = StatusStopping // what Close sets first
	m.mu.Unlock()
	for _, typ := range []string{TypeIsAlive, TypeIsReady, TypeAllLoaded} {
		if got := e.request(typ, nil); got["status"] != false {
			t.Errorf("stopping: %s = %v, want false", typ, got)
		}
	}
	m.mu.Lock()
	m.status = StatusAlive
	m.mu.Unlock()
	if got := e.request(TypeIsAlive, nil); got["status"] != true {
		t.Errorf("alive: is_alive = %v", got)
	}
	if got := e.request(TypeIsReady, nil); got["status"] != false {
		t.Errorf("alive: is_ready = %v", got)
	}
	m.mu.Lock()
	m.status = StatusReady
	m.mu.Unlock()
}

// Only a skill may say it is ready: a chorus.skill.ready whose
// context.skill_id does not name the skill (another skill's claim, or none,
// which the broker cannot bind to the sender) leaves it loading until its
// own comes.
func TestReadinessBoundToTheSkill(t *testing.T) {
	e := newEnv(t)
	writeSkill(t, e.root, skillSpec{id: "slow", ready: "message"})
	done := make(chan *Manager, 1)
	go func() { done <- e.start(func(c *Config) { c.ReadyTimeout = 10 * time.Second }) }()
	poll.Until(t, "slow loading", waitFor, func() bool { return e.launch.starts("slow") == 1 })
	for _, ctx := range []map[string]any{{}, {"skill_id": "other"}} {
		m := envelope.New(TypeSkillReady, map[string]any{"skill_id": "slow"})
		for k, v := range ctx {
			m = m.WithContext(k, v)
		}
		if err := e.obs.Emit(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-done:
		t.Fatal("a readiness claim from someone else finished the load")
	case <-time.After(300 * time.Millisecond): // a negative check: the load must still wait
	}
	if err := e.obs.Emit(context.Background(), envelope.New(TypeSkillReady, map[string]any{"skill_id": "slow"}).WithContext("skill_id", "slow")); err != nil {
		t.Fatal(err)
	}
	if m := <-done; states(m)["slow"] != StateLoaded {
		t.Errorf("slow: %s after its own readiness, want loaded", states(m)["slow"])
	}
}
