package controller

import (
	"fmt"
	"testing"

	"github.com/chorus-edge/chorus/fleet/hadiscovery"
)

// TestListed: haInput's duplicate check answers as a set of the ids taken
// so far would, on tables short enough to scan and past the point where it
// switches to a map.
func TestListed(t *testing.T) {
	for _, n := range []int{1, maxScannedSkills - 1, maxScannedSkills, 3 * maxScannedSkills} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var (
				skills []hadiscovery.Skill
				seen   map[string]bool
				want   = map[string]bool{}
			)
			for i := range 2 * n { // each id offered twice, the second time later
				id := fmt.Sprintf("s%d", i%n)
				if got := listed(skills, &seen, id); got != want[id] {
					t.Fatalf("offer %d of %s: listed %v, want %v", i, id, got, want[id])
				}
				if !want[id] {
					want[id] = true
					skills = append(skills, hadiscovery.Skill{ID: id})
				}
			}
			if len(skills) != n {
				t.Fatalf("%d skills taken, want %d", len(skills), n)
			}
		})
	}
}
