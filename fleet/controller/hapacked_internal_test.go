package controller

import (
	"maps"
	"strings"
	"testing"
)

// TestPackedMapRoundTrip: a packed map unpacks to the map it was made
// from, equal maps pack to equal values, and any changed key or value (or
// one pair more or fewer) packs to a different value, so a device whose
// components or update states changed is still published and what is gone
// still withdrawn.
func TestPackedMapRoundTrip(t *testing.T) {
	if (packedMap{}).strings() != nil || (packedMap{}).bytes() != nil {
		t.Fatal("the zero value is not the empty map")
	}
	if packMap(map[string]string(nil)) != (packedMap{}) || packMap(map[string][]byte{}) != (packedMap{}) {
		t.Fatal("an empty map is not the zero value")
	}
	long := strings.Repeat("k", 300) // a length that takes two varint bytes
	base := map[string]string{"network": "binary_sensor", "switch_weather": "switch", "update_weather": "update", long: "sensor", "": ""}
	p := packMap(base)
	if got := p.strings(); !maps.Equal(got, base) {
		t.Fatalf("unpacked %v, want %v", got, base)
	}
	if packMap(maps.Clone(base)) != p {
		t.Fatal("equal maps packed differently")
	}
	asBytes := map[string][]byte{}
	for k, v := range base {
		asBytes[k] = []byte(v)
	}
	if packMap(asBytes) != p {
		t.Fatal("the same pairs as bytes packed differently")
	}
	if got := p.bytes(); !maps.EqualFunc(got, asBytes, func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Fatalf("unpacked %q, want %q", got, asBytes)
	}
	for name, change := range map[string]func(map[string]string){
		"value":   func(m map[string]string) { m["switch_weather"] = "sensor" },
		"added":   func(m map[string]string) { m["switch_news"] = "switch" },
		"removed": func(m map[string]string) { delete(m, "update_weather") },
		"renamed": func(m map[string]string) { delete(m, "network"); m["networks"] = "binary_sensor" },
		"split":   func(m map[string]string) { delete(m, "network"); m["net"] = "workbinary_sensor" },
	} {
		m := maps.Clone(base)
		change(m)
		q := packMap(m)
		if q == p {
			t.Errorf("%s: packed equal to the original", name)
		}
		if got := q.strings(); !maps.Equal(got, m) {
			t.Errorf("%s: unpacked %v, want %v", name, got, m)
		}
	}
}
