package controller_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// stepClock is a wall clock that stands still until the test moves it: the
// rate, ramp and deadline are judged on it, never on real time.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func newStepClock() *stepClock {
	return &stepClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *stepClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newStepEnv(t *testing.T, c *stepClock) *env {
	t.Helper()
	return newClockEnvNow(t, c.Now)
}

// onlineAgents starts an agent in mode for each id and waits until all are online.
func onlineAgents(t *testing.T, e *env, mode string, ids ...string) map[string]*agent {
	t.Helper()
	out := map[string]*agent{}
	for _, id := range ids {
		out[id] = e.startAgent(e.addDevice(id), 1, mode)
	}
	poll.Until(t, "agents online", waitFor, func() bool {
		for _, id := range ids {
			if !online(e, id) {
				return false
			}
		}
		return true
	})
	return out
}

func online(e *env, id string) bool {
	d, err := e.ctl.GetDevice(context.Background(), id)
	return err == nil && d.Online
}

func execByDevice(t *testing.T, e *env, id int64) map[string]*fleet.Execution {
	t.Helper()
	_, execs, err := e.ctl.GetRollout(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*fleet.Execution{}
	for _, x := range execs {
		out[x.DeviceID] = x
	}
	return out
}

func countState(execs map[string]*fleet.Execution, s fleet.ExecState) int {
	n := 0
	for _, x := range execs {
		if x.State == s {
			n++
		}
	}
	return n
}

func TestQueuedExecutionsSayWhy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.publish("hello.test", "1.0.0")
	agents := onlineAgents(t, e, "silent", "pi-1", "pi-2", "pi-3", "pi-gone")
	// pi-gone was online and went away: "offline since" its last presence.
	agents["pi-gone"].pub("chorus/v1/pi-gone/availability", []byte("offline"))
	agents["pi-gone"].close()
	poll.Until(t, "pi-gone offline", waitFor, func() bool { return !online(e, "pi-gone") })
	e.addDevice("pi-never") // never connected

	r, err := e.ctl.CreateRollout(ctx, "test", &fleet.Rollout{SkillID: "hello.test", Action: fleet.RolloutInstall,
		Targets: []fleet.Target{fleet.AllTarget()}, Strategy: fleet.Strategy{Canary: 1}})
	if err != nil {
		t.Fatal(err)
	}
	var xs map[string]*fleet.Execution
	poll.Until(t, "the canary in progress", waitFor, func() bool {
		xs = execByDevice(t, e, r.ID)
		return countState(xs, fleet.ExecInProgress) == 1
	})
	for id, x := range xs {
		switch {
		case x.State == fleet.ExecInProgress:
			if !x.Canary || x.Blocked {
				t.Errorf("%s in progress: canary %v blocked %v", id, x.Canary, x.Blocked)
			}
		case id == "pi-gone":
			if !strings.HasPrefix(x.Reason, "offline since 20") || !x.Blocked {
				t.Errorf("pi-gone: reason %q blocked %v, want offline since <time>, blocked", x.Reason, x.Blocked)
			}
		case id == "pi-never":
			if x.Reason != "offline" || !x.Blocked {
				t.Errorf("pi-never: reason %q blocked %v, want offline, blocked", x.Reason, x.Blocked)
			}
		default:
			if x.Reason != "waiting for canary" || x.Blocked {
				t.Errorf("%s: reason %q blocked %v, want waiting for canary, not blocked (the canary is online)", id, x.Reason, x.Blocked)
			}
		}
	}

	if _, err := e.ctl.PauseRollout(ctx, "test", r.ID); err != nil {
		t.Fatal(err)
	}
	for id, x := range execByDevice(t, e, r.ID) {
		if x.State == fleet.ExecQueued && online(e, id) && x.Reason != "paused" {
			t.Errorf("%s on a paused rollout: reason %q, want paused", id, x.Reason)
		}
	}
	if _, err := e.ctl.ResumeRollout(ctx, "test", r.ID); err != nil {
		t.Fatal(err)
	}

	// max in flight: the canary's slot is the only one.
	r2, err := e.ctl.CreateRollout(ctx, "test", &fleet.Rollout{SkillID: "hello.test", Action: fleet.RolloutInstall,
		Targets:  []fleet.Target{fleet.DeviceTarget("pi-1"), fleet.DeviceTarget("pi-2")},
		Strategy: fleet.Strategy{MaxInFlight: 1}})
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "one in progress, one waiting for a slot", waitFor, func() bool {
		xs := execByDevice(t, e, r2.ID)
		return countState(xs, fleet.ExecInProgress) == 1 && countState(xs, fleet.ExecQueued) == 1
	})
	for _, x := range execByDevice(t, e, r2.ID) {
		if x.State == fleet.ExecQueued && x.Reason != "waiting for a slot (max in flight 1)" {
			t.Errorf("%s: reason %q, want waiting for a slot (max in flight 1)", x.DeviceID, x.Reason)
		}
	}
}

