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

// TestArtifactBySHA256Cache: ArtifactBySHA256 keeps what it found. The
// answer is the first version published with the sum, before and after it
// is cached and after a later version with the same artifact; a sum not
// yet published is not remembered as missing; and callers get copies.
func TestArtifactBySHA256Cache(t *testing.T) {
	db, _ := mustOpen(t)
	sum := digest("shared artifact")
	v1 := newVersion("weather", "1.0.0")
	v1.SHA256 = sum
	if _, err := db.ArtifactBySHA256(ctx, sum); fleet.ErrorCode(err) != fleet.ENOTFOUND {
		t.Fatalf("unpublished artifact: %v, want not found", err)
	}
	if _, err := db.PublishVersion(ctx, v1); err != nil {
		t.Fatal(err)
	}
	first := func() {
		t.Helper()
		got, err := db.ArtifactBySHA256(ctx, sum)
		if err != nil || got.SkillID != "weather" || got.Version != "1.0.0" {
			t.Fatalf("ArtifactBySHA256 = %+v, %v; want weather 1.0.0", got, err)
		}
		got.Requirements[0], got.Manifest[0] = "changed", 'x' // a copy: the next call must not see it
	}
	first() // read from the file (the miss before the publish was not kept)
	first() // from the cache
	v2 := newVersion("weather", "1.1.0")
	v2.SHA256 = sum
	if _, err := db.PublishVersion(ctx, v2); err != nil {
		t.Fatal(err)
	}
	first()
	got, err := db.ArtifactBySHA256(ctx, sum)
	if err != nil {
		t.Fatal(err)
	}
	want, err := db.GetVersion(ctx, "weather", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("cached answer %+v, the file holds %+v", got, want)
	}
}
