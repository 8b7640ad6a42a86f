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
//
// Cached documents share their skills: a rollout gives thousands of devices
// the same skills (only the document versions differ), and a copy per
// device was 10.5 MB of a 10,000-device install's live heap
// (docs/benchmarks.md, issue 19, round five). A kept document takes the
// skills map of a recently kept one with the same content (sameSkills:
// every field and settings byte equal), else a copy of its own. Cached
// maps are never changed: get hands out copies, and a new document
// replaces a device's entry rather than editing it.
type desiredCache struct {
	mu      sync.Mutex // guards the fields below
	seq     uint64     // counts drops
	all     uint64     // seq of the last drop of every device
	dropped map[string]uint64
	docs    map[string]fleet.Desired
	recent  [sharedSkillSets]map[string]fleet.DesiredSkill // skill sets kept last, most recent first
}

// sharedSkillSets is how many recently kept skill sets a document is
// compared with before it gets a copy of its own (a few rollouts at once).
const sharedSkillSets = 4

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
	c.docs[id] = c.keep(doc)
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
	c.docs[id] = c.keep(doc)
}

// keep returns doc as the cache holds it: with the skills map of a recently
// kept document that has the same content, or else a copy that becomes
// the most recent. Called with mu held.
func (c *desiredCache) keep(doc fleet.Desired) fleet.Desired {
	if doc.Skills == nil {
		return doc
	}
	for i, m := range c.recent {
		if m != nil && sameSkills(m, doc.Skills) {
			copy(c.recent[1:i+1], c.recent[:i])
			c.recent[0] = m
			return fleet.Desired{Version: doc.Version, Skills: m}
		}
	}
	out := copyDesired(doc)
	copy(c.recent[1:], c.recent[:len(c.recent)-1])
	c.recent[0] = out.Skills
	return out
}

// sameSkills reports whether a and b hold the same skills with equal
// fields and byte-equal settings (stricter than fleet.SameSkills, which
// compares canonical JSON and costs an encoding of each).
func sameSkills(a, b map[string]fleet.DesiredSkill) bool {
	if len(a) != len(b) {
		return false
	}
	for id, x := range a {
		y, ok := b[id]
		if !ok || x.Version != y.Version || x.SHA256 != y.SHA256 || x.Size != y.Size || x.URL != y.URL ||
			!bytes.Equal(x.Settings, y.Settings) || (x.Settings == nil) != (y.Settings == nil) {
			return false
		}
	}
	return true
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
