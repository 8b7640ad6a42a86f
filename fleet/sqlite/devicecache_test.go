package sqlite_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/sqlite"
	"github.com/chorus-edge/chorus/gateway/state"
)

// stored is the device as its row is stored: ListDevices reads the file
// without the cache GetDevice keeps.
func stored(t *testing.T, db *sqlite.DB, id string) *fleet.Device {
	t.Helper()
	ds, err := db.ListDevices(ctx, fleet.DeviceFilter{})
	if err != nil {
		t.Fatalf("ListDevices: %v", err)
	}
	for _, d := range ds {
		if d.ID == id {
			return d
		}
	}
	return nil
}

// wantStored fails unless GetDevice returns what is stored for id.
func wantStored(t *testing.T, db *sqlite.DB, id string) {
	t.Helper()
	want := stored(t, db, id)
	got, err := db.GetDevice(ctx, id)
	if want == nil {
		if fleet.ErrorCode(err) != fleet.ENOTFOUND {
			t.Fatalf("GetDevice(%s) = %+v, %v; the device is not stored", id, got, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("GetDevice(%s): %v", id, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GetDevice(%s) =\n%+v\nstored:\n%+v", id, got, want)
	}
}

// fullReport is a skills payload of n loaded skills, long enough for the
// row cache to hold it packed (packedjson.go).
func fullReport(t *testing.T, n int) json.RawMessage {
	t.Helper()
	now := time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)
	r := state.Skills{AppliedVersion: 3, UpdatedAt: now}
	for i := range n {
		r.Skills = append(r.Skills, state.Skill{ID: fmt.Sprintf("skill-%d", i), Version: "1.0.0", State: state.Loaded,
			Active: true, WaitingFor: []string{}, Requirements: []string{}, Since: now})
	}
	b, err := state.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDeviceCacheFollowsEveryWrite: GetDevice keeps each row in memory;
// every write of what it reads (the row, its tags, its desired version)
// must change or drop the cached row, or the next GetDevice would return
// the row from before the write. Each step primes the cache, writes, and
// checks GetDevice against the stored row (the check fails with any
// tx.deviceChanged call taken out).
func TestDeviceCacheFollowsEveryWrite(t *testing.T) {
	db, c := mustOpen(t)
	mustPublish(t, db, "weather", "1.0.0")
	mustDevice(t, db, "pi1", "kitchen")
	mustDevice(t, db, "pi2")
	r := &fleet.Rollout{SkillID: "weather", Action: fleet.RolloutInstall, Targets: []fleet.Target{fleet.DeviceTarget("pi1")}}
	mustRollout(t, db, r)
	mustRolloutState(t, db, r.ID, fleet.RolloutInProgress)

	steps := []struct {
		name  string
		write func() error
	}{
		{"report", func() error {
			return db.UpdateReported(ctx, "pi1", json.RawMessage(`{"applied_version":1,"skills":[]}`), 1)
		}},
		{"report replaced", func() error {
			return db.UpdateReported(ctx, "pi1", json.RawMessage(`{"applied_version":2,"skills":[]}`), 2)
		}},
		{"report held packed", func() error { // packedjson.go
			return db.UpdateReported(ctx, "pi1", fullReport(t, 6), 3)
		}},
		{"connectivity", func() error {
			return db.UpdateConnectivity(ctx, "pi1", json.RawMessage(`{"internet":true}`))
		}},
		{"presence online", func() error {
			_, err := db.UpdatePresence(ctx, "pi1", fleet.Presence{Online: true, Session: 4})
			return err
		}},
		{"presence at a time", func() error {
			_, err := db.UpdatePresence(ctx, "pi1", fleet.Presence{Online: false, Session: 4, At: c.Now().Add(time.Second)})
			return err
		}},
		{"stale presence", func() error {
			_, err := db.UpdatePresence(ctx, "pi1", fleet.Presence{Online: true, Session: 3})
			return err
		}},
		{"birth", func() error {
			_, err := db.UpdateBirth(ctx, "pi1", fleet.Birth{Session: 5, AgentVersion: "1.2.3"})
			return err
		}},
		{"desired document stored", func() error {
			if err := db.PutAssignment(ctx, install("weather", fleet.DeviceTarget("pi1"), "1.0.0", "")); err != nil {
				return err
			}
			_, err := db.DesiredFor(ctx, "pi1")
			return err
		}},
		{"assignment removed, document stored", func() error {
			if err := db.DeleteAssignment(ctx, "weather", fleet.DeviceTarget("pi1")); err != nil {
				return err
			}
			_, err := db.DesiredFor(ctx, "pi1")
			return err
		}},
		{"execution started", func() error {
			_, err := db.StartExecutions(ctx, []fleet.ExecStart{{RolloutID: r.ID,
				Assignment: install("weather", fleet.DeviceTarget("pi1"), "1.0.0", "")}})
			return err
		}},
		{"tag added", func() error {
			_, err := db.AddDeviceTag(ctx, "pi1", "hall")
			return err
		}},
		{"tag removed", func() error {
			_, err := db.RemoveDeviceTag(ctx, "pi1", "kitchen")
			return err
		}},
		{"tags set", func() error {
			_, err := db.SetDeviceTags(ctx, "pi1", []string{"attic", "den"})
			return err
		}},
		{"key rotated", func() error {
			_, err := db.RotateDevice(ctx, "pi1", digest("new secret"), key(9))
			return err
		}},
		{"removed", func() error { return db.DeleteDevice(ctx, "pi1") }},
		{"created again", func() error { return db.CreateDevice(ctx, newDevice("pi1", "cellar")) }},
	}
	for _, s := range steps {
		wantStored(t, db, "pi1") // primes the cache
		wantStored(t, db, "pi2")
		c.Advance(time.Minute)
		if err := s.write(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		t.Run(s.name, func(t *testing.T) {
			wantStored(t, db, "pi1")
			wantStored(t, db, "pi2")
		})
	}
}

// TestDeviceCacheFailedWrite: a write that does not commit leaves GetDevice
// with the stored row.
func TestDeviceCacheFailedWrite(t *testing.T) {
	db, _ := mustOpen(t)
	mustDevice(t, db, "pi1")
	wantStored(t, db, "pi1")
	if err := db.UpdateReported(ctx, "nobody", json.RawMessage(`{"skills":[]}`), 1); fleet.ErrorCode(err) != fleet.ENOTFOUND {
		t.Fatalf("report of an unknown device: %v, want not found", err)
	}
	wantStored(t, db, "pi1")
	if _, err := db.GetDevice(ctx, "nobody"); fleet.ErrorCode(err) != fleet.ENOTFOUND {
		t.Fatalf("GetDevice(nobody): %v, want not found", err)
	}
}

// TestDeviceCacheReturnsCopies: what GetDevice returns is the caller's to
// change; the next call still returns the stored row.
func TestDeviceCacheReturnsCopies(t *testing.T) {
	db, _ := mustOpen(t)
	mustDevice(t, db, "pi1", "kitchen")
	if err := db.UpdateReported(ctx, "pi1", json.RawMessage(`{"skills":[]}`), 1); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		d, err := db.GetDevice(ctx, "pi1")
		if err != nil {
			t.Fatal(err)
		}
		d.Tags[0], d.Reported[0], d.SkillKey[0] = "x", 'x', d.SkillKey[0]+1
		d.Online = true
	}
	wantStored(t, db, "pi1")
}

// TestDeviceCacheReportPayloadIsCopied: the payload UpdateReported stores
// may be the caller's buffer, reused after the call.
func TestDeviceCacheReportPayloadIsCopied(t *testing.T) {
	db, _ := mustOpen(t)
	mustDevice(t, db, "pi1")
	wantStored(t, db, "pi1")
	buf := []byte(`{"skills":[]}`)
	if err := db.UpdateReported(ctx, "pi1", buf, 1); err != nil {
		t.Fatal(err)
	}
	copy(buf, `{"skills":{}}`)
	wantStored(t, db, "pi1")
}

// runningStored is what is stored of the device's in-progress executions:
// the device's whole list, filtered here (a filter the cache does not
// answer).
func runningStored(t *testing.T, db *sqlite.DB, id string) []*fleet.Execution {
	t.Helper()
	all, err := db.ListExecutions(ctx, fleet.ExecutionFilter{DeviceID: id})
	if err != nil {
		t.Fatalf("ListExecutions(%s): %v", id, err)
	}
	var out []*fleet.Execution
	for _, e := range all {
		if e.State == fleet.ExecInProgress {
			out = append(out, e)
		}
	}
	return out
}

// wantRunning fails unless the listing judge makes (one device, in
// progress) returns what is stored.
func wantRunning(t *testing.T, db *sqlite.DB, id string) {
	t.Helper()
	got, err := db.ListExecutions(ctx, fleet.ExecutionFilter{DeviceID: id, States: []fleet.ExecState{fleet.ExecInProgress}})
	if err != nil {
		t.Fatalf("ListExecutions(%s, in progress): %v", id, err)
	}
	if want := runningStored(t, db, id); !reflect.DeepEqual(got, want) {
		t.Fatalf("ListExecutions(%s, in progress) =\n%s\nstored:\n%s", id, execsString(got), execsString(want))
	}
}

func execsString(es []*fleet.Execution) string {
	b, _ := json.MarshalIndent(es, "", "  ")
	return string(b)
}

// TestRunningCacheFollowsEveryTransition: a device's in-progress executions
// are kept in memory; every way an execution enters or leaves in_progress
// (a batch of starts, a transition alone or in a batch, a newer rollout
// superseding, a rollout canceled, the device removed) must change the
// cached list, or judge would miss an execution or judge one that ended.
func TestRunningCacheFollowsEveryTransition(t *testing.T) {
	db, c := mustOpen(t)
	mustPublish(t, db, "weather", "1.0.0")
	mustPublish(t, db, "timer", "1.0.0")
	mustDevice(t, db, "pi1")
	mustDevice(t, db, "pi2")
	rollout := func(skill string, devices ...string) *fleet.Rollout {
		r := &fleet.Rollout{SkillID: skill, Action: fleet.RolloutInstall}
		for _, d := range devices {
			r.Targets = append(r.Targets, fleet.DeviceTarget(d))
		}
		mustRollout(t, db, r)
		mustRolloutState(t, db, r.ID, fleet.RolloutInProgress)
		return r
	}
	start := func(r *fleet.Rollout, devices ...string) error {
		var ss []fleet.ExecStart
		for _, d := range devices {
			ss = append(ss, fleet.ExecStart{RolloutID: r.ID, Assignment: install(r.SkillID, fleet.DeviceTarget(d), "1.0.0", "")})
		}
		_, err := db.StartExecutions(ctx, ss)
		return err
	}
	var weather, timer, timer2, weather2 *fleet.Rollout
	steps := []struct {
		name  string
		write func() error
	}{
		{"rollout created", func() error { weather = rollout("weather", "pi1", "pi2"); return nil }},
		{"started in a batch", func() error { return start(weather, "pi1", "pi2") }},
		{"a second rollout started", func() error { timer = rollout("timer", "pi1"); return start(timer, "pi1") }},
		{"succeeded alone", func() error {
			_, err := db.TransitionExecution(ctx, weather.ID, "pi1", fleet.ExecSucceeded, "")
			return err
		}},
		{"superseded", func() error { timer2 = rollout("timer", "pi1"); return nil }},
		{"the newer one started", func() error { return start(timer2, "pi1") }},
		{"rollout canceled", func() error {
			_, err := db.UpdateRolloutState(ctx, timer2.ID, "", fleet.RolloutCanceled, "")
			return err
		}},
		{"started again", func() error { weather2 = rollout("weather", "pi1", "pi2"); return start(weather2, "pi1", "pi2") }},
		{"failed in a batch", func() error {
			_, err := db.TransitionExecutions(ctx, []fleet.ExecMove{{RolloutID: weather2.ID, DeviceID: "pi1", To: fleet.ExecFailed, Reason: "no"}})
			return err
		}},
		{"device removed", func() error { return db.DeleteDevice(ctx, "pi2") }},
	}
	for _, s := range steps {
		wantRunning(t, db, "pi1") // primes the cache
		wantRunning(t, db, "pi2")
		c.Advance(time.Minute)
		if err := s.write(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		t.Run(s.name, func(t *testing.T) {
			wantRunning(t, db, "pi1")
			wantRunning(t, db, "pi2")
		})
	}
}

// TestGetDeviceInto: the device GetDeviceInto reads is the one GetDevice
// reads, cached or not, with the report in the caller's memory when it
// has room; the memory is the caller's to reuse afterwards.
func TestGetDeviceInto(t *testing.T) {
	db, _ := mustOpen(t)
	mustDevice(t, db, "pi1")
	report := []byte(`{"applied_version":1,"skills":[{"id":"a","version":"1.0.0","state":"loaded","active":true,"waiting_for":[],"degraded":false,"requirements":[],"managed":false,"error":"","attempts":0,"next_retry":null,"since":"2026-01-01T00:00:00Z"}]}`)
	if err := db.UpdateReported(ctx, "pi1", report, 1); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 3, 1<<10)
	for _, pass := range []string{"first", "cached"} {
		got, err := db.GetDeviceInto(ctx, "pi1", buf)
		if err != nil {
			t.Fatal(err)
		}
		want, err := db.GetDevice(ctx, "pi1")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s read: GetDeviceInto =\n%+v\nGetDevice =\n%+v", pass, got, want)
		}
		if pass == "cached" && &got.Reported[0] != &buf[:1][0] {
			t.Error("the cached report was not unpacked into buf")
		}
		clear(buf[:cap(buf)]) // the caller reuses its memory
		wantStored(t, db, "pi1")
	}
	if _, err := db.GetDeviceInto(ctx, "nobody", buf); fleet.ErrorCode(err) != fleet.ENOTFOUND {
		t.Fatalf("GetDeviceInto(nobody) = %v, want ENOTFOUND", err)
	}
}
