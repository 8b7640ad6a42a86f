package sqlite_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/sqlite"
)

func mustRollout(tb testing.TB, db *sqlite.DB, r *fleet.Rollout) []*fleet.Execution {
	tb.Helper()
	es, err := db.CreateRollout(ctx, r)
	if err != nil {
		tb.Fatalf("CreateRollout: %v", err)
	}
	return es
}

func mustRolloutState(tb testing.TB, db *sqlite.DB, id int64, to fleet.RolloutState) *fleet.Rollout {
	tb.Helper()
	r, err := db.UpdateRolloutState(ctx, id, "", to, "")
	if err != nil {
		tb.Fatalf("UpdateRolloutState(%d, %s): %v", id, to, err)
	}
	return r
}

func mustExec(tb testing.TB, db *sqlite.DB, id int64, dev string, to fleet.ExecState) *fleet.Execution {
	tb.Helper()
	e, err := db.TransitionExecution(ctx, id, dev, to, "")
	if err != nil {
		tb.Fatalf("TransitionExecution(%d, %s, %s): %v", id, dev, to, err)
	}
	return e
}

func TestCreateRollout(t *testing.T) {
	t.Parallel()
	db, c := mustOpen(t)
	mustPublish(t, db, "weather", "1.0.0")
	mustPublish(t, db, "weather", "1.1.0")
	for _, id := range []string{"pi-a", "pi-b", "pi-c", "pi-d"} {
		mustDevice(t, db, id, "kitchen")
	}
	mustDevice(t, db, "pi-x")
	// pi-c and pi-d are online: they are picked as canaries first.
	for _, id := range []string{"pi-d", "pi-c"} {
		if _, err := db.UpdatePresence(ctx, id, fleet.Presence{Online: true, Session: 1}); err != nil {
			t.Fatal(err)
		}
	}
	r := &fleet.Rollout{SkillID: "weather", Action: fleet.RolloutInstall, CreatedBy: "operator:alice",
		Targets: []fleet.Target{fleet.TagTarget("kitchen"), fleet.DeviceTarget("pi-x"), fleet.DeviceTarget("pi-a")},
		Strategy: fleet.Strategy{Canary: 3, MaxInFlight: 2, FailureThresholdPct: 25, MinExecuted: 2, Timeout: 5 * time.Minute,
			Deadline: time.Hour, RatePerMin: 40, RampBasePerMin: 5, RampEvery: 2 * time.Minute}}
	es := mustRollout(t, db, r)
	if r.ID == 0 || r.Version != "1.1.0" || r.State != fleet.RolloutQueued || !r.CreatedAt.Equal(c.Now()) {
		t.Fatalf("rollout = %+v", r)
	}
	var order []string
	for _, e := range es {
		order = append(order, fmt.Sprintf("%s:%v:%s", e.DeviceID, e.Canary, e.State))
	}
	want := []string{"pi-c:true:queued", "pi-d:true:queued", "pi-a:true:queued", "pi-b:false:queued", "pi-x:false:queued"}
	if !slices.Equal(order, want) {
		t.Fatalf("executions = %v, want %v", order, want)
	}
	got, err := db.GetRollout(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Strategy != r.Strategy || got.CreatedBy != "operator:alice" || len(got.Targets) != 3 ||
		got.Counts[fleet.ExecQueued] != 5 || got.Version != "1.1.0" {
		t.Fatalf("GetRollout = %+v", got)
	}
	un := &fleet.Rollout{SkillID: "old.skill", Action: fleet.RolloutUninstall, Targets: []fleet.Target{fleet.AllTarget()}}
	if es := mustRollout(t, db, un); len(es) != 5 {
		t.Fatalf("uninstall of an uncatalogued skill to all: %d executions", len(es))
	}
	list, err := db.ListRollouts(ctx, fleet.RolloutFilter{})
	if err != nil || len(list) != 2 || list[0].ID != un.ID || list[1].Counts[fleet.ExecQueued] != 5 {
		t.Fatalf("ListRollouts = %v, %v", list, err)
	}
	if l, _ := db.ListRollouts(ctx, fleet.RolloutFilter{SkillID: "weather", States: []fleet.RolloutState{fleet.RolloutQueued}, Limit: 1}); len(l) != 1 || l[0].ID != r.ID {
		t.Fatalf("filtered ListRollouts = %v", l)
	}

	target := func(ts ...fleet.Target) []fleet.Target { return ts }
	tests := []struct {
		name string
		r    fleet.Rollout
		code string
	}{
		{"unknown skill", fleet.Rollout{SkillID: "nope", Action: fleet.RolloutInstall, Targets: target(fleet.AllTarget())}, fleet.ENOTFOUND},
		{"unknown version", fleet.Rollout{SkillID: "weather", Version: "9", Action: fleet.RolloutInstall, Targets: target(fleet.AllTarget())}, fleet.ENOTFOUND},
		{"unknown device", fleet.Rollout{SkillID: "weather", Action: fleet.RolloutInstall, Targets: target(fleet.DeviceTarget("pi-9"))}, fleet.ENOTFOUND},
		{"empty tag", fleet.Rollout{SkillID: "weather", Action: fleet.RolloutInstall, Targets: target(fleet.TagTarget("garage"))}, fleet.EINVALID},
		{"no target", fleet.Rollout{SkillID: "weather", Action: fleet.RolloutInstall}, fleet.EINVALID},
		{"invalid skill", fleet.Rollout{SkillID: "a b", Action: fleet.RolloutInstall, Targets: target(fleet.AllTarget())}, fleet.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := db.CreateRollout(ctx, &tt.r)
			wantCode(t, err, tt.code)
		})
	}
	_, err = db.GetRollout(ctx, 999)
	wantCode(t, err, fleet.ENOTFOUND)
	_, err = db.GetExecution(ctx, r.ID, "pi-9")
	wantCode(t, err, fleet.ENOTFOUND)
}

