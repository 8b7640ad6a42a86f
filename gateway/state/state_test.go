package state_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/gateway/state"
)

// What the agent writes, the readers read back unchanged.
func TestRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	skills := state.Skills{AppliedVersion: 7, ManifestDigest: "abc", UpdatedAt: at, Skills: []state.Skill{
		{ID: "hello.chorus", Version: "1.0.0", State: state.Loaded, Active: true, WaitingFor: []string{}, Requirements: []string{}, Managed: true, Since: at},
		{ID: "weather.chorus", Version: "2.0.0", State: state.Waiting, WaitingFor: []string{"internet"}, Requirements: []string{"internet"}, Since: at},
	}}
	b, err := state.Encode(skills)
	if err != nil {
		t.Fatal(err)
	}
	got, err := state.ParseSkills(b)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := got.Skill("weather.chorus"); !ok || s.State != state.Waiting || s.WaitingFor[0] != "internet" || got.AppliedVersion != 7 {
		t.Fatalf("parsed %+v", got)
	}
	if _, ok := got.Skill("absent"); ok {
		t.Fatal("found a skill the report does not list")
	}
	birth := state.Birth{Session: 3, AgentVersion: "1.2.3", Hostname: "pi", Arch: "arm64", Isolation: "uid"}
	if b, err = state.Encode(birth); err != nil {
		t.Fatal(err)
	}
	if gb, err := state.ParseBirth(b); err != nil || gb != birth {
		t.Fatalf("birth %+v, %v", gb, err)
	}
	conn := state.Connectivity{Network: true, ChangedAt: at, Source: "monitor", Reason: "no route"}
	if b, err = state.Encode(conn); err != nil {
		t.Fatal(err)
	}
	if gc, err := state.ParseConnectivity(b); err != nil || gc != conn {
		t.Fatalf("connectivity %+v, %v", gc, err)
	}
}

// A later agent that adds fields is read; what no agent writes is refused
// with the reason, as ErrInvalid.
func TestParseRefusals(t *testing.T) {
	if _, err := state.ParseSkills([]byte(`{"skills":[{"id":"a","state":"loaded","new_field":1}],"extra":true}`)); err != nil {
		t.Fatalf("unknown fields refused: %v", err)
	}
	if r, err := state.ParseSkills(nil); err != nil || len(r.Skills) != 0 {
		t.Fatalf("a cleared topic: %+v, %v", r, err)
	}
	big := append([]byte(`{"x":"`), append(bytes.Repeat([]byte("a"), state.MaxSkills), '"', '}')...)
	cases := []struct {
		name, want string
		parse      func([]byte) error
		in         []byte
	}{
		{"skills array", "not a JSON object", skills, []byte(`[1]`)},
		{"skills null", "not a JSON object", skills, []byte(`null`)},
		{"skills negative", "applied_version -1 is negative", skills, []byte(`{"applied_version":-1}`)},
		{"skills wrong type", "cannot unmarshal", skills, []byte(`{"skills":"all"}`)},
		{"skills oversized", "more than the limit of 262144", skills, big},
		{"birth empty", "empty payload", birth, nil},
		{"birth session", "out of range", birth, []byte(`{"session":18446744073709551615}`)},
		{"birth oversized", "more than the limit of 4096", birth, big[:5000]},
		{"connectivity string", "not a JSON object", connectivity, []byte(`"online"`)},
		{"connectivity truncated", "unexpected end", connectivity, []byte(`{"network":true`)},
	}
	for _, c := range cases {
		err := c.parse(c.in)
		if !errors.Is(err, state.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want ErrInvalid saying %q", c.name, err, c.want)
		}
	}
}

// The writer never produces what the broker would refuse.
func TestEncodeRefusesOverLimit(t *testing.T) {
	_, err := state.Encode(state.Birth{Hostname: strings.Repeat("h", state.MaxBirth)})
	if !errors.Is(err, state.ErrInvalid) || !strings.Contains(err.Error(), "birth") {
		t.Fatalf("err = %v, want birth over the limit", err)
	}
}

func skills(b []byte) error       { _, err := state.ParseSkills(b); return err }
func birth(b []byte) error        { _, err := state.ParseBirth(b); return err }
func connectivity(b []byte) error { _, err := state.ParseConnectivity(b); return err }

