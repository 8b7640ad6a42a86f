package sqlite_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/sqlite"
	"github.com/chorus-edge/chorus/gateway/state"
)

// BenchmarkDesiredFor computes desired documents over 1,000 devices in 10
// tags with 20 assignments (10 skills to tags, 5 to all, 5 to devices).
// Each op is one DesiredFor of one device, cycling over the fleet; after the
// first pass every document is unchanged, the steady state of a reconciler.
func BenchmarkDesiredFor(b *testing.B) {
	db, _ := mustOpen(b)
	for s := range 20 {
		mustPublish(b, db, fmt.Sprintf("skill%02d", s), "1.0.0")
	}
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = fmt.Sprintf("pi%04d", i)
		mustDevice(b, db, ids[i], fmt.Sprintf("room%d", i%10), fmt.Sprintf("floor%d", i%3))
	}
	for s := range 20 {
		skill := fmt.Sprintf("skill%02d", s)
		var t fleet.Target
		switch {
		case s < 10:
			t = fleet.TagTarget(fmt.Sprintf("room%d", s))
		case s < 15:
			t = fleet.AllTarget()
		default:
			t = fleet.DeviceTarget(ids[s*37])
		}
		mustPut(b, db, &fleet.Assignment{SkillID: skill, Target: t, Action: fleet.AssignInstall,
			Settings: []byte(`{"units":"metric"}`)})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := db.DesiredFor(ctx, ids[i%len(ids)]); err != nil {
			b.Fatal(err)
		}
	}
}

// benchReport is a skills payload as a 10,000-device bench's device sends
// it: five local skills and one fleet-managed, all loaded.
func benchReport(i int) json.RawMessage {
	now := time.Date(2026, 12, 3, 18, 0, 0, i, time.UTC)
	r := state.Skills{AppliedVersion: 2, UpdatedAt: now}
	for s := range 6 {
		r.Skills = append(r.Skills, state.Skill{ID: fmt.Sprintf("skill-%d.openvoiceos", s), Version: "1.0.0",
			State: state.Loaded, Active: true, WaitingFor: []string{}, Requirements: []string{}, Managed: s == 5, Since: now})
	}
	b, _ := state.Encode(r)
	return b
}

// cachedDevices opens a store with 1,000 devices, pi0000 to pi0999, each
// read once so that its row is cached, after a six-skill report when
// reported is set.
func cachedDevices(b *testing.B, reported bool) (*sqlite.DB, []string) {
	db, _ := mustOpen(b)
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = fmt.Sprintf("pi%04d", i)
		mustDevice(b, db, ids[i])
		if reported {
			if err := db.UpdateReported(ctx, ids[i], benchReport(i), 2); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := db.GetDevice(ctx, ids[i]); err != nil {
			b.Fatal(err)
		}
	}
	return db, ids
}

// BenchmarkGetDeviceReported is the controller's read of a device on every
// pass: GetDevice of a cached row with a six-skill report (the row cache,
// devicecache.go; the report packed, packedjson.go), cycling over 1,000
// devices.
func BenchmarkGetDeviceReported(b *testing.B) {
	db, ids := cachedDevices(b, true)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := db.GetDevice(ctx, ids[i%len(ids)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpdateStatesReports stores the inbox's batches of 100 skills
// reports of cached devices (one UpdateStates each), cycling over 1,000
// devices, under a cancellable context as the controller's inbox does.
func BenchmarkUpdateStatesReports(b *testing.B) {
	db, ids := cachedDevices(b, false)
	batches := make([][]fleet.StateUpdate, 10)
	for i := range batches {
		for j := range 100 {
			id := ids[i*100+j]
			batches[i] = append(batches[i], fleet.StateUpdate{DeviceID: id, Reported: true, Payload: benchReport(i*100 + j), AppliedVersion: 2})
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := db.UpdateStates(b.Context(), batches[i%len(batches)]); err != nil {
			b.Fatal(err)
		}
	}
}