func TestCanaryOfflineBlocksTheRest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.publish("hello.test", "1.0.0")
	agents := onlineAgents(t, e, "silent", "pi-a", "pi-b")
	r, err := e.ctl.CreateRollout(ctx, "test", &fleet.Rollout{SkillID: "hello.test", Action: fleet.RolloutInstall,
		Targets: []fleet.Target{fleet.AllTarget()}, Strategy: fleet.Strategy{Canary: 1}})
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the canary in progress", waitFor, func() bool { return execByDevice(t, e, r.ID)["pi-a"].State == fleet.ExecInProgress })
	if x := execByDevice(t, e, r.ID)["pi-b"]; x.Reason != "waiting for canary" || x.Blocked {
		t.Fatalf("pi-b behind a live canary: %q blocked %v", x.Reason, x.Blocked)
	}
	// The canary's device goes away mid-change: it is blocked as offline,
	// and so is everything waiting for it.
	agents["pi-a"].pub("chorus/v1/pi-a/availability", []byte("offline"))
	agents["pi-a"].close()
	poll.Until(t, "both blocked", waitFor, func() bool {
		xs := execByDevice(t, e, r.ID)
		return xs["pi-a"].Blocked && xs["pi-b"].Blocked
	})
	xs := execByDevice(t, e, r.ID)
	if a, b := xs["pi-a"], xs["pi-b"]; a.State != fleet.ExecInProgress || !strings.HasPrefix(a.Reason, "offline since ") ||
		b.Reason != "waiting for canary" {
		t.Fatalf("pi-a %s %q, pi-b %s %q", a.State, a.Reason, b.State, b.Reason)
	}
}

