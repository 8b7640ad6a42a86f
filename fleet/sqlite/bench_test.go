package sqlite_test

import (
	"fmt"
	"testing"

	"github.com/chorus-edge/chorus/fleet"
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