// FuzzParse: no input panics, and whatever a parser accepts encodes and
// parses again to the same value.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"applied_version":1,"skills":[{"id":"a","state":"loaded"}]}`))
	f.Add([]byte(`{"session":2,"agent_version":"x"}`))
	f.Add([]byte(`{"network":true,"internet":false,"changed_at":"2026-12-02T04:00:00Z"}`))
	f.Add([]byte(`{"skills":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := state.ParseSkills(b); err == nil && len(b) > 0 {
			again(t, s, state.ParseSkills)
			sameAsUnmarshal(t, b, s)
		}
		if v, err := state.ParseBirth(b); err == nil {
			again(t, v, state.ParseBirth)
		}
		if v, err := state.ParseConnectivity(b); err == nil {
			again(t, v, state.ParseConnectivity)
		}
	})
}

func again[T state.Birth | state.Connectivity | state.Skills](t *testing.T, v T, parse func([]byte) (T, error)) {
	t.Helper()
	b, err := state.Encode(v)
	if err != nil {
		return // an accepted payload may re-encode larger (escapes): Encode says so
	}
	if _, err := parse(b); err != nil {
		t.Fatalf("accepted %+v but not its own encoding %s: %v", v, b, err)
	}
}

// sameAsUnmarshal fails unless got is what encoding/json decodes b to in a
// zero Skills, nil and empty slices told apart.
func sameAsUnmarshal(t *testing.T, b []byte, got state.Skills) {
	t.Helper()
	var want state.Skills
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("ParseSkills accepted %s, encoding/json refuses it: %v", b, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseSkills(%s) = %#v, encoding/json gives %#v", b, got, want)
	}
}

// TestParseSkillsSizedTable: ParseSkills sizes the skill table from a hint
// (the "id" strings it counts) and decodes exactly what encoding/json does
// into a zero value, whether the hint is right, too high, too low or
// absent, and whether "skills" is missing, empty or null.
func TestParseSkillsSizedTable(t *testing.T) {
	var many strings.Builder
	many.WriteString(`{"skills":[`)
	for i := range 100 { // more than the hint's bound
		if i > 0 {
			many.WriteByte(',')
		}
		many.WriteString(`{"id":"s` + strings.Repeat("x", i%7) + `","state":"loaded"}`)
	}
	many.WriteString(`]}`)
	for _, p := range []string{
		`{"applied_version":3}`,
		`{"applied_version":3,"manifest_digest":"\"id\" \"id\""}`, // a hint with no skills
		`{"skills":[]}`,
		`{"skills":null}`,
		`{"skills":[],"training":{"status":"\"id\""}}`,
		`{"skills":[{"id":"a","state":"loaded","waiting_for":[],"requirements":["internet"]}]}`,
		`{"skills":[{"ID":"a"},{"Id":"b"},{"id":"c"}]}`, // keys matched without case: a hint too low
		`{"skills":[{"id":"a","error":"\"id\" \"id\" \"id\""}]}`,
		`{"skills":[{"id":"a"}],"skills":[]}`,
		`{"skills":[{"id":"a"},{"id":"b"}],"skills":null}`,
		many.String(),
	} {
		got, err := state.ParseSkills([]byte(p))
		if err != nil {
			t.Fatalf("ParseSkills(%s): %v", p, err)
		}
		sameAsUnmarshal(t, []byte(p), got)
	}
}

// BenchmarkParseSkills parses a report of six loaded skills, what each
// simulated device of `chorus bench fleet` sends after an install.
func BenchmarkParseSkills(b *testing.B) {
	at := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	r := state.Skills{AppliedVersion: 2, UpdatedAt: at}
	for _, id := range []string{"a.chorus", "b.chorus", "c.chorus", "d.chorus", "e.chorus", "bench.rollout"} {
		r.Skills = append(r.Skills, state.Skill{ID: id, Version: "1.0.0", State: state.Loaded, Active: true,
			WaitingFor: []string{}, Requirements: []string{}, Since: at})
	}
	payload, err := state.Encode(r)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := state.ParseSkills(payload); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParseSkillsIntoReuses: a report parsed into the table of an earlier
// one shares its memory and is the report ParseSkills gives, though the
// earlier skills had fields (output, next_retry, waiting_for) the later
// ones lack: encoding/json does not zero a slice element it decodes into.
func TestParseSkillsIntoReuses(t *testing.T) {
	retry := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	first := []byte(`{"applied_version":3,"skills":[{"id":"a","state":"failed","error":"boom","output":["x"],"next_retry":"` +
		retry.Format(time.RFC3339) + `","waiting_for":["internet"],"attempts":2},{"id":"b","managed":true}]}`)
	later := map[string][]byte{
		"fewer fields": []byte(`{"applied_version":4,"skills":[{"id":"a","state":"loaded"},{"id":"c"}]}`),
		"no skills":    []byte(`{"applied_version":5}`),
		"empty table":  []byte(`{"skills":[]}`),
		"null table":   []byte(`{"skills":null,"training":{"status":"trained"}}`),
		"more skills":  []byte(`{"skills":[{"id":"a"},{"id":"b"},{"id":"c"},{"id":"d"}]}`),
		"refused":      []byte(`{"applied_version":-1,"skills":[{"id":"a"}]}`),
	}
	for name, p := range later {
		t.Run(name, func(t *testing.T) {
			r, err := state.ParseSkillsInto(first, nil)
			if err != nil {
				t.Fatal(err)
			}
			buf := r.Skills[:0]
			got, gotErr := state.ParseSkillsInto(p, buf)
			want, wantErr := state.ParseSkills(p)
			if (gotErr == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
				t.Fatalf("ParseSkillsInto = %+v, %v\nParseSkills     = %+v, %v", got, gotErr, want, wantErr)
			}
			if len(got.Skills) > 0 && len(got.Skills) <= cap(buf) && &got.Skills[0] != &buf[:1][0] {
				t.Error("the table was not decoded into buf's memory")
			}
		})
	}
}