// TestRolloutSupersede: a newer rollout of the same skill takes a device
// from an older one instead of queueing behind it.
func TestRolloutSupersede(t *testing.T) {
	t.Parallel()
	db, _ := mustOpen(t)
	mustPublish(t, db, "weather", "1.0.0")
	mustPublish(t, db, "timer", "1.0.0")
	for _, id := range []string{"pi1", "pi2", "pi3"} {
		mustDevice(t, db, id, "kitchen")
	}
	if _, err := db.SetDeviceTags(ctx, "pi3", nil); err != nil {
		t.Fatal(err)
	}
	all := []fleet.Target{fleet.AllTarget()}
	old := &fleet.Rollout{SkillID: "weather", Action: fleet.RolloutInstall, Targets: all}
	mustRollout(t, db, old)
	other := &fleet.Rollout{SkillID: "timer", Action: fleet.RolloutInstall, Targets: all}
	mustRollout(t, db, other)
	mustRolloutState(t, db, old.ID, fleet.RolloutInProgress)
	mustExec(t, db, old.ID, "pi1", fleet.ExecInProgress)
	mustExec(t, db, old.ID, "pi2", fleet.ExecInProgress)
	mustExec(t, db, old.ID, "pi2", fleet.ExecSucceeded)

	newer := &fleet.Rollout{SkillID: "weather", Action: fleet.RolloutUninstall, Targets: []fleet.Target{fleet.TagTarget("kitchen")}}
	mustRollout(t, db, newer)

	tests := []struct {
		rollout int64
		device  string
		state   fleet.ExecState
		reason  string
		by      int64
	}{
		{old.ID, "pi1", fleet.ExecCanceled, fleet.ReasonSuperseded, newer.ID}, // was in progress
		{old.ID, "pi2", fleet.ExecSucceeded, "", 0},                           // already finished
		{old.ID, "pi3", fleet.ExecQueued, "", 0},                              // not in the newer target
		{other.ID, "pi1", fleet.ExecQueued, "", 0},                            // another skill
		{newer.ID, "pi1", fleet.ExecQueued, "", 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("rollout%d/%s", tt.rollout, tt.device), func(t *testing.T) {
			e, err := db.GetExecution(ctx, tt.rollout, tt.device)
			if err != nil {
				t.Fatal(err)
			}
			if e.State != tt.state || e.Reason != tt.reason || e.SupersededBy != tt.by {
				t.Errorf("execution = %s %q by %d, want %s %q by %d", e.State, e.Reason, e.SupersededBy, tt.state, tt.reason, tt.by)
			}
		})
	}
	es, _ := db.ListAudit(ctx, fleet.AuditFilter{Subject: fmt.Sprintf("rollout/%d/pi1", old.ID)}, 0)
	if len(es) != 2 || es[0].Action != "execution.canceled" || es[0].Actor != fleet.ActorController {
		t.Fatalf("audit of pi1 = %+v", es)
	}
}

