package controller

import (
	"encoding/binary"
	"maps"
	"slices"
	"unique"
)

// packedMap is a small string map a device's haDevice keeps (its live
// discovery components, hadiscovery.Components, key → platform; its update
// states, skill → payload) in a compact, shared form: the pairs in key
// order, each string length-prefixed, as one interned string. Both depend
// on the skills and their versions, not on the device, so a fleet with the
// same skills holds one copy; a map per device was 10-17 MB of a
// 10,000-device install's live heap (docs/benchmarks.md, issue 19, round
// five). unique frees a string once no device holds it. Equal maps pack to
// equal values, so comparing packed values compares the maps. The zero
// value is the empty map.
type packedMap struct {
	h  unique.Handle[string]
	ok bool
}

// packMap packs m.
func packMap[V ~string | ~[]byte](m map[string]V) packedMap {
	if len(m) == 0 {
		return packedMap{}
	}
	var b []byte
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return packedMap{h: unique.Make(string(b)), ok: true}
}

// each calls f with the pairs in key order.
func (p packedMap) each(f func(k, v string)) {
	if !p.ok {
		return
	}
	s := p.h.Value()
	next := func() string {
		n, w := binary.Uvarint([]byte(s[:min(len(s), binary.MaxVarintLen64)]))
		v := s[w : w+int(n)]
		s = s[w+int(n):]
		return v
	}
	for s != "" {
		k := next()
		f(k, next())
	}
}

// strings returns the map packMap was given (nil for the empty one).
func (p packedMap) strings() map[string]string {
	if !p.ok {
		return nil
	}
	out := map[string]string{}
	p.each(func(k, v string) { out[k] = v })
	return out
}

// bytes returns the map packMap was given, values as byte slices of
// their own (nil for the empty one).
func (p packedMap) bytes() map[string][]byte {
	if !p.ok {
		return nil
	}
	out := map[string][]byte{}
	p.each(func(k, v string) { out[k] = []byte(v) })
	return out
}
