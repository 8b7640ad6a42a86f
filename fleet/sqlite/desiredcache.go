package sqlite

import (
	"bytes"
	"sync"

	"github.com/chorus-edge/chorus/fleet"
)

// desiredCache holds the desired document DesiredFor last returned for each
// device, so a device's reconcile pass (one per report) costs no statements
// while nothing it depends on changed. A 1,000-device install spent 16 % of
// the gateway's CPU recomputing unchanged documents (docs/benchmarks.md,
// issue 19).
//
// A document depends on the device's tags, the assignments matching it and
// the catalog versions they resolve to (computeDesired); every write of those
// goes through this DB (the one writer of the file while the gateway runs)
// and drops what it may change once it has committed: one device (a device
// assignment, its tags, its creation or removal) or every device (a tag or
// fleet-wide assignment, a published version of a skill an assignment
// names: PublishVersion).
//
// A reader notes the cache's sequence before it opens its transaction and
// keeps its result only if nothing it depends on was dropped since: a write
// that commits while it reads cannot leave a stale document behind.
type desiredCache struct {
	mu      sync.Mutex // guards the fields below
	seq     uint64     // counts drops
	all     uint64     // seq of the last drop of every device
	dropped map[string]uint64
	docs    map[string]fleet.Desired
}

func newDesiredCache() *desiredCache {
	return &desiredCache{dropped: map[string]uint64{}, docs: map[string]fleet.Desired{}}
}

// get returns the cached document of id, and the sequence a reader that
// misses passes to put.
func (c *desiredCache) get(id string) (doc fleet.Desired, seq uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	doc, ok = c.docs[id]
	return copyDesired(doc), c.seq, ok
}

// put keeps doc for id unless id was dropped after seq was read.
func (c *desiredCache) put(id string, doc fleet.Desired, seq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.all > seq || c.dropped[id] > seq {
		return
	}
	c.docs[id] = copyDesired(doc)
}

// drop forgets id's document. Its mark stays after the device is removed:
// a reader that started before the removal must not put it back.
func (c *desiredCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	c.dropped[id] = c.seq
	delete(c.docs, id)
}

// replace sets id's document to doc, written and committed by the caller
// while seq was the sequence (read inside its write transaction, so no
// other write committed after it). A drop since then may be of a write
// that committed after the caller's: then the document is only dropped.
// Readers that started before are refused as by drop.
func (c *desiredCache) replace(id string, doc fleet.Desired, seq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	stale := c.all > seq || c.dropped[id] > seq
	c.seq++
	c.dropped[id] = c.seq
	if stale {
		delete(c.docs, id)
		return
	}
	c.docs[id] = copyDesired(doc)
}

// sequence is the current sequence.
func (c *desiredCache) sequence() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seq
}

// dropAll forgets every document.
func (c *desiredCache) dropAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	c.all = c.seq
	clear(c.docs)
	clear(c.dropped) // every mark is at most all now
}

// dropTarget drops what an assignment to t may change.
func (c *desiredCache) dropTarget(t fleet.Target) {
	if t.Kind == fleet.TargetDevice {
		c.drop(t.Value)
		return
	}
	c.dropAll()
}

// copyDesired copies the map (and the settings) of a document, so callers
// never share the cached one.
func copyDesired(d fleet.Desired) fleet.Desired {
	if d.Skills == nil {
		return d
	}
	out := fleet.Desired{Version: d.Version, Skills: make(map[string]fleet.DesiredSkill, len(d.Skills))}
	for id, s := range d.Skills {
		s.Settings = bytes.Clone(s.Settings)
		out.Skills[id] = s
	}
	return out
}
