package sqlite

import (
	"bytes"
	"slices"
	"sync"

	"github.com/chorus-edge/chorus/fleet"
)

// deviceCache holds the device rows GetDevice returned, so the controller's
// pass over a device (one per report) reads no row the store itself just
// wrote: GetDevice was 6.2 s of the 25.3 s of Reconcile in a 10,000-device
// install's profile (docs/benchmarks.md, issue 19, round three).
//
// The store is the file's one writer while the gateway runs, and every
// statement that changes what getDevice reads (the devices row, its tags,
// its device_desired version) records the change in its transaction
// (tx.deviceChanged): the frequent ones say how the row changes (a report,
// a presence, a birth, a connectivity payload, a new desired version), the
// rare ones drop it (creation, removal, tags, key rotation). run applies
// the changes once the transaction has committed, or drops the rows when
// it did not.
//
// Ordering: each write transaction takes a number (begin) while it holds
// the single writer connection, so the numbers are in commit order. A row
// remembers the number of the last write folded into it; a change that
// arrives out of order (a later write's change was applied first) drops
// the row instead of applying an older value over a newer one. A reader
// that misses notes the change sequence before its read transaction and
// the write number after it: it keeps its row only if no change of that
// device was applied meanwhile (as desiredCache.put), and numbers it with
// the write number, so a change of a write that may already be in its
// snapshot drops the row rather than being applied twice.
type deviceCache struct {
	mu      sync.Mutex // guards the fields below
	seq     uint64     // counts applied changes
	writes  uint64     // numbers write transactions
	changed map[string]uint64
	rows    map[string]cachedDevice
}

type cachedDevice struct {
	d     fleet.Device
	write uint64 // the last write folded in
}

// deviceChange is one transaction's change of one device row: set changes
// the cached row as the statement changed the stored one; nil drops it.
type deviceChange struct {
	id  string
	set func(*fleet.Device)
}

func newDeviceCache() *deviceCache {
	return &deviceCache{changed: map[string]uint64{}, rows: map[string]cachedDevice{}}
}

// get returns a copy of the cached row of id, or the sequence a reader
// that misses passes to put.
func (c *deviceCache) get(id string) (d *fleet.Device, seq uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.rows[id]
	if !ok {
		return nil, c.seq, false
	}
	return copyDevice(&r.d), c.seq, true
}

// begin numbers a write transaction; run calls it while the transaction
// holds the writer connection.
func (c *deviceCache) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	return c.writes
}

// lastWrite is the number of the latest write transaction begun.
func (c *deviceCache) lastWrite() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes
}

// put keeps d, read after seq was noted and before write was, unless a
// change of the device was applied since seq.
func (c *deviceCache) put(d *fleet.Device, seq, write uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.changed[d.ID] > seq {
		return
	}
	c.rows[d.ID] = cachedDevice{d: *copyDevice(d), write: write}
}

// apply folds in the changes of write transaction write: committed, each
// set is applied to a row that has seen no later write; otherwise (or not
// committed, or set is nil) the row is dropped. Either way the device is
// marked changed, so a reader that started before does not put it back.
func (c *deviceCache) apply(write uint64, changes []deviceChange, committed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range changes {
		c.seq++
		c.changed[ch.id] = c.seq
		r, ok := c.rows[ch.id]
		if !ok {
			continue
		}
		if !committed || ch.set == nil || r.write >= write {
			delete(c.rows, ch.id)
			continue
		}
		ch.set(&r.d)
		r.write = write
		c.rows[ch.id] = r
	}
}

// copyDevice copies d with its slices, so no caller shares a cached row.
func copyDevice(d *fleet.Device) *fleet.Device {
	out := *d
	out.Tags = slices.Clone(d.Tags)
	out.SkillKey = bytes.Clone(d.SkillKey)
	out.Connectivity = bytes.Clone(d.Connectivity)
	out.Reported = bytes.Clone(d.Reported)
	return &out
}
