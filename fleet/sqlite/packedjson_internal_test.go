package sqlite

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/state"
)

// skillsReport is a device's skills payload as the agent (and the fleet
// bench's simulated device) encodes it: n loaded skills.
func skillsReport(t testing.TB, n int, at time.Time) json.RawMessage {
	t.Helper()
	skills := make([]state.Skill, n)
	for i := range skills {
		skills[i] = state.Skill{ID: fmt.Sprintf("skill-%d.openvoiceos", i), Version: "1.0.0", State: state.Loaded,
			Active: true, WaitingFor: []string{}, Requirements: []string{}, Since: at}
	}
	b, err := state.Encode(state.Skills{AppliedVersion: 3, UpdatedAt: at, Skills: skills})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPackedJSONRoundTrip: unpackJSON returns every payload packJSON was
// given, byte for byte, whether it was packed or kept as it was, in memory
// of its own on both sides.
func TestPackedJSONRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 3, 18, 0, 0, 123456789, time.UTC)
	noise := make([]byte, 3000)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	failed := state.Skill{ID: "skill-x", Version: "2.0.0", State: state.Failed, WaitingFor: []string{"internet"},
		Requirements: []string{"internet"}, Error: "import error: \"é\" \u2028", Output: []string{"Traceback", "line 2"},
		Attempts: 3, NextRetry: &at, Since: at}
	odd, _ := state.Encode(state.Skills{AppliedVersion: 9, Skills: []state.Skill{failed}, Training: state.Training{Status: "failed", Error: "x"}})
	cases := []struct {
		name    string
		payload json.RawMessage
		kind    byte // the tag pack gives it
	}{
		{"none", nil, 0},
		{"empty object", json.RawMessage(`{}`), packedRaw},
		{"connectivity", json.RawMessage(`{"network":true,"internet":true,"gui":false,"changed_at":"2026-12-03T18:00:00Z","source":"monitor"}`), packedRaw},
		{"report of 6 skills", skillsReport(t, 6, at), packedTokens},
		{"report of 100 skills", skillsReport(t, 100, at), packedTokens},
		{"report of 300 skills (over maxPackedInput)", skillsReport(t, 300, at), packedRaw},
		{"a quote at every other byte", json.RawMessage(`{"a":[` + strings.Repeat(`"",`, 20000) + `""]}`), packedRaw},
		{"failed skill, escapes, training", odd, packedTokens},
		{"incompressible", json.RawMessage(`{"x":"` + base64.StdEncoding.EncodeToString(noise) + `"}`), packedRaw},
		{"a code byte (not valid JSON)", append(bytes.Clone(skillsReport(t, 6, at)), 0x01), packedRaw},
		{"every token", json.RawMessage(strings.Join(packTokens[:], "") + strings.Join(packTokens[:], "x")), packedTokens},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := bytes.Clone(tc.payload)
			z := packJSON(in)
			if len(tc.payload) == 0 {
				if z != nil {
					t.Fatalf("pack(%q) = %q, want nil", tc.payload, z)
				}
				return
			}
			if z[0] != tc.kind {
				t.Errorf("pack tagged it %d, want %d (%d bytes from %d)", z[0], tc.kind, len(z), len(tc.payload))
			}
			for i := range in {
				in[i] = 'x' // the caller's memory is its own again
			}
			got := unpackJSON(z)
			if !bytes.Equal(got, tc.payload) {
				t.Fatalf("unpack(pack(p)) =\n%s\nwant\n%s", got, tc.payload)
			}
			got[0] = 'x'
			if again := unpackJSON(z); !bytes.Equal(again, tc.payload) {
				t.Fatalf("changing what unpack returned changed the packed form: %s", again)
			}
		})
	}
}

// TestPackedJSONIsSmall is the saving the packed form exists for: a
// typical report (5 local skills and one fleet-managed, as the 10,000-device
// bench's devices send) is held in under a third of its size, a report of
// one skill in under a half. It fails if reports went back to being held
// verbatim, or the tokens stopped matching what gateway/state writes.
func TestPackedJSONIsSmall(t *testing.T) {
	for _, n := range []int{1, 6, 20} {
		r := skillsReport(t, n, time.Now().UTC())
		z := packJSON(r)
		t.Logf("%d skills: %d bytes packed to %d", n, len(r), len(z))
		limit := len(r) / 3
		if n == 1 {
			limit = len(r) / 2
		}
		if len(z) > limit {
			t.Errorf("%d skills: %d bytes packed to %d, want at most %d", n, len(r), len(z), limit)
		}
	}
}

// TestCachedRowHoldsReportPacked: the device row GetDevice keeps holds the
// skills report packed, whether the row came from a read (put) or was
// changed by a report (apply); GetDevice still returns the report verbatim.
func TestCachedRowHoldsReportPacked(t *testing.T) {
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "fleet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := make([]byte, ed25519.SeedSize)
	pub := ed25519.NewKeyFromSeed(s).Public().(ed25519.PublicKey)
	if err := db.CreateDevice(ctx, &fleet.Device{ID: "pi1", SecretHash: "sha256:pi1", SkillKey: pub}); err != nil {
		t.Fatal(err)
	}
	first, second := skillsReport(t, 6, time.Now().UTC()), skillsReport(t, 5, time.Now().UTC().Add(time.Second))
	if err := db.UpdateReported(ctx, "pi1", first, 3); err != nil {
		t.Fatal(err)
	}
	check := func(step string, want json.RawMessage) {
		t.Helper()
		d, err := db.GetDevice(ctx, "pi1")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(d.Reported, want) {
			t.Fatalf("%s: GetDevice's report =\n%s\nwant\n%s", step, d.Reported, want)
		}
		db.devices.mu.Lock()
		cr, ok := db.devices.rows["pi1"]
		r := cr.v
		db.devices.mu.Unlock()
		switch {
		case !ok:
			t.Fatalf("%s: pi1's row is not cached", step)
		case r.dev.Reported != nil:
			t.Fatalf("%s: the cached row holds the report verbatim too", step)
		case len(r.reported) == 0 || r.reported[0] != packedTokens || len(r.reported) > len(want)/3:
			t.Fatalf("%s: the cached row holds %d bytes for a %d-byte report", step, len(r.reported), len(want))
		}
	}
	check("read", first) // the first GetDevice misses and keeps what it read
	if err := db.UpdateReported(ctx, "pi1", second, 4); err != nil {
		t.Fatal(err)
	}
	check("reported", second) // the cached row was changed, not dropped
	if _, err := db.UpdateStates(ctx, []fleet.StateUpdate{{DeviceID: "pi1", Reported: true, Payload: first, AppliedVersion: 5}}); err != nil {
		t.Fatal(err)
	}
	check("batch", first)
}

// BenchmarkPackJSON and BenchmarkUnpackJSON: what the row cache adds per
// stored report and per cached read, a six-skill report each op (the copy
// they replace, bytes.Clone, in BenchmarkCloneReport).
func BenchmarkPackJSON(b *testing.B) {
	r := skillsReport(b, 6, time.Now().UTC())
	b.ReportAllocs()
	for b.Loop() {
		packJSON(r)
	}
}

func BenchmarkUnpackJSON(b *testing.B) {
	z := packJSON(skillsReport(b, 6, time.Now().UTC()))
	b.ReportAllocs()
	for b.Loop() {
		unpackJSON(z)
	}
}

func BenchmarkCloneReport(b *testing.B) {
	r := skillsReport(b, 6, time.Now().UTC())
	b.ReportAllocs()
	for b.Loop() {
		_ = bytes.Clone(r)
	}
}
