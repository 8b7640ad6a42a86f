package bridge

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/gateway/heapcost"
	"github.com/chorus-edge/chorus/gateway/state"
)

func skillsPayload(t testing.TB, skills ...state.Skill) []byte {
	t.Helper()
	b, err := state.Encode(state.Skills{AppliedVersion: 1, UpdatedAt: time.Now().UTC(), Skills: skills})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func loaded(id string) state.Skill {
	return state.Skill{ID: id, Version: "1.0.0", State: state.Loaded, Active: true, WaitingFor: []string{}, Requirements: []string{}}
}

// TestSatStateSkills: setSkills keeps the loaded skills of a report, in
// order; a cleared topic moves them to cleared (what a departure that
// arrives after the clear deregisters), and a new report empties cleared.
func TestSatStateSkills(t *testing.T) {
	failed := loaded("broken.skill")
	failed.State = state.Failed
	odd := loaded("ünïcode \n skill with a long id " + string(make([]byte, 200)))
	tests := []struct {
		name    string
		payload []byte
		want    []string
	}{
		{"loaded only, in order", skillsPayload(t, loaded("b.skill"), failed, loaded("a.skill"), loaded("")), []string{"b.skill", "a.skill"}},
		{"none loaded", skillsPayload(t, failed), nil},
		{"ids of any length and bytes", skillsPayload(t, odd, loaded("x")), []string{odd.ID, "x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s satState
			s.setSkills(tc.payload)
			if got := s.skills.ids(); !slices.Equal(got, tc.want) {
				t.Fatalf("skills = %q, want %q", got, tc.want)
			}
			if s.skills.empty() != (len(tc.want) == 0) {
				t.Fatalf("empty() = %v with %d skills", s.skills.empty(), len(tc.want))
			}
			s.setSkills(nil)
			if !s.skills.empty() || !slices.Equal(s.cleared.ids(), tc.want) {
				t.Fatalf("after the clear: skills %q, cleared %q; want none and %q", s.skills.ids(), s.cleared.ids(), tc.want)
			}
			s.setSkills(tc.payload)
			if !s.cleared.empty() {
				t.Fatalf("a report left cleared = %q", s.cleared.ids())
			}
		})
	}
}

// TestSatStateSkillsShared: satellites reporting the same loaded skills
// share one list. Bytes per satellite, from HeapAlloc around 10,000 of
// them after a report of six loaded skills each: 92 with the shared
// list, 396 with a []string and its ids per satellite.
func TestSatStateSkillsShared(t *testing.T) {
	const n = 10000
	var skills []state.Skill
	for i := range 6 {
		skills = append(skills, loaded(fmt.Sprintf("skill-%d.openvoiceos", i)))
	}
	payload := skillsPayload(t, skills...)
	sats := make([]*satState, n)
	per := int64(heapcost.PerObject(n, func() {
		for i := range sats {
			sats[i] = &satState{}
			sats[i].setSkills(payload)
		}
	}))
	t.Logf("%d bytes per satellite", per)
	if per > 200 {
		t.Errorf("%d bytes per satellite, want at most 200", per)
	}
	if sats[0].skills != sats[n-1].skills {
		t.Fatal("two satellites with the same skills hold two lists")
	}
	runtime.KeepAlive(sats)
}

// TestSatStateReadSkillsReusesTable: reports parsed one after the other
// into the relay's table keep what setSkills keeps for each, though the
// table held another report's skills (a failed one with fields the later
// ones lack), and the table is handed back for the next report.
func TestSatStateReadSkillsReusesTable(t *testing.T) {
	failed := loaded("broken.skill")
	failed.State, failed.Error, failed.Output = state.Failed, "boom", []string{"x"}
	reports := [][]byte{
		skillsPayload(t, failed, loaded("a.skill"), loaded("b.skill")),
		skillsPayload(t, loaded("c.skill")),
		skillsPayload(t, failed),
		skillsPayload(t, loaded("d.skill"), failed, loaded("e.skill"), loaded("f.skill")),
	}
	var table []state.Skill
	for i, p := range reports {
		var reused, fresh satState
		table = reused.readSkills(p, table)
		fresh.setSkills(p)
		if got, want := reused.skills.ids(), fresh.skills.ids(); !slices.Equal(got, want) {
			t.Fatalf("report %d: skills %q through the reused table, want %q", i, got, want)
		}
		if cap(table) == 0 {
			t.Fatalf("report %d: no table handed back", i)
		}
	}
}
