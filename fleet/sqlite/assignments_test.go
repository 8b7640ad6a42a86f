package sqlite_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/fleet"
)

func install(skill string, t fleet.Target, version, settings string) *fleet.Assignment {
	a := &fleet.Assignment{SkillID: skill, Target: t, Action: fleet.AssignInstall, Version: version}
	if settings != "" {
		a.Settings = json.RawMessage(settings)
	}
	return a
}

func TestAssignments(t *testing.T) {
	t.Parallel()
	db, c := mustOpen(t)
	mustPublish(t, db, "weather", "1.0.0")
	mustDevice(t, db, "pi1", "kitchen")

	a := install("weather", fleet.TagTarget("kitchen"), "", `{ "units" : "metric" }`)
	mustPut(t, db, a)
	if a.ID == 0 || a.Seq == 0 || string(a.Settings) != `{"units":"metric"}` || !a.CreatedAt.Equal(c.Now()) {
		t.Fatalf("put = %+v", a)
	}
	c.Advance(time.Minute)
	b := install("weather", fleet.TagTarget("kitchen"), "1.0.0", "")
	mustPut(t, db, b) // replaces the same (skill, target)
	if b.ID != a.ID || b.Seq <= a.Seq || !b.CreatedAt.Equal(a.CreatedAt) || !b.UpdatedAt.Equal(c.Now()) {
		t.Fatalf("upsert = %+v, first %+v", b, a)
	}
	got, err := db.GetAssignment(ctx, "weather", fleet.TagTarget("kitchen"))
	if err != nil || got.Version != "1.0.0" || got.Settings != nil || got.Seq != b.Seq {
		t.Fatalf("GetAssignment = %+v, %v", got, err)
	}
	mustPut(t, db, install("weather", fleet.AllTarget(), "", ""))
	mustPut(t, db, &fleet.Assignment{SkillID: "weather", Target: fleet.DeviceTarget("pi1"), Action: fleet.AssignUninstall})
	list, err := db.ListAssignments(ctx, fleet.AssignmentFilter{SkillID: "weather"})
	if err != nil || len(list) != 3 || list[0].Target.Kind != fleet.TargetAll || list[2].Target.Kind != fleet.TargetDevice {
		t.Fatalf("ListAssignments = %v, %v", list, err)
	}
	tag := fleet.TagTarget("kitchen")
	if l, _ := db.ListAssignments(ctx, fleet.AssignmentFilter{Target: &tag}); len(l) != 1 {
		t.Fatalf("by target = %v", l)
	}

	tests := []struct {
		name string
		call func() error
		code string
	}{
		{"unknown skill", func() error { return db.PutAssignment(ctx, install("nope", fleet.AllTarget(), "", "")) }, fleet.ENOTFOUND},
		{"unknown version", func() error { return db.PutAssignment(ctx, install("weather", fleet.AllTarget(), "9.9", "")) }, fleet.ENOTFOUND},
		{"unknown device", func() error { return db.PutAssignment(ctx, install("weather", fleet.DeviceTarget("pi9"), "", "")) }, fleet.ENOTFOUND},
		{"invalid target", func() error { return db.PutAssignment(ctx, install("weather", fleet.TagTarget(""), "", "")) }, fleet.EINVALID},
		{"invalid settings", func() error { return db.PutAssignment(ctx, install("weather", fleet.AllTarget(), "", `[]`)) }, fleet.EINVALID},
		{"get missing", func() error { _, err := db.GetAssignment(ctx, "weather", fleet.TagTarget("x")); return err }, fleet.ENOTFOUND},
		{"delete", func() error { return db.DeleteAssignment(ctx, "weather", fleet.AllTarget()) }, ""},
		{"delete missing", func() error { return db.DeleteAssignment(ctx, "weather", fleet.AllTarget()) }, fleet.ENOTFOUND},
		{"delete invalid", func() error { return db.DeleteAssignment(ctx, "weather", fleet.Target{Kind: "x"}) }, fleet.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantCode(t, tt.call(), tt.code) })
	}

	// Removing a device removes its device assignments.
	if err := db.DeleteDevice(ctx, "pi1"); err != nil {
		t.Fatal(err)
	}
	_, err = db.GetAssignment(ctx, "weather", fleet.DeviceTarget("pi1"))
	wantCode(t, err, fleet.ENOTFOUND)
}

// desiredVersions returns the skill → version map of a desired document.
func desiredVersions(d fleet.Desired) map[string]string {
	out := map[string]string{}
	for id, s := range d.Skills {
		out[id] = s.Version
	}
	return out
}

