package skillmanager

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// Every failure mode records a failure, emits loading_failure (or, for an
// exit after load, detach_skill) and backs off min(30s·2^(n-1), 900s).
func TestBackoffTimings(t *testing.T) {
	tests := []struct {
		name    string
		spec    skillSpec
		hook    func(t *testing.T, root string) func(discovery.Skill)
		errHas  string
		output  []string // the report's last output lines, when the case checks them
		loadsOK bool     // the skill loads, then exits on its own
	}{
		{name: "exits before ready", spec: skillSpec{id: "crash", ready: "message", script: "echo starting >&2\necho 'cannot open <device>' >&2\nexit 3"},
			errHas: "exited before ready", output: []string{"starting", "cannot open <device>"}},
		{name: "start error: exec changed since discovery", spec: skillSpec{id: "changed"},
			hook: func(t *testing.T, root string) func(discovery.Skill) {
				n := 0
				return func(s discovery.Skill) { // a different exec every time: every launch is refused
					n++
					os.WriteFile(filepath.Join(root, s.ID, "run.sh"), []byte(fmt.Sprintf("#!/bin/sh\nexec sleep %d\n", 600+n)), 0o755)
				}
			}, errHas: "changed since discovery"},
		{name: "exits after load", spec: skillSpec{id: "flaky", ready: "message", autoReady: true,
			script: `while [ ! -e die ]; do sleep 0.05; done; exit 4`}, loadsOK: true, errHas: "exited"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			clk := newFakeClock()
			dir := writeSkill(t, e.root, tc.spec)
			if tc.hook != nil {
				e.launch.hook = tc.hook(t, e.root)
			}
			mark := e.rec.mark()
			m := e.start(func(c *Config) { c.Now, c.After = clk.Now, clk.After })
			id := tc.spec.id
			if tc.loadsOK {
				e.waitState(id, StateLoaded)
				os.WriteFile(filepath.Join(dir, "die"), nil, 0o644)
				e.rec.expect(t, mark, TypeDetachSkill, skillIs(id))
			} else {
				e.rec.expect(t, mark, TypeLoadingFailure, skillIs(id))
			}
			t0 := clk.Now()
			s := e.waitState(id, StateFailed)
			if s.Attempts != 1 || s.NextRetry == nil || !s.NextRetry.Equal(t0.Add(30*time.Second)) || !strings.Contains(s.Error, tc.errHas) {
				t.Fatalf("after first failure: %+v", s)
			}
			if tc.output != nil && !slices.Equal(s.Output, tc.output) {
				t.Fatalf("reported output %q, want %q", s.Output, tc.output)
			}
			if tc.loadsOK {
				os.Remove(filepath.Join(dir, "die"))
			}
			rounds := 6
			if tc.loadsOK {
				rounds = 2 // a success clears the record: an exit after load always restarts the count
			}
			for n := 1; n <= rounds; n++ {
				attempts := n
				if tc.loadsOK {
					attempts = 1
				}
				delay := backoff(attempts)
				clk.Advance(delay - time.Second)
				e.request(TypeRescan, nil)
				if got := e.launch.starts(id); got != n {
					t.Fatalf("attempt %d: retried %s before the backoff (%d starts)", n, delay, got)
				}
				clk.Advance(time.Second)
				before := e.rec.mark()
				e.request(TypeRescan, nil)
				if tc.loadsOK {
					e.waitState(id, StateLoaded)
					os.WriteFile(filepath.Join(dir, "die"), nil, 0o644)
					e.rec.expect(t, before, TypeDetachSkill, skillIs(id))
				}
				next := attempts + 1
				if tc.loadsOK {
					next = 1
				}
				s := e.waitState(id, StateFailed, func(s SkillReport) bool { return s.Attempts == next && e.launch.starts(id) == n+1 })
				want := clk.Now().Add(backoff(next))
				if !s.NextRetry.Equal(want) {
					t.Fatalf("attempt %d: next_retry %v, want %v", next, s.NextRetry, want)
				}
				if tc.loadsOK {
					os.Remove(filepath.Join(dir, "die"))
				}
			}
			_ = m
		})
	}
}

func TestReadyTimeout(t *testing.T) {
	e := newEnv(t)
	writeSkill(t, e.root, skillSpec{id: "mute", ready: "message"})
	mark := e.rec.mark()
	e.start(func(c *Config) { c.ReadyTimeout = 300 * time.Millisecond })
	e.rec.expect(t, mark, TypeLoadingFailure, skillIs("mute"))
	e.rec.expect(t, mark, TypeDetachSkill, skillIs("mute"))
	s := e.waitState("mute", StateFailed)
	if !strings.Contains(s.Error, "not ready within") || s.Attempts != 1 {
		t.Fatalf("%+v", s)
	}
	poll.Until(t, "timed-out process stopped", waitFor, func() bool { return !alive(e.launch.lastPID("mute")) })
}

// A success, an uninstall or a new version clears the backoff.
func TestBackoffClearedByNewVersion(t *testing.T) {
	e := newEnv(t)
	clk := newFakeClock()
	writeSkill(t, e.root, skillSpec{id: "x", ready: "message", script: "exit 1"})
	m := e.start(func(c *Config) { c.Now, c.After = clk.Now, clk.After })
	e.waitState("x", StateFailed)
	writeSkill(t, e.root, skillSpec{id: "x", version: "1.0.1", ready: "message", autoReady: true})
	got := e.request(TypeRescan, nil)
	if jsonString(got["loaded"]) != `["x"]` {
		t.Fatalf("new version not loaded at once: %v", got)
	}
	m.mu.Lock()
	_, still := m.failures["x"]
	m.mu.Unlock()
	if still {
		t.Fatal("success left the failure record")
	}
}
