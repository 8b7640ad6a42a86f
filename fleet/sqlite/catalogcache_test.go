package sqlite_test

import (
	"reflect"
	"testing"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/sqlite"
)

// latestStored is skill's latest version as the file holds it: ListSkills
// reads the catalog without LatestVersion's cache.
func latestStored(t *testing.T, db *sqlite.DB, skill string) *fleet.SkillVersion {
	t.Helper()
	vs, err := db.ListSkills(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.SkillID == skill {
			return v
		}
	}
	return nil
}

// TestLatestVersionCacheFollowsPublish: LatestVersion keeps what it read,
// and every publish (of the skill or another) leaves it returning what is
// stored; what it returns is the caller's to change.
func TestLatestVersionCacheFollowsPublish(t *testing.T) {
	t.Parallel()
	db, _ := mustOpen(t)
	want := func() {
		t.Helper()
		for _, skill := range []string{"weather", "timer"} {
			got, err := db.LatestVersion(ctx, skill)
			stored := latestStored(t, db, skill)
			if stored == nil {
				if fleet.ErrorCode(err) != fleet.ENOTFOUND {
					t.Fatalf("LatestVersion(%s) = %+v, %v; nothing is stored", skill, got, err)
				}
				continue
			}
			if err != nil || !reflect.DeepEqual(got, stored) {
				t.Fatalf("LatestVersion(%s) = %+v, %v\nstored: %+v", skill, got, err, stored)
			}
		}
	}
	want()
	mustPublish(t, db, "weather", "1.0.0")
	want()
	want() // from the cache
	got, err := db.LatestVersion(ctx, "weather")
	if err != nil {
		t.Fatal(err)
	}
	got.Version, got.Manifest[0] = "x", 'x'
	want()
	mustPublish(t, db, "timer", "0.1.0")
	want()
	mustPublish(t, db, "weather", "0.9.0") // latest is the last published
	want()
}
