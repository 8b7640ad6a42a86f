package controller

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/state"
)

// Kinds of device input FuzzStatePayload feeds, picked by the first argument.
const (
	fuzzSkills = iota
	fuzzBirth
	fuzzAvailability
	fuzzConnectivity
	fuzzPackage
	fuzzKinds
)

// FuzzStatePayload feeds what a device publishes on its retained state
// topics (skills, birth, availability, connectivity) and the packages of a
// device request to the controller's parsers. The promise: no input panics;
// every refusal is an invalid error (never internal); whatever is accepted is
// something the store accepts too (a JSON object within the caps, a session
// that fits its column), and an accepted value survives a round trip.
// The corpus is testdata/fuzz/FuzzStatePayload.
func FuzzStatePayload(f *testing.F) {
	f.Fuzz(func(t *testing.T, kind byte, payload []byte) {
		switch kind % fuzzKinds {
		case fuzzSkills:
			checkReport(t, payload)
		case fuzzBirth:
			checkBirth(t, payload)
		case fuzzAvailability:
			online, err := parseAvailability(payload)
			want := string(payload) == "online" || string(payload) == "offline"
			if (err == nil) != want || (err == nil && online != (string(payload) == "online")) {
				t.Fatalf("parseAvailability(%q) = %v, %v", payload, online, err)
			}
			refusedAsInvalid(t, err)
		case fuzzConnectivity:
			err := parseConnectivity(payload)
			refusedAsInvalid(t, err)
			if err == nil {
				storeAccepts(t, "connectivity", payload, fleet.MaxStatePayload)
			}
		case fuzzPackage:
			checkPackage(t, string(payload))
		}
	})
}

func checkReport(t *testing.T, payload []byte) {
	r, err := parseReport(payload)
	refusedAsInvalid(t, err)
	if err != nil || len(payload) == 0 {
		return
	}
	storeAccepts(t, "skills report", payload, fleet.MaxStatePayload)
	if r.AppliedVersion < 0 {
		t.Fatalf("accepted a negative applied_version: %d", r.AppliedVersion)
	}
	again := roundTrip(t, r, parseReport)
	if !reflect.DeepEqual(again, r) {
		t.Fatalf("round trip: %+v, want %+v", again, r)
	}
}

func checkBirth(t *testing.T, payload []byte) {
	b, err := parseBirth(payload)
	refusedAsInvalid(t, err)
	if err != nil {
		return
	}
	storeAccepts(t, "birth", payload, state.MaxBirth)
	if b.Session > math.MaxInt64 {
		t.Fatalf("accepted session %d, which the store cannot hold", b.Session)
	}
	if again := roundTrip(t, b, parseBirth); again != b {
		t.Fatalf("round trip: %+v, want %+v", again, b)
	}
}

func checkPackage(t *testing.T, pkg string) {
	name, version, hasVersion, err := parsePackage(pkg)
	refusedAsInvalid(t, err)
	if err != nil {
		return
	}
	if name == "" || strings.Contains(name, "@") || (hasVersion && version == "") {
		t.Fatalf("parsePackage(%q) = %q, %q, %v", pkg, name, version, hasVersion)
	}
	joined := name
	if hasVersion {
		joined += "@" + version
	}
	n2, v2, h2, err := parsePackage(joined)
	if err != nil || n2 != name || v2 != version || h2 != hasVersion {
		t.Fatalf("round trip of %q: %q, %q, %v, %v", joined, n2, v2, h2, err)
	}
}

// refusedAsInvalid fails unless err is nil or an invalid-input error: a
// device's bad payload is its fault, never an internal error.
func refusedAsInvalid(t *testing.T, err error) {
	t.Helper()
	if err != nil && fleet.ErrorCode(err) != fleet.EINVALID {
		t.Fatalf("refusal %v has code %q, want %q", err, fleet.ErrorCode(err), fleet.EINVALID)
	}
}

// storeAccepts fails when the store's check refuses what a parser accepted
// (the controller would then log a refusal for a payload it had read).
func storeAccepts(t *testing.T, what string, payload []byte, max int) {
	t.Helper()
	if err := fleet.ValidJSONObject(what, payload, max); err != nil {
		t.Fatalf("parser accepted %q, the store's check refuses it: %v", payload, err)
	}
	if t0 := bytes.TrimLeft(payload, " \t\r\n"); !json.Valid(payload) || t0[0] != '{' {
		t.Fatalf("accepted %q, which is not a JSON object", payload)
	}
}

func roundTrip[T any](t *testing.T, v T, parse func([]byte) (T, error)) T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %+v: %v", v, err)
	}
	again, err := parse(b)
	if err != nil {
		t.Fatalf("re-parse %s: %v", b, err)
	}
	return again
}
