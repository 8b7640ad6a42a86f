// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 chorus-edge (patch to mochi-mqtt v2.7.9)

package packets

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
)

// payloadCodec compresses the large payloads a Packets holds (retained
// messages are held for as long as their topic is set, and the large ones,
// such as Home Assistant discovery documents, are repetitive JSON that
// deflates to a fifth) and inflates them again for each Get. A payload is
// kept compressed only when that saves at least a quarter of it.
//
// With a dictionary (sample documents of the shapes the embedder retains),
// deflate's window starts filled with it, so a document that differs from
// the sample only in its ids and names costs little more than those: a
// Home Assistant device document of 2.6 KB deflates to ~690 bytes alone
// and to ~115 with the sample of another device as dictionary.
type payloadCodec struct {
	above int    // compress payloads longer than this
	dict  []byte // preset dictionary, fixed for the codec's life (nil: none)
	level int    // flate level: BestSpeed, or dictLevel with a dictionary

	// One writer, reused under mu: a flate.Writer is ~650 KB whatever its
	// level, too large to make per payload or to let a sync.Pool drop and
	// remake at every GC.
	mu  sync.Mutex
	w   *flate.Writer
	buf bytes.Buffer

	readers sync.Pool // flate readers (~40 KB each), reset per payload
}

// dictLevel is the level used with a dictionary: compress/flate's
// BestSpeed (level 1) never fills its window with a preset dictionary
// (compressor.fillWindow returns at once below level 2), so the dictionary
// needs level 2, the fastest level that matches against it.
const dictLevel = 2

// maxDict is deflate's window: bytes of a dictionary before its last 32 KiB
// can never be matched.
const maxDict = 32 << 10

func newPayloadCodec(above int, dict []byte) *payloadCodec {
	c := &payloadCodec{above: above, level: flate.BestSpeed}
	if len(dict) > 0 {
		if len(dict) > maxDict {
			dict = dict[len(dict)-maxDict:]
		}
		c.dict, c.level = bytes.Clone(dict), dictLevel
	}
	return c
}

// compress returns payload compressed (its length as a uvarint, then the
// deflated bytes, in an allocation of their own), or nil when it is not
// longer than c.above or would not shrink by a quarter.
func (c *payloadCodec) compress(payload []byte) []byte {
	if len(payload) <= c.above {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Reset()
	c.buf.Write(binary.AppendUvarint(nil, uint64(len(payload))))
	if c.w == nil {
		w, err := flate.NewWriterDict(&c.buf, c.level, c.dict)
		if err != nil {
			return nil // only for an invalid level
		}
		c.w = w
	} else {
		c.w.Reset(&c.buf)
	}
	if _, err := c.w.Write(payload); err != nil {
		return nil
	}
	if err := c.w.Close(); err != nil {
		return nil
	}
	if c.buf.Len() > len(payload)-len(payload)/4 {
		return nil
	}
	return bytes.Clone(c.buf.Bytes())
}

// decompress returns the payload compress made z from, in new memory. z
// was made by compress in this process, so an error is a broken invariant
// and panics rather than hand a subscriber a wrong payload.
func (c *payloadCodec) decompress(z []byte) []byte {
	n, k := binary.Uvarint(z)
	if k <= 0 {
		panic("packets: a compressed payload lost its length")
	}
	r, _ := c.readers.Get().(io.ReadCloser)
	if r == nil {
		r = flate.NewReaderDict(bytes.NewReader(z[k:]), c.dict)
	} else if err := r.(flate.Resetter).Reset(bytes.NewReader(z[k:]), c.dict); err != nil {
		panic(fmt.Sprintf("packets: reset a payload reader: %v", err))
	}
	defer c.readers.Put(r)
	out := make([]byte, n)
	if _, err := io.ReadFull(r, out); err != nil {
		panic(fmt.Sprintf("packets: inflate a %d-byte payload: %v", n, err))
	}
	return out
}
