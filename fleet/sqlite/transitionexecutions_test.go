package sqlite_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/sqlite"
)

// inProgressRollout creates a rollout over devs with every execution in
// progress.
func inProgressRollout(t *testing.T, db *sqlite.DB, devs ...string) *fleet.Rollout {
	t.Helper()
	mustPublish(t, db, "weather", "1.0.0")
	r := &fleet.Rollout{SkillID: "weather", Action: fleet.RolloutInstall}
	for _, id := range devs {
		mustDevice(t, db, id)
		r.Targets = append(r.Targets, fleet.DeviceTarget(id))
	}
	mustRollout(t, db, r)
	mustRolloutState(t, db, r.ID, fleet.RolloutInProgress)
	for _, id := range devs {
		mustExec(t, db, r.ID, id, fleet.ExecInProgress)
	}
	return r
}

// TestTransitionExecutions: a batch applies each move as TransitionExecution
// would (state, reason, audit entry); a move the state machine refuses (pi-b
// failing after it succeeded in the same batch, pi-c started again) or of an
// execution that is gone fails alone, and the others commit.
func TestTransitionExecutions(t *testing.T) {
	t.Parallel()
	db, _ := mustOpen(t)
	r := inProgressRollout(t, db, "pi-a", "pi-b", "pi-c")
	move := func(dev string, to fleet.ExecState, reason string) fleet.ExecMove {
		return fleet.ExecMove{RolloutID: r.ID, DeviceID: dev, To: to, Reason: reason}
	}
	errs, err := db.TransitionExecutions(ctx, []fleet.ExecMove{
		move("pi-a", fleet.ExecSucceeded, ""),
		move("pi-b", fleet.ExecSucceeded, "installed, waiting for internet"),
		move("pi-b", fleet.ExecFailed, "late"),
		move("pi-gone", fleet.ExecSucceeded, ""),
		move("pi-c", fleet.ExecInProgress, ""),
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"", "", fleet.EINVALID, fleet.ENOTFOUND, fleet.EINVALID} {
		if got := fleet.ErrorCode(errs[i]); got != want {
			t.Errorf("move %d: error %v (code %q), want code %q", i, errs[i], got, want)
		}
	}
	for _, c := range []struct {
		dev    string
		state  fleet.ExecState
		reason string
	}{
		{"pi-a", fleet.ExecSucceeded, ""},
		{"pi-b", fleet.ExecSucceeded, "installed, waiting for internet"},
		{"pi-c", fleet.ExecInProgress, ""},
	} {
		e, err := db.GetExecution(ctx, r.ID, c.dev)
		if err != nil || e.State != c.state || e.Reason != c.reason {
			t.Fatalf("%s: %+v, %v; want %s %q", c.dev, e, err, c.state, c.reason)
		}
		if c.state.Terminal() && e.FinishedAt.IsZero() {
			t.Fatalf("%s ended without a finish time", c.dev)
		}
	}
	for _, dev := range []string{"pi-a", "pi-b"} {
		es, err := db.ListAudit(ctx, fleet.AuditFilter{Action: "execution.succeeded", Subject: fmt.Sprintf("rollout/%d/%s", r.ID, dev)}, 0)
		if err != nil || len(es) != 1 {
			t.Fatalf("audit of %s's success: %d entries, %v; want 1", dev, len(es), err)
		}
	}
	if _, err := db.TransitionExecutions(ctx, []fleet.ExecMove{move("pi-c", fleet.ExecSucceeded, ""), move("not an id!", fleet.ExecSucceeded, "")}); fleet.ErrorCode(err) != fleet.EINVALID {
		t.Fatalf("a batch with an invalid device id: %v, want invalid", err)
	}
	if e, _ := db.GetExecution(ctx, r.ID, "pi-c"); e.State != fleet.ExecInProgress {
		t.Fatalf("pi-c is %s after a refused batch", e.State)
	}
}

// TestTransitionExecutionsAllOrNothing: a batch that fails part-way (the
// database fills up after its first moves are written) leaves every
// execution as it was: a crash or error mid-batch loses nothing and
// half-writes nothing, and the same batch commits once there is room.
func TestTransitionExecutionsAllOrNothing(t *testing.T) {
	t.Parallel()
	db, _ := mustOpen(t)
	devs := make([]string, 40)
	for i := range devs {
		devs[i] = fmt.Sprintf("pi-%02d", i)
	}
	r := inProgressRollout(t, db, devs...)
	moves := make([]fleet.ExecMove, len(devs))
	for i, dev := range devs {
		// 4 KiB each, written twice (the execution and its audit entry):
		// far more than the pages the file has free.
		moves[i] = fleet.ExecMove{RolloutID: r.ID, DeviceID: dev, To: fleet.ExecFailed, Reason: strings.Repeat("x", 4096)}
	}
	if err := db.SetMaxPageCount(ctx, 1); err != nil { // at most the pages it has now
		t.Fatal(err)
	}
	errs, err := db.TransitionExecutions(ctx, moves)
	if err == nil || errs != nil {
		t.Fatalf("a batch bigger than the room left: %v, %v; want it refused whole", errs, err)
	}
	if fleet.ErrorCode(err) != fleet.EUNAVAILABLE {
		t.Fatalf("code %q (%v): want unavailable (database full)", fleet.ErrorCode(err), err)
	}
	es, err := db.ListExecutions(ctx, fleet.ExecutionFilter{RolloutID: r.ID, States: []fleet.ExecState{fleet.ExecInProgress}})
	if err != nil || len(es) != len(devs) {
		t.Fatalf("%d executions in progress after the refused batch (%v), want all %d", len(es), err, len(devs))
	}
	integrityOK(t, db.Path())

	if err := db.SetMaxPageCount(ctx, 1<<30); err != nil {
		t.Fatal(err)
	}
	if errs, err := db.TransitionExecutions(ctx, moves); err != nil || len(errs) != len(moves) {
		t.Fatalf("the batch once there is room: %v, %v", errs, err)
	}
	es, err = db.ListExecutions(ctx, fleet.ExecutionFilter{RolloutID: r.ID, States: []fleet.ExecState{fleet.ExecFailed}})
	if err != nil || len(es) != len(devs) {
		t.Fatalf("%d executions failed after the batch committed (%v), want %d", len(es), err, len(devs))
	}
}
