package ovosrt

import (
	"strings"
	"testing"
)

// The wheel's entry_points.txt and METADATA come from the packer's input:
// whatever they hold, parsing never panics and names no empty entry.
func FuzzEntryPoints(f *testing.F) {
	f.Add("[opm.skills]\nskill.one = pkg:Skill\n", "Name: x\nVersion: 1\n\nbody")
	f.Add("[opm.skills\n=\n[]\n;x\n", "Version")
	f.Fuzz(func(t *testing.T, eps, meta string) {
		for _, id := range EntryPoints(eps, EntryPointGroup) {
			if id == "" || strings.ContainsAny(id, "=\n") {
				t.Fatalf("entry %q", id)
			}
		}
		if v := header(meta, "Version"); strings.Contains(v, "\n") {
			t.Fatalf("header %q", v)
		}
	})
}
