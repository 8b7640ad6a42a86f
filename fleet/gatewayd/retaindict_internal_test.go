package gatewayd

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/hadiscovery"
	"github.com/chorus-edge/chorus/gateway/state"
)

// deflated is the size of p deflated as the broker's retained store does
// with a dictionary (level 2: BestSpeed ignores one), or alone (BestSpeed).
func deflated(t *testing.T, p, dict []byte) int {
	t.Helper()
	level := flate.BestSpeed
	if dict != nil {
		level = 2
	}
	var b bytes.Buffer
	w, err := flate.NewWriterDict(&b, level, dict)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(p); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Len()
}

// TestRetainedDictionary: the dictionary holds a sample of each large
// retained shape, and with it another device's documents (other ids, names
// and more skills) deflate to well under half of what deflate alone makes
// of them; that is the memory the retained store saves per device.
func TestRetainedDictionary(t *testing.T) {
	dict := retainedDictionary("0.3.0")
	for _, want := range []string{`"applied_version"`, `"sha256"`, `"cmps"`} {
		if !bytes.Contains(dict, []byte(want)) {
			t.Fatalf("dictionary lacks a sample with %s: %s", want, dict)
		}
	}
	if len(dict) > 32<<10 {
		t.Fatalf("dictionary is %d bytes; deflate uses only its last 32 KiB", len(dict))
	}

	var skills []hadiscovery.Skill
	var report []state.Skill
	at := time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)
	for _, id := range []string{"ovos-skill-weather.openvoiceos", "ovos-skill-date-time.openvoiceos",
		"ovos-skill-alerts.openvoiceos", "skill-kitchen-timer.me", "ovos-skill-wikipedia.openvoiceos"} {
		skills = append(skills, hadiscovery.Skill{ID: id, Managed: strings.HasPrefix(id, "ovos")})
		report = append(report, state.Skill{ID: id, Version: "2.0.1", State: state.Loaded, Active: true, Since: at,
			Requirements: []string{"internet"}, Managed: true})
	}
	_, config, err := hadiscovery.Build(hadiscovery.Input{Device: "pi.living-room_7", Name: "Living room",
		AgentVersion: "0.3.0", ChorusVersion: "0.3.0", Skills: skills})
	if err != nil {
		t.Fatal(err)
	}
	skillsDoc, err := state.Encode(state.Skills{AppliedVersion: 3, ManifestDigest: strings.Repeat("ab", 32),
		UpdatedAt: at, Skills: report, Training: state.Training{Status: "trained"}})
	if err != nil {
		t.Fatal(err)
	}
	want := fleet.Desired{Version: 3, Skills: map[string]fleet.DesiredSkill{}}
	for i, s := range report {
		sum := fmt.Sprintf("%064x", sha256.Sum256([]byte(s.ID))) // digests do not repeat
		want.Skills[s.ID] = fleet.DesiredSkill{Version: s.Version, SHA256: sum, Size: int64(353 * (i + 1)), URL: fleet.ArtifactURL(sum)}
	}
	desired, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	// Each shape must gain at least this much (primed/alone): the
	// documents differ from their samples mostly in ids, and the desired
	// document mostly in its digests, which no dictionary can predict.
	for name, tc := range map[string]struct {
		doc   []byte
		ratio float64
	}{"discovery": {config, 0.5}, "skills": {skillsDoc, 0.5}, "desired": {desired, 0.9}} {
		if len(tc.doc) <= 1024 {
			t.Fatalf("%s: %d bytes, not over the broker's bound: the case proves nothing", name, len(tc.doc))
		}
		alone, primed := deflated(t, tc.doc, nil), deflated(t, tc.doc, dict)
		t.Logf("%s: %d bytes, deflated alone %d, with the dictionary %d", name, len(tc.doc), alone, primed)
		if float64(primed) > tc.ratio*float64(alone) {
			t.Errorf("%s: %d bytes with the dictionary against %d without: want at most %.0f%%", name, primed, alone, 100*tc.ratio)
		}
	}
}
