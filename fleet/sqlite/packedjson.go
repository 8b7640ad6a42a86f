package sqlite

import (
	"bytes"
	"encoding/json"
	"slices"
)

// packedJSON is a skills report as the device row cache (devicecache.go)
// holds it: a report is ~1.5 KB of JSON in which the field names of every
// skill repeat, and one per device was the largest holder of the
// gateway's live heap on the fleet side at 10,000 devices
// (fleet/sqlite.storedJSON, 11.5 MB settled and 19.5 MB at the rollout's
// peak; docs/benchmarks.md, issue 19). Packed, the runs of names and
// common values that gateway/state.Encode writes (packTokens) are one byte
// each, which takes a six-skill report from 1.5 KB to ~0.4 KB.
//
// The code bytes are ASCII control characters other than tab, line feed
// and carriage return: valid JSON holds none of them unescaped (RFC 8259
// §7), and a payload that holds one anyway is kept as it is. This costs a
// few microseconds a report either way; deflate (compress/flate) packed
// tighter but cost 50-100 µs a report on the write path, which runs on the
// controller's single inbox goroutine (BenchmarkUpdateStatesReports).
//
// nil is no payload; a packedJSON is never changed once made, so copies of
// a cached row share it.
type packedJSON []byte

// packTokens are the runs of a skills payload (gateway/state.Skills as
// json.Marshal writes it, SKILL_MANAGER §3) that pack to one byte each, the
// longest first where one starts another. Only memory holds the packed
// form (the file stores the payload verbatim), so the list can change
// freely; a payload unlike it only packs less.
var packTokens = [...]string{
	`","state":"loaded","active":true,"waiting_for":[],"degraded":false,"requirements":[],"managed":`,
	`,"error":"","attempts":0,"next_retry":null,"since":"`,
	`{"applied_version":`,
	`,"manifest_digest":"`,
	`","updated_at":"`,
	`","skills":[{"id":"`,
	`"}],"training":{"status":"`,
	`"},{"id":"`,
	`","version":"`,
	`","state":"`,
	`","active":`,
	`,"waiting_for":`,
	`,"degraded":`,
	`,"requirements":`,
	`,"managed":`,
	`,"error":"`,
	`","output":[`,
	`],"attempts":`,
	`","attempts":`,
	`,"next_retry":`,
	`,"since":"`,
	`","requested_at":"`,
	`","finished_at":"`,
	`.openvoiceos`,
	`false`,
	`true`,
	`null`,
	`"}}`,
}

// packTokenBytes are packTokens as byte slices, for the scan.
var packTokenBytes = func() (out [len(packTokens)][]byte) {
	for i, t := range packTokens {
		out[i] = []byte(t)
	}
	return out
}()

// packCodes are the code bytes, one per token in order.
var packCodes = func() (codes [len(packTokens)]byte) {
	c := byte(0)
	for i := range codes {
		for c == '\t' || c == '\n' || c == '\r' {
			c++
		}
		codes[i] = c
		c++
	}
	return codes
}()

// packFirst lists, by a payload byte, the tokens (indexes into packTokens)
// that start with it, longest first.
var packFirst = func() (first [256][]int) {
	for i, t := range packTokens {
		first[t[0]] = append(first[t[0]], i)
	}
	for _, l := range first {
		for i := 1; i < len(l); i++ { // insertion sort by length, longest first
			for j := i; j > 0 && len(packTokens[l[j]]) > len(packTokens[l[j-1]]); j-- {
				l[j], l[j-1] = l[j-1], l[j]
			}
		}
	}
	return first
}()

// packToken maps a code byte back to its token ("" for other bytes).
var packToken = func() (tok [0x20]string) {
	for i, c := range packCodes {
		tok[c] = packTokens[i]
	}
	return tok
}()

// packedTag is packedJSON's first byte: the form the rest is in.
const (
	packedRaw    = 0 // the payload as given
	packedTokens = 1 // the payload with packTokens replaced by packCodes
)

// maxPackedInput bounds the reports packJSON packs; a larger one is kept
// as it is. The scan tries up to 13 tokens at every '"', and it runs under
// the row cache's lock on the controller's inbox goroutine: a device's
// report of 256 KiB dense in '"' (valid JSON the store accepts) took ~12 ms
// where the copy it replaced took 0.4. A report of 100 skills is ~23 KB.
const maxPackedInput = 32 << 10

// packJSON returns payload in its packed form, in memory of its own (the
// caller may change payload afterwards).
func packJSON(payload json.RawMessage) packedJSON {
	if len(payload) == 0 {
		return nil
	}
	if len(payload) > maxPackedInput {
		return rawPacked(payload)
	}
	var scratch [2048]byte // a report's packed form fits; larger ones grow onto the heap
	buf := append(scratch[:0], packedTokens)
	for i := 0; i < len(payload); {
		c := payload[i]
		if c < 0x20 && packToken[c] != "" {
			return rawPacked(payload) // not JSON as the store validates it
		}
		n := 0
		for _, t := range packFirst[c] {
			if bytes.HasPrefix(payload[i:], packTokenBytes[t]) {
				buf = append(buf, packCodes[t])
				n = len(packTokens[t])
				break
			}
		}
		if n == 0 {
			buf = append(buf, c)
			n = 1
		}
		i += n
	}
	if len(buf) > len(payload)-len(payload)/8 {
		return rawPacked(payload) // saves too little to keep a second form
	}
	return bytes.Clone(buf) // in an allocation of its size
}

func rawPacked(payload []byte) packedJSON {
	out := make(packedJSON, 1+len(payload))
	out[0] = packedRaw
	copy(out[1:], payload)
	return out
}

// unpackJSON returns the payload packJSON made p from, in new memory (nil
// for none).
func unpackJSON(p packedJSON) json.RawMessage { return appendUnpacked(nil, p) }

// appendUnpacked appends the payload p holds to out (nil for none: out
// stays nil when p is empty), growing out once to the exact size.
func appendUnpacked(out json.RawMessage, p packedJSON) json.RawMessage {
	if len(p) == 0 {
		return nil
	}
	if p[0] == packedRaw {
		return append(out, p[1:]...)
	}
	n := 0
	for _, c := range p[1:] {
		if c < 0x20 && packToken[c] != "" {
			n += len(packToken[c])
		} else {
			n++
		}
	}
	out = slices.Grow(out, n)
	for _, c := range p[1:] {
		if c < 0x20 && packToken[c] != "" {
			out = append(out, packToken[c]...)
		} else {
			out = append(out, c)
		}
	}
	return out
}