// TestExecutionStateMachine drives every (from, to) pair through the store.
func TestExecutionStateMachine(t *testing.T) {
	t.Parallel()
	db, _ := mustOpen(t)
	mustPublish(t, db, "weather", "1.0.0")
	states := []fleet.ExecState{fleet.ExecQueued, fleet.ExecInProgress, fleet.ExecSucceeded,
		fleet.ExecFailed, fleet.ExecTimedOut, fleet.ExecCanceled}
	// How to reach each state from queued.
	paths := map[fleet.ExecState][]fleet.ExecState{
		fleet.ExecQueued:     nil,
		fleet.ExecInProgress: {fleet.ExecInProgress},
		fleet.ExecSucceeded:  {fleet.ExecInProgress, fleet.ExecSucceeded},
		fleet.ExecFailed:     {fleet.ExecInProgress, fleet.ExecFailed},
		fleet.ExecTimedOut:   {fleet.ExecInProgress, fleet.ExecTimedOut},
		fleet.ExecCanceled:   {fleet.ExecCanceled},
	}
	for i := range len(states) * len(states) {
		mustDevice(t, db, fmt.Sprintf("pi%02d", i))
	}
	r := &fleet.Rollout{SkillID: "weather", Action: fleet.RolloutInstall, Targets: []fleet.Target{fleet.AllTarget()}}
	mustRollout(t, db, r)
	mustRolloutState(t, db, r.ID, fleet.RolloutInProgress)
	i := 0
	for _, from := range states {
		for _, to := range states {
			dev := fmt.Sprintf("pi%02d", i)
			i++
			t.Run(string(from)+"->"+string(to), func(t *testing.T) {
				for _, s := range paths[from] {
					mustExec(t, db, r.ID, dev, s)
				}
				before, _ := db.GetExecution(ctx, r.ID, dev)
				e, err := db.TransitionExecution(ctx, r.ID, dev, to, "because")
				if from.CanTransition(to) {
					if err != nil || e.State != to || e.Reason != "because" {
						t.Fatalf("legal move: %+v, %v", e, err)
					}
					return
				}
				wantCode(t, err, fleet.EINVALID)
				after, _ := db.GetExecution(ctx, r.ID, dev)
				if *after != *before {
					t.Fatalf("illegal move changed the execution: %+v → %+v", before, after)
				}
			})
		}
	}
	_, err := db.TransitionExecution(ctx, r.ID, "pi00", "exploded", "")
	wantCode(t, err, fleet.EINVALID)
	_, err = db.TransitionExecution(ctx, r.ID, "nope", fleet.ExecInProgress, "")
	wantCode(t, err, fleet.ENOTFOUND)
}

