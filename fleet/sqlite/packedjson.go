package sqlite

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// jsonPacker keeps the skills reports of the cached device rows
// (devicecache.go) small: a report is ~1.5 KB of JSON in which the field
// names of every skill repeat, and one per device was the largest holder
// of the gateway's live heap on the fleet side at 10,000 devices
// (fleet/sqlite.storedJSON, 11.5 MB settled and 19.5 MB at the rollout's
// peak; docs/benchmarks.md, issue 19). Deflated against a dictionary of a
// report's names one is ~100 bytes. Only memory holds the packed form (the
// file stores the payload verbatim), so the dictionary can change freely.
//
// pack runs where the store copied a report before (the write path, once
// per report) and unpack where GetDevice copied it out of the cache, so the
// cost is a deflate per stored report and an inflate per cached read.
type jsonPacker struct {
	// One writer, reused under mu: a flate.Writer is ~650 KB, too large to
	// make per payload or to let a sync.Pool drop at every GC (as the
	// broker fork's payloadCodec).
	mu  sync.Mutex
	w   *flate.Writer
	buf bytes.Buffer

	readers sync.Pool // flate readers (~40 KB each), reset per payload
}

// packedJSON is a payload as jsonPacker.pack holds it: nil for none, else a
// tag byte, then either the payload as given (packedRaw) or its length as a
// uvarint and its deflated bytes (packedDeflated). A packedJSON is never
// changed once made, so copies of a cached row share it.
type packedJSON []byte

const (
	packedRaw      = 0
	packedDeflated = 1

	// packAbove is the shortest payload worth deflating; a connectivity
	// payload (~120 bytes) stays raw. A deflated payload is kept only when
	// it saves at least a quarter.
	packAbove = 192
)

// packDict is what deflate may refer back to before a payload's first
// byte: the names and common values of a skills report
// (gateway/state.Skills, SKILL_MANAGER §3), the most frequent last, where
// references are shortest. A report unlike it still round-trips, only
// larger (TestPackedJSON* in packedjson_test.go).
const packDict = `{"applied_version":0,"manifest_digest":"sha256:","updated_at":"",` +
	`"training":{"status":"pending","error":"","requested_at":"","finished_at":""}` +
	`"state":"waiting","state":"loading","state":"inactive","state":"failed","state":"blacklisted","state":"invalid",` +
	`"output":[""],"waiting_for":["network","internet","gui"],"requirements":["network","internet","gui"],` +
	`.openvoiceos","version":"0.0.1","active":false,"degraded":true,"managed":false,"error":"","attempts":1,"next_retry":"2026-` +
	`"skills":[{"id":"skill-","version":"1.0.0","state":"loaded","active":true,"waiting_for":[],"degraded":false,` +
	`"requirements":[],"managed":true,"error":"","attempts":0,"next_retry":null,"since":"2026-01-01T00:00:00.000000000Z"},{"id":"`

var packDictBytes = []byte(packDict)

// pack returns payload in its packed form, in memory of its own (the
// caller may change payload afterwards).
func (p *jsonPacker) pack(payload json.RawMessage) packedJSON {
	if len(payload) == 0 {
		return nil
	}
	if len(payload) > packAbove {
		if z := p.deflate(payload); z != nil {
			return z
		}
	}
	out := make(packedJSON, 1+len(payload))
	out[0] = packedRaw
	copy(out[1:], payload)
	return out
}

// deflate returns payload deflated and tagged, or nil when that does not
// save a quarter of it.
func (p *jsonPacker) deflate(payload []byte) packedJSON {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf.Reset()
	p.buf.WriteByte(packedDeflated)
	p.buf.Write(binary.AppendUvarint(nil, uint64(len(payload))))
	if p.w == nil {
		w, err := flate.NewWriterDict(&p.buf, flate.BestSpeed+1, packDictBytes)
		if err != nil {
			return nil // only for an invalid level
		}
		p.w = w
	} else {
		p.w.Reset(&p.buf) // keeps the dictionary
	}
	if _, err := p.w.Write(payload); err != nil {
		return nil
	}
	if err := p.w.Close(); err != nil {
		return nil
	}
	if p.buf.Len() > len(payload)-len(payload)/4 {
		return nil
	}
	return bytes.Clone(p.buf.Bytes())
}

// unpack returns the payload pack made z from, in new memory (nil for
// none). z was made by pack in this process, so a broken one is a broken
// invariant and panics rather than hand out a wrong report.
func (p *jsonPacker) unpack(z packedJSON) json.RawMessage {
	if len(z) == 0 {
		return nil
	}
	if z[0] == packedRaw {
		return bytes.Clone(z[1:])
	}
	n, k := binary.Uvarint(z[1:])
	if z[0] != packedDeflated || k <= 0 {
		panic("sqlite: a packed payload lost its header")
	}
	src := bytes.NewReader(z[1+k:])
	r, _ := p.readers.Get().(io.ReadCloser)
	if r == nil {
		r = flate.NewReaderDict(src, packDictBytes)
	} else if err := r.(flate.Resetter).Reset(src, packDictBytes); err != nil {
		panic(fmt.Sprintf("sqlite: reset a payload reader: %v", err))
	}
	defer p.readers.Put(r)
	out := make(json.RawMessage, n)
	if _, err := io.ReadFull(r, out); err != nil {
		panic(fmt.Sprintf("sqlite: inflate a %d-byte payload: %v", n, err))
	}
	return out
}
