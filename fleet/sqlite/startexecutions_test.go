package sqlite_test

import (
	"encoding/json"
	"testing"

	"github.com/chorus-edge/chorus/fleet"
)

// TestStartExecutions: a batch puts each device assignment, stores each
// device's new document and moves each execution in progress; a start naming
// a version that is gone fails alone; a start the state machine refuses
// (the rollout was paused) leaves the whole batch undone.
func TestStartExecutions(t *testing.T) {
	db, _ := mustOpen(t)
	mustPublish(t, db, "weather", "1.0.0")
	for _, id := range []string{"pi-a", "pi-b", "pi-c"} {
		mustDevice(t, db, id)
	}
	before := map[string]fleet.Desired{}
	for _, id := range []string{"pi-a", "pi-b", "pi-c"} {
		d, err := db.DesiredFor(ctx, id) // fills the cache
		if err != nil {
			t.Fatal(err)
		}
		before[id] = d
	}
	r := &fleet.Rollout{SkillID: "weather", Action: fleet.RolloutInstall,
		Targets: []fleet.Target{fleet.DeviceTarget("pi-a"), fleet.DeviceTarget("pi-b"), fleet.DeviceTarget("pi-c")}}
	mustRollout(t, db, r)
	mustRolloutState(t, db, r.ID, fleet.RolloutInProgress)
	start := func(dev, version string) fleet.ExecStart {
		return fleet.ExecStart{RolloutID: r.ID, Assignment: install("weather", fleet.DeviceTarget(dev), version, "")}
	}

	res, err := db.StartExecutions(ctx, []fleet.ExecStart{start("pi-a", "1.0.0"), start("pi-b", "9.9.9")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Err != nil || res[0].Execution.State != fleet.ExecInProgress {
		t.Fatalf("pi-a: %+v", res)
	}
	wantCode(t, res[1].Err, fleet.ENOTFOUND)
	if v := res[0].Desired; v.Version <= before["pi-a"].Version || v.Skills["weather"].Version != "1.0.0" {
		t.Fatalf("pi-a's document %+v, before %+v", v, before["pi-a"])
	}
	if d, err := db.DesiredFor(ctx, "pi-a"); err != nil || d.Version != res[0].Desired.Version || len(d.Skills) != 1 {
		t.Fatalf("DesiredFor(pi-a) = %+v, %v; StartExecutions said %+v", d, err, res[0].Desired)
	}
	if e, _ := db.GetExecution(ctx, r.ID, "pi-b"); e.State != fleet.ExecQueued {
		t.Fatalf("pi-b's execution is %s after its start failed", e.State)
	}
	if _, err := db.GetAssignment(ctx, "weather", fleet.DeviceTarget("pi-b")); fleet.ErrorCode(err) != fleet.ENOTFOUND {
		t.Fatalf("pi-b's failed start left an assignment (%v)", err)
	}
	wantSkills(t, db, "pi-b", map[string]string{})

	mustRolloutState(t, db, r.ID, fleet.RolloutPaused)
	if _, err := db.StartExecutions(ctx, []fleet.ExecStart{start("pi-c", "1.0.0"), start("pi-b", "1.0.0")}); fleet.ErrorCode(err) != fleet.EINVALID {
		t.Fatalf("start in a paused rollout: %v, want invalid", err)
	}
	for _, id := range []string{"pi-b", "pi-c"} {
		if e, _ := db.GetExecution(ctx, r.ID, id); e.State != fleet.ExecQueued {
			t.Fatalf("%s's execution is %s after a refused batch", id, e.State)
		}
		if _, err := db.GetAssignment(ctx, "weather", fleet.DeviceTarget(id)); fleet.ErrorCode(err) != fleet.ENOTFOUND {
			t.Fatalf("a refused batch left %s an assignment (%v)", id, err)
		}
		if d, err := db.DesiredFor(ctx, id); err != nil || d.Version != before[id].Version || len(d.Skills) != 0 {
			t.Fatalf("%s's document after a refused batch: %+v (%v), before %+v", id, d, err, before[id])
		}
	}
	if _, err := db.StartExecutions(ctx, []fleet.ExecStart{{RolloutID: r.ID, Assignment: install("weather", fleet.TagTarget("kitchen"), "", "")}}); fleet.ErrorCode(err) != fleet.EINVALID {
		t.Fatalf("a tag assignment: %v, want invalid", err)
	}
}

// TestStartExecutionsNumbers: a batch numbers its assignments and desired
// documents from counters it writes back once (startBatch.nextCounter), so
// the numbers are distinct and increasing within a batch, and what is
// written after the batch numbers past every one of them.
func TestStartExecutionsNumbers(t *testing.T) {
	db, _ := mustOpen(t)
	mustPublish(t, db, "weather", "1.0.0")
	devs := []string{"pi-a", "pi-b", "pi-c", "pi-d"}
	for _, id := range devs {
		mustDevice(t, db, id)
	}
	r := &fleet.Rollout{SkillID: "weather", Action: fleet.RolloutInstall, Targets: []fleet.Target{fleet.AllTarget()}}
	mustRollout(t, db, r)
	mustRolloutState(t, db, r.ID, fleet.RolloutInProgress)
	var starts []fleet.ExecStart
	for _, id := range devs[:3] {
		starts = append(starts, fleet.ExecStart{RolloutID: r.ID, Assignment: install("weather", fleet.DeviceTarget(id), "1.0.0", "")})
	}
	res, err := db.StartExecutions(ctx, starts)
	if err != nil {
		t.Fatal(err)
	}
	var lastDoc, lastSeq int64
	for i, s := range res {
		if s.Err != nil {
			t.Fatalf("start %d: %v", i, s.Err)
		}
		if s.Desired.Version <= lastDoc || starts[i].Assignment.Seq <= lastSeq {
			t.Fatalf("start %d: document %d, assignment seq %d; the one before %d, %d", i, s.Desired.Version, starts[i].Assignment.Seq, lastDoc, lastSeq)
		}
		lastDoc, lastSeq = s.Desired.Version, starts[i].Assignment.Seq
	}
	a := install("weather", fleet.DeviceTarget("pi-d"), "1.0.0", "")
	if err := db.PutAssignment(ctx, a); err != nil {
		t.Fatal(err)
	}
	if a.Seq <= lastSeq {
		t.Fatalf("assignment after the batch has seq %d, the batch's last %d", a.Seq, lastSeq)
	}
	d, err := db.DesiredFor(ctx, "pi-d")
	if err != nil {
		t.Fatal(err)
	}
	if d.Version <= lastDoc {
		t.Fatalf("document after the batch has version %d, the batch's last %d", d.Version, lastDoc)
	}
}

// TestStartExecutionsKeepSettings: a start with KeepSettings keeps the
// settings of the device assignment it replaces (an install or a
// configure), not those of an uninstall; without an assignment there are
// none; without KeepSettings the start's own settings are stored. The
// assignment it returns and the desired document carry what is stored.
func TestStartExecutionsKeepSettings(t *testing.T) {
	db, _ := mustOpen(t)
	mustPublish(t, db, "weather", "1.0.0")
	devs := []string{"pi-install", "pi-configure", "pi-uninstall", "pi-none", "pi-replace"}
	targets := make([]fleet.Target, len(devs))
	for i, id := range devs {
		mustDevice(t, db, id)
		targets[i] = fleet.DeviceTarget(id)
	}
	put := func(a *fleet.Assignment) {
		t.Helper()
		if err := db.PutAssignment(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	put(install("weather", fleet.DeviceTarget("pi-install"), "1.0.0", `{"unit": "C"}`))
	put(&fleet.Assignment{SkillID: "weather", Target: fleet.DeviceTarget("pi-configure"), Action: fleet.AssignConfigure,
		Settings: json.RawMessage(`{"unit":"F"}`)})
	put(&fleet.Assignment{SkillID: "weather", Target: fleet.DeviceTarget("pi-uninstall"), Action: fleet.AssignUninstall})
	put(install("weather", fleet.DeviceTarget("pi-replace"), "1.0.0", `{"unit":"K"}`))
	r := &fleet.Rollout{SkillID: "weather", Action: fleet.RolloutInstall, Targets: targets}
	mustRollout(t, db, r)
	mustRolloutState(t, db, r.ID, fleet.RolloutInProgress)
	var starts []fleet.ExecStart
	for _, id := range devs {
		starts = append(starts, fleet.ExecStart{RolloutID: r.ID, Assignment: install("weather", fleet.DeviceTarget(id), "1.0.0", ""),
			KeepSettings: id != "pi-replace"})
	}
	starts[4].Assignment.Settings = json.RawMessage(`{"unit": "R"}`)
	res, err := db.StartExecutions(ctx, starts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"pi-install": `{"unit":"C"}`, "pi-configure": `{"unit":"F"}`, "pi-uninstall": "", "pi-none": "",
		"pi-replace": `{"unit":"R"}`}
	for i, id := range devs {
		if res[i].Err != nil {
			t.Fatalf("%s: %v", id, res[i].Err)
		}
		if got := string(starts[i].Assignment.Settings); got != want[id] {
			t.Errorf("%s: the start's assignment has settings %q, want %q", id, got, want[id])
		}
		a, err := db.GetAssignment(ctx, "weather", fleet.DeviceTarget(id))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(a.Settings); got != want[id] || a.Action != fleet.AssignInstall || a.Version != "1.0.0" {
			t.Errorf("%s: stored %s %s with settings %q, want install 1.0.0 with %q", id, a.Action, a.Version, got, want[id])
		}
		if got := string(res[i].Desired.Skills["weather"].Settings); got != want[id] {
			t.Errorf("%s: desired settings %q, want %q", id, got, want[id])
		}
	}
}