func TestExecutionLifecycle(t *testing.T) {
	t.Parallel()
	db, c := mustOpen(t)
	mustPublish(t, db, "weather", "1.0.0")
	mustDevice(t, db, "pi1")
	mustDevice(t, db, "pi2")
	r := &fleet.Rollout{SkillID: "weather", Action: fleet.RolloutInstall, Targets: []fleet.Target{fleet.AllTarget()}}
	mustRollout(t, db, r)

	// Executions start only while the rollout is in progress.
	_, err := db.TransitionExecution(ctx, r.ID, "pi1", fleet.ExecInProgress, "")
	wantCode(t, err, fleet.EINVALID)
	c.Advance(time.Second)
	started := mustRolloutState(t, db, r.ID, fleet.RolloutInProgress)
	if !started.StartedAt.Equal(c.Now()) {
		t.Fatalf("rollout started_at = %v", started.StartedAt)
	}
	e := mustExec(t, db, r.ID, "pi1", fleet.ExecInProgress)
	c.Advance(time.Second)
	e = mustExec(t, db, r.ID, "pi1", fleet.ExecQueued) // the device went away
	c.Advance(time.Second)
	e = mustExec(t, db, r.ID, "pi1", fleet.ExecInProgress)
	c.Advance(time.Second)
	e = mustExec(t, db, r.ID, "pi1", fleet.ExecSucceeded)
	if e.Attempts != 2 || !e.StartedAt.Equal(c.Now().Add(-time.Second)) || !e.FinishedAt.Equal(c.Now()) {
		t.Fatalf("execution = %+v", e)
	}
	if es, _ := db.ListExecutions(ctx, fleet.ExecutionFilter{RolloutID: r.ID, States: []fleet.ExecState{fleet.ExecQueued}}); len(es) != 1 || es[0].DeviceID != "pi2" {
		t.Fatalf("queued executions = %v", es)
	}
	if es, _ := db.ListExecutions(ctx, fleet.ExecutionFilter{DeviceID: "pi1"}); len(es) != 1 || es[0].State != fleet.ExecSucceeded {
		t.Fatalf("pi1 executions = %v", es)
	}

	// Paused: nothing new starts.
	mustRolloutState(t, db, r.ID, fleet.RolloutPaused)
	// A move from a state the rollout has left (the engine read it in
	// progress, an operator paused it since) is a conflict and changes nothing.
	_, err = db.UpdateRolloutState(ctx, r.ID, fleet.RolloutInProgress, fleet.RolloutSucceeded, "")
	wantCode(t, err, fleet.ECONFLICT)
	if got, _ := db.GetRollout(ctx, r.ID); got.State != fleet.RolloutPaused {
		t.Fatalf("after a conflicting move the rollout is %s, want paused", got.State)
	}
	_, err = db.TransitionExecution(ctx, r.ID, "pi2", fleet.ExecInProgress, "")
	wantCode(t, err, fleet.EINVALID)
	_, err = db.UpdateRolloutState(ctx, r.ID, "", fleet.RolloutSucceeded, "")
	wantCode(t, err, fleet.EINVALID)

	// Abort cancels what has not finished, and is final.
	aborted, err := db.UpdateRolloutState(ctx, r.ID, "", fleet.RolloutAborted, "operator")
	if err != nil || aborted.Reason != "operator" || aborted.FinishedAt.IsZero() ||
		aborted.Counts[fleet.ExecCanceled] != 1 || aborted.Counts[fleet.ExecSucceeded] != 1 {
		t.Fatalf("aborted = %+v, %v", aborted, err)
	}
	if e, _ := db.GetExecution(ctx, r.ID, "pi2"); e.State != fleet.ExecCanceled || e.Reason != fleet.ReasonRolloutAborted {
		t.Fatalf("pi2 after abort = %+v", e)
	}
	_, err = db.UpdateRolloutState(ctx, r.ID, "", fleet.RolloutInProgress, "")
	wantCode(t, err, fleet.EINVALID)
	_, err = db.UpdateRolloutState(ctx, 999, "", fleet.RolloutPaused, "")
	wantCode(t, err, fleet.ENOTFOUND)
}

func TestDeleteDeviceCancelsExecutions(t *testing.T) {
	t.Parallel()
	db, _ := mustOpen(t)
	mustPublish(t, db, "weather", "1.0.0")
	mustDevice(t, db, "pi1")
	r := &fleet.Rollout{SkillID: "weather", Action: fleet.RolloutInstall, Targets: []fleet.Target{fleet.DeviceTarget("pi1")}}
	mustRollout(t, db, r)
	if err := db.DeleteDevice(ctx, "pi1"); err != nil {
		t.Fatal(err)
	}
	e, err := db.GetExecution(ctx, r.ID, "pi1")
	if err != nil || e.State != fleet.ExecCanceled || e.Reason != fleet.ReasonDeviceRemoved {
		t.Fatalf("execution of a removed device = %+v, %v", e, err)
	}
}

// TestRolloutUpdatedFollowsExecutions: a rollout's updated_at (`rollout
// list` UPDATED) moves when one of its executions starts or finishes, not
// only when the rollout's own state changes (issue 16 §8).
func TestRolloutUpdatedFollowsExecutions(t *testing.T) {
	db, c := mustOpen(t)
	mustPublish(t, db, "weather", "1.0.0")
	mustDevice(t, db, "pi1")
	r := &fleet.Rollout{SkillID: "weather", Action: fleet.RolloutInstall, Targets: []fleet.Target{fleet.AllTarget()}}
	mustRollout(t, db, r)
	mustRolloutState(t, db, r.ID, fleet.RolloutInProgress)
	for _, to := range []fleet.ExecState{fleet.ExecInProgress, fleet.ExecSucceeded} {
		c.Advance(time.Minute)
		mustExec(t, db, r.ID, "pi1", to)
		got, err := db.GetRollout(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !got.UpdatedAt.Equal(c.Now()) {
			t.Fatalf("after the execution became %s: rollout updated_at = %v, want %v", to, got.UpdatedAt, c.Now())
		}
	}
}
