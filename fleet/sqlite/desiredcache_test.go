package sqlite_test

import (
	"testing"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/sqlite"
)

// skillsOf returns the skill ids and versions of id's desired document.
func skillsOf(t *testing.T, db *sqlite.DB, id string) map[string]string {
	t.Helper()
	d, err := db.DesiredFor(ctx, id)
	if err != nil {
		t.Fatalf("DesiredFor(%s): %v", id, err)
	}
	out := map[string]string{}
	for s, v := range d.Skills {
		out[s] = v.Version
	}
	return out
}

func wantSkills(t *testing.T, db *sqlite.DB, id string, want map[string]string) {
	t.Helper()
	got := skillsOf(t, db, id)
	if len(got) != len(want) {
		t.Fatalf("%s desires %v, want %v", id, got, want)
	}
	for s, v := range want {
		if got[s] != v {
			t.Fatalf("%s desires %v, want %v", id, got, want)
		}
	}
}

// TestDesiredCacheDropsOnEveryWrite: DesiredFor keeps each device's document
// in memory; every write a document depends on must drop it, or the next
// call would return the document from before the write. Each step primes the
// cache with a call, writes, and checks the next call sees the write.
func TestDesiredCacheDropsOnEveryWrite(t *testing.T) {
	db, _ := mustOpen(t)
	mustPublish(t, db, "weather", "1.0.0")
	mustPublish(t, db, "timer", "1.0.0")
	mustDevice(t, db, "pi1", "kitchen")
	mustDevice(t, db, "pi2")
	none := map[string]string{}
	wantSkills(t, db, "pi1", none)
	wantSkills(t, db, "pi2", none)

	steps := []struct {
		name     string
		write    func() error
		pi1, pi2 map[string]string
	}{
		{"device assignment", func() error {
			return db.PutAssignment(ctx, install("weather", fleet.DeviceTarget("pi1"), "1.0.0", ""))
		}, map[string]string{"weather": "1.0.0"}, none},
		{"tag assignment", func() error {
			return db.PutAssignment(ctx, install("timer", fleet.TagTarget("kitchen"), "", ""))
		}, map[string]string{"weather": "1.0.0", "timer": "1.0.0"}, none},
		{"a new latest version", func() error {
			_, err := db.PublishVersion(ctx, newVersion("timer", "2.0.0"))
			return err
		}, map[string]string{"weather": "1.0.0", "timer": "2.0.0"}, none},
		{"fleet-wide assignment", func() error {
			return db.PutAssignment(ctx, install("weather", fleet.AllTarget(), "", ""))
		}, map[string]string{"weather": "1.0.0", "timer": "2.0.0"}, map[string]string{"weather": "1.0.0"}},
		{"tag added", func() error {
			_, err := db.AddDeviceTag(ctx, "pi2", "kitchen")
			return err
		}, map[string]string{"weather": "1.0.0", "timer": "2.0.0"}, map[string]string{"weather": "1.0.0", "timer": "2.0.0"}},
		{"tag removed", func() error {
			_, err := db.RemoveDeviceTag(ctx, "pi2", "kitchen")
			return err
		}, map[string]string{"weather": "1.0.0", "timer": "2.0.0"}, map[string]string{"weather": "1.0.0"}},
		{"tags set", func() error {
			_, err := db.SetDeviceTags(ctx, "pi1", nil)
			return err
		}, map[string]string{"weather": "1.0.0"}, map[string]string{"weather": "1.0.0"}},
		{"device assignment deleted", func() error {
			return db.DeleteAssignment(ctx, "weather", fleet.DeviceTarget("pi1"))
		}, map[string]string{"weather": "1.0.0"}, map[string]string{"weather": "1.0.0"}},
		{"another latest version", func() error {
			_, err := db.PublishVersion(ctx, newVersion("weather", "1.1.0"))
			return err
		}, map[string]string{"weather": "1.1.0"}, map[string]string{"weather": "1.1.0"}},
		{"uninstall on one device", func() error {
			return db.PutAssignment(ctx, &fleet.Assignment{SkillID: "weather", Target: fleet.DeviceTarget("pi2"), Action: fleet.AssignUninstall})
		}, map[string]string{"weather": "1.1.0"}, none},
		{"fleet-wide assignment deleted", func() error {
			return db.DeleteAssignment(ctx, "weather", fleet.AllTarget())
		}, none, none},
	}
	for _, s := range steps {
		before, err := db.DesiredFor(ctx, "pi1") // primes the cache
		if err != nil {
			t.Fatal(err)
		}
		if err := s.write(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		wantSkills(t, db, "pi1", s.pi1)
		wantSkills(t, db, "pi2", s.pi2)
		if after, _ := db.DesiredFor(ctx, "pi1"); len(after.Skills) != len(before.Skills) && after.Version <= before.Version {
			t.Fatalf("%s: pi1's document changed and kept version %d → %d", s.name, before.Version, after.Version)
		}
	}
}

// TestDesiredCacheDeviceRemoval: a removed device's cached document goes
// with it (DesiredFor says not found), and a device re-added under the same
// id starts from its own, empty document.
func TestDesiredCacheDeviceRemoval(t *testing.T) {
	db, _ := mustOpen(t)
	mustPublish(t, db, "weather", "1.0.0")
	mustDevice(t, db, "pi1")
	mustPut(t, db, install("weather", fleet.DeviceTarget("pi1"), "", ""))
	wantSkills(t, db, "pi1", map[string]string{"weather": "1.0.0"})
	if err := db.DeleteDevice(ctx, "pi1"); err != nil {
		t.Fatal(err)
	}
	_, err := db.DesiredFor(ctx, "pi1")
	wantCode(t, err, fleet.ENOTFOUND)
	mustDevice(t, db, "pi1")
	wantSkills(t, db, "pi1", map[string]string{})
}

// TestDesiredCacheReturnsCopies: a caller changing the document it got
// changes nothing the next caller gets.
func TestDesiredCacheReturnsCopies(t *testing.T) {
	db, _ := mustOpen(t)
	mustPublish(t, db, "weather", "1.0.0")
	mustDevice(t, db, "pi1")
	mustPut(t, db, install("weather", fleet.DeviceTarget("pi1"), "", `{"units":"metric"}`))
	first, err := db.DesiredFor(ctx, "pi1")
	if err != nil {
		t.Fatal(err)
	}
	first.Skills["weather"].Settings[2] = 'X'
	delete(first.Skills, "weather")
	second, err := db.DesiredFor(ctx, "pi1")
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := second.Skills["weather"]; !ok || string(s.Settings) != `{"units":"metric"}` {
		t.Fatalf("second document = %+v", second)
	}
}