func TestDesiredFor(t *testing.T) {
	t.Parallel()
	db, c := mustOpen(t)
	w1 := mustPublish(t, db, "weather", "1.0.0")
	mustPublish(t, db, "timer", "1.0.0")
	mustPublish(t, db, "news", "1.0.0")
	mustDevice(t, db, "pi1", "kitchen")
	mustDevice(t, db, "pi2")

	desired := func(id string) fleet.Desired {
		t.Helper()
		d, err := db.DesiredFor(ctx, id)
		if err != nil {
			t.Fatalf("DesiredFor(%s): %v", id, err)
		}
		return d
	}
	empty := desired("pi1")
	if empty.Version == 0 || len(empty.Skills) != 0 {
		t.Fatalf("empty doc = %+v", empty)
	}
	if again := desired("pi1"); again.Version != empty.Version {
		t.Fatalf("unchanged doc got a new version: %d → %d", empty.Version, again.Version)
	}

	mustPut(t, db, install("weather", fleet.AllTarget(), "", `{"units":"metric"}`))
	mustPut(t, db, install("timer", fleet.TagTarget("kitchen"), "", ""))
	mustPut(t, db, install("news", fleet.DeviceTarget("pi2"), "1.0.0", `{"feed":"bbc"}`))
	d1 := desired("pi1")
	if d1.Version <= empty.Version {
		t.Fatalf("changed doc kept version %d", d1.Version)
	}
	if got := desiredVersions(d1); len(got) != 2 || got["weather"] != "1.0.0" || got["timer"] != "1.0.0" {
		t.Fatalf("pi1 skills = %v", got)
	}
	w := d1.Skills["weather"]
	if w.SHA256 != w1.SHA256 || w.Size != w1.Size || w.URL != "/v1/artifacts/"+w1.SHA256 || string(w.Settings) != `{"units":"metric"}` {
		t.Fatalf("weather entry = %+v", w)
	}
	d2 := desired("pi2")
	if got := desiredVersions(d2); len(got) != 2 || got["news"] != "1.0.0" || string(d2.Skills["news"].Settings) != `{"feed":"bbc"}` {
		t.Fatalf("pi2 skills = %v", d2.Skills)
	}
	if d2.Version <= d1.Version {
		t.Fatalf("versions come from one counter: pi2 %d after pi1 %d", d2.Version, d1.Version)
	}
	if d, _ := db.GetDevice(ctx, "pi1"); d.DesiredVersion != d1.Version {
		t.Fatalf("Device.DesiredVersion = %d, want %d", d.DesiredVersion, d1.Version)
	}

	// Recomputing without a change keeps the version.
	if again := desired("pi1"); again.Version != d1.Version {
		t.Fatalf("version bumped without change: %d → %d", d1.Version, again.Version)
	}

	// A device that joins the tag later gets the tag's skills.
	if _, err := db.AddDeviceTag(ctx, "pi2", "kitchen"); err != nil {
		t.Fatal(err)
	}
	d2b := desired("pi2")
	if got := desiredVersions(d2b); len(got) != 3 || got["timer"] != "1.0.0" || d2b.Version <= d2.Version {
		t.Fatalf("after joining kitchen: v%d %v", d2b.Version, got)
	}

	// A new "latest" changes the documents of devices that follow latest.
	c.Advance(time.Minute)
	mustPublish(t, db, "weather", "2.0.0")
	d1b := desired("pi1")
	if d1b.Skills["weather"].Version != "2.0.0" || d1b.Version <= d1.Version {
		t.Fatalf("after publishing weather 2.0.0: v%d %v", d1b.Version, desiredVersions(d1b))
	}

	// Device beats tag beats all; a device uninstall removes the skill.
	mustPut(t, db, install("weather", fleet.TagTarget("kitchen"), "1.0.0", `{"units":"imperial"}`))
	if s := desired("pi1").Skills["weather"]; s.Version != "1.0.0" || string(s.Settings) != `{"units":"imperial"}` {
		t.Fatalf("tag over all: %+v", s)
	}
	mustPut(t, db, install("weather", fleet.DeviceTarget("pi1"), "2.0.0", ""))
	if s := desired("pi1").Skills["weather"]; s.Version != "2.0.0" || string(s.Settings) != `{"units":"imperial"}` {
		t.Fatalf("device over tag: %+v", s)
	}
	mustPut(t, db, &fleet.Assignment{SkillID: "weather", Target: fleet.DeviceTarget("pi1"), Action: fleet.AssignUninstall})
	if got := desiredVersions(desired("pi1")); got["weather"] != "" || got["timer"] == "" {
		t.Fatalf("device uninstall: %v", got)
	}
	// Settings-only layer.
	mustPut(t, db, &fleet.Assignment{SkillID: "timer", Target: fleet.DeviceTarget("pi1"), Action: fleet.AssignConfigure,
		Settings: json.RawMessage(`{"beep":false}`)})
	if s := desired("pi1").Skills["timer"]; string(s.Settings) != `{"beep":false}` {
		t.Fatalf("configure: %+v", s)
	}

	_, err := db.DesiredFor(ctx, "pi9")
	wantCode(t, err, fleet.ENOTFOUND)
	_, err = db.DesiredFor(ctx, "gateway")
	wantCode(t, err, fleet.EINVALID)
}

// TestDesiredVersionSurvivesReAdd: a device id removed and added again
// never gets a desired version its agent may already have applied.
func TestDesiredVersionSurvivesReAdd(t *testing.T) {
	t.Parallel()
	db, _ := mustOpen(t)
	mustDevice(t, db, "pi1")
	first, err := db.DesiredFor(ctx, "pi1")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteDevice(ctx, "pi1"); err != nil {
		t.Fatal(err)
	}
	mustDevice(t, db, "pi1")
	second, err := db.DesiredFor(ctx, "pi1")
	if err != nil || second.Version <= first.Version {
		t.Fatalf("re-added device: version %d after %d (%v)", second.Version, first.Version, err)
	}
}
