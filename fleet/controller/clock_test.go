package controller_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// jumpClock is a wall clock that runs with real time and can be stepped,
// as NTP steps the clock of a Pi without an RTC once it gets the time.
type jumpClock struct{ off atomic.Int64 }

func (c *jumpClock) Now() time.Time       { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *jumpClock) Jump(d time.Duration) { c.off.Add(int64(d)) }
func newClockEnv(t *testing.T, c *jumpClock) *env {
	t.Helper()
	return newClockEnvNow(t, c.Now)
}

// newClockEnvNow is newEnv with now as the wall clock of store and controller.
func newClockEnvNow(t *testing.T, now func() time.Time) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), now: now}
	e.b = brokertest.Start(t, broker.Config{})
	acct, secret := brokertest.NewOperator(t, "watcher")
	e.opName, e.opSecret, e.local = acct.Username, secret, []broker.Account{acct}
	e.dbPath = filepath.Join(e.dir, "fleet.db")
	e.start()
	return e
}

// silentRollout enrols n devices whose agents never answer and starts an
// install rollout on all of them with timeout; it returns once every
// execution is in progress, and the real time just before the rollout was
// created (no execution can have started before it).
func silentRollout(t *testing.T, e *env, n int, timeout time.Duration) (*fleet.Rollout, time.Time) {
	t.Helper()
	ctx := context.Background()
	e.publish("hello.test", "1.0.0")
	for i := range n {
		e.startAgent(e.addDevice("pi-"+string(rune('a'+i))), 1, "silent")
	}
	poll.Until(t, "all online", waitFor, func() bool {
		on := true
		ds, _ := e.ctl.ListDevices(ctx, fleet.DeviceFilter{Online: &on})
		return len(ds) == n
	})
	created := time.Now()
	r, err := e.ctl.CreateRollout(ctx, "test", &fleet.Rollout{SkillID: "hello.test", Action: fleet.RolloutInstall,
		Targets: []fleet.Target{fleet.AllTarget()}, Strategy: fleet.Strategy{Timeout: timeout}})
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "every execution in progress", waitFor, func() bool {
		r, _, err := e.ctl.GetRollout(ctx, r.ID)
		return err == nil && r.Counts[fleet.ExecInProgress] == n
	})
	return r, created
}

// waitTimedOut waits until every execution of r timed out, checks the
// reason, and returns how long after since that was seen.
func waitTimedOut(t *testing.T, e *env, r *fleet.Rollout, n int, since time.Time) time.Duration {
	t.Helper()
	ctx := context.Background()
	var execs []*fleet.Execution
	poll.Until(t, "every execution timed out", waitFor, func() bool {
		var err error
		_, execs, err = e.ctl.GetRollout(ctx, r.ID)
		timedOut := 0
		for _, x := range execs {
			if x.State == fleet.ExecTimedOut {
				timedOut++
			}
		}
		return err == nil && timedOut == n
	})
	took := time.Since(since)
	for _, x := range execs {
		if !strings.Contains(x.Reason, "no result within "+r.Timeout.String()) {
			t.Errorf("%s timed out with reason %q", x.DeviceID, x.Reason)
		}
	}
	return took
}

// TestRolloutTimeoutClockJumps promises that a rollout's timeout is measured
// in elapsed time, not by the wall clock: a forward step (+1 day, NTP after
// boot) does not time out every in-progress execution at once, and a
// backward step (−1 hour) does not hold them past their timeout. Either way
// each execution times out once the timeout has really elapsed.
func TestRolloutTimeoutClockJumps(t *testing.T) {
	t.Parallel()
	const devices, timeout = 3, 2 * time.Second
	for _, tc := range []struct {
		name string
		jump time.Duration
	}{
		{"forward a day", 24 * time.Hour},
		{"back an hour", -time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &jumpClock{}
			e := newClockEnv(t, clock)
			r, created := silentRollout(t, e, devices, timeout)
			clock.Jump(tc.jump)
			e.ctl.Kick()
			if took := waitTimedOut(t, e, r, devices, created); took < timeout {
				t.Fatalf("executions timed out %s after the rollout was created, before their timeout of %s", took, timeout)
			}
		})
	}
}

// TestRolloutTimeoutClockBackAcrossRestart promises that an execution found
// in progress after a restart, whose start the wall clock now puts in the
// future (the clock was stepped back while the gateway was down), gets at
// most a fresh timeout: it is not held until the clock catches up.
func TestRolloutTimeoutClockBackAcrossRestart(t *testing.T) {
	t.Parallel()
	const devices, timeout = 2, 2 * time.Second
	clock := &jumpClock{}
	e := newClockEnv(t, clock)
	r, _ := silentRollout(t, e, devices, timeout)
	e.stop()
	clock.Jump(-24 * time.Hour)
	restarted := time.Now()
	e.start()
	if took := waitTimedOut(t, e, r, devices, restarted); took < timeout {
		t.Fatalf("timed out %s after the restart, before a fresh timeout of %s", took, timeout)
	}
}