func TestInstalledWaitingForInternetSucceeds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.publish("hello.test", "1.0.0")
	onlineAgents(t, e, "waiting", "pi-1")
	r, err := e.ctl.CreateRollout(ctx, "test", &fleet.Rollout{SkillID: "hello.test", Action: fleet.RolloutInstall,
		Targets: []fleet.Target{fleet.AllTarget()}, Strategy: fleet.Strategy{Timeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	e.waitRollout(r.ID, fleet.RolloutSucceeded)
	x := execByDevice(t, e, r.ID)["pi-1"]
	if x.State != fleet.ExecSucceeded || x.Reason != "installed, waiting for internet" {
		t.Fatalf("pi-1: %s %q, want succeeded \"installed, waiting for internet\"", x.State, x.Reason)
	}
}

func TestDeadlineEndsQueuedExecutions(t *testing.T) {
	t.Parallel()
	clock := newStepClock()
	e := newStepEnv(t, clock)
	ctx := context.Background()
	e.publish("hello.test", "1.0.0")
	onlineAgents(t, e, "ok", "pi-1")
	e.addDevice("pi-2") // offline all along
	r, err := e.ctl.CreateRollout(ctx, "test", &fleet.Rollout{SkillID: "hello.test", Action: fleet.RolloutInstall,
		Targets: []fleet.Target{fleet.AllTarget()}, Strategy: fleet.Strategy{Deadline: 10 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "pi-1 succeeded", waitFor, func() bool { return execByDevice(t, e, r.ID)["pi-1"].State == fleet.ExecSucceeded })
	clock.Add(10*time.Minute - time.Second)
	// A newer rollout that succeeds proves engine passes ran at this time:
	// each pass steps every rollout, the older first.
	e.publish("other.test", "1.0.0")
	r2, err := e.ctl.CreateRollout(ctx, "test", &fleet.Rollout{SkillID: "other.test", Action: fleet.RolloutInstall,
		Targets: []fleet.Target{fleet.DeviceTarget("pi-1")}})
	if err != nil {
		t.Fatal(err)
	}
	e.waitRollout(r2.ID, fleet.RolloutSucceeded)
	if x := execByDevice(t, e, r.ID)["pi-2"]; x.State != fleet.ExecQueued {
		t.Fatalf("pi-2 %s %q before the deadline, want queued", x.State, x.Reason)
	}
	clock.Add(time.Second)
	r = e.waitRollout(r.ID, fleet.RolloutFailed)
	x := execByDevice(t, e, r.ID)["pi-2"]
	if x.State != fleet.ExecTimedOut || x.Reason != "rollout deadline passed (10m0s after creation)" {
		t.Fatalf("pi-2 %s %q, want timed_out by the deadline", x.State, x.Reason)
	}
	if !strings.Contains(r.Reason, "1 of 2 executions failed or timed out") {
		t.Errorf("rollout reason %q", r.Reason)
	}
}

func TestStartRate(t *testing.T) {
	t.Parallel()
	clock := newStepClock()
	e := newStepEnv(t, clock)
	ctx := context.Background()
	e.publish("hello.test", "1.0.0")
	onlineAgents(t, e, "silent", "pi-1", "pi-2", "pi-3", "pi-4", "pi-5")
	r, err := e.ctl.CreateRollout(ctx, "test", &fleet.Rollout{SkillID: "hello.test", Action: fleet.RolloutInstall,
		Targets: []fleet.Target{fleet.AllTarget()}, Strategy: fleet.Strategy{RatePerMin: 2}})
	if err != nil {
		t.Fatal(err)
	}
	waitRate(t, e, r.ID, 2, "waiting for start rate (2/min)")
	clock.Add(59 * time.Second)
	waitRate(t, e, r.ID, 2, "waiting for start rate (2/min)")
	clock.Add(time.Second) // the first two starts leave the window
	waitRate(t, e, r.ID, 4, "waiting for start rate (2/min)")
	clock.Add(time.Minute)
	poll.Until(t, "all five started", waitFor, func() bool { return countState(execByDevice(t, e, r.ID), fleet.ExecInProgress) == 5 })
}

func TestStartRateRamp(t *testing.T) {
	t.Parallel()
	clock := newStepClock()
	e := newStepEnv(t, clock)
	ctx := context.Background()
	e.publish("hello.test", "1.0.0")
	onlineAgents(t, e, "silent", "pi-1", "pi-2", "pi-3", "pi-4", "pi-5", "pi-6", "pi-7", "pi-8")
	r, err := e.ctl.CreateRollout(ctx, "test", &fleet.Rollout{SkillID: "hello.test", Action: fleet.RolloutInstall,
		Targets:  []fleet.Target{fleet.AllTarget()},
		Strategy: fleet.Strategy{RatePerMin: 4, RampBasePerMin: 1, RampEvery: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	waitRate(t, e, r.ID, 1, "waiting for start rate (1/min)")
	clock.Add(time.Minute) // 2/min
	waitRate(t, e, r.ID, 3, "waiting for start rate (2/min)")
	clock.Add(time.Minute) // 4/min, the cap
	waitRate(t, e, r.ID, 7, "waiting for start rate (4/min)")
	clock.Add(time.Hour) // still 4/min
	poll.Until(t, "all eight started", waitFor, func() bool { return countState(execByDevice(t, e, r.ID), fleet.ExecInProgress) == 8 })
}

// waitRate waits until started executions are in progress and the rest
// say the start rate holds them, then checks that no more started.
func waitRate(t *testing.T, e *env, id int64, started int, reason string) {
	t.Helper()
	poll.Until(t, reason, waitFor, func() bool {
		xs := execByDevice(t, e, id)
		if countState(xs, fleet.ExecInProgress) != started {
			return false
		}
		for _, x := range xs {
			if x.State == fleet.ExecQueued && x.Reason != reason {
				return false
			}
		}
		return true
	})
	// The engine published the hold after its starts in the same pass, and
	// the clock stands still: nothing more may start.
	if n := countState(execByDevice(t, e, id), fleet.ExecInProgress); n != started {
		t.Fatalf("%d in progress after the rate held, want %d", n, started)
	}
}

func TestMinFinishedBeforeThreshold(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.publish("hello.test", "1.0.0")
	onlineAgents(t, e, "fail", "pi-1", "pi-2", "pi-3", "pi-4", "pi-5")
	// 50% would abort after the first failure; min 3 finished holds it.
	r, err := e.ctl.CreateRollout(ctx, "test", &fleet.Rollout{SkillID: "hello.test", Action: fleet.RolloutInstall,
		Targets: []fleet.Target{fleet.AllTarget()}, Strategy: fleet.Strategy{MaxInFlight: 1, FailureThresholdPct: 50, MinExecuted: 3}})
	if err != nil {
		t.Fatal(err)
	}
	r = e.waitRollout(r.ID, fleet.RolloutAborted)
	xs := execByDevice(t, e, r.ID)
	if f, c := countState(xs, fleet.ExecFailed), countState(xs, fleet.ExecCanceled); f != 3 || c != 2 {
		t.Fatalf("%d failed, %d canceled; want 3 failed (the minimum) and 2 canceled", f, c)
	}
	if !strings.Contains(r.Reason, "3 of 3 ended executions") {
		t.Errorf("reason %q", r.Reason)
	}
}

// A wall clock set back (NTP on a Pi without an RTC) does not hold the
// rollout until it catches up: starts logged "in the future" are dropped.
func TestStartRateClockSetBack(t *testing.T) {
	t.Parallel()
	clock := newStepClock()
	e := newStepEnv(t, clock)
	ctx := context.Background()
	e.publish("hello.test", "1.0.0")
	onlineAgents(t, e, "silent", "pi-1", "pi-2", "pi-3")
	r, err := e.ctl.CreateRollout(ctx, "test", &fleet.Rollout{SkillID: "hello.test", Action: fleet.RolloutInstall,
		Targets: []fleet.Target{fleet.AllTarget()}, Strategy: fleet.Strategy{RatePerMin: 1}})
	if err != nil {
		t.Fatal(err)
	}
	waitRate(t, e, r.ID, 1, "waiting for start rate (1/min)")
	clock.Add(-time.Hour)
	waitRate(t, e, r.ID, 2, "waiting for start rate (1/min)")
}
