package sqlite

import (
	"bytes"
	"slices"
	"sync"

	"github.com/chorus-edge/chorus/fleet"
)

// rowCache holds, per device, what a per-report read returned, so the
// controller's pass over a device (one per report) reads nothing the store
// itself just wrote. Two are kept (DB.devices, DB.running): the device row
// GetDevice returns, which was 6.2 s of the 25.3 s of Reconcile in a
// 10,000-device install's profile, and the device's in-progress executions
// judge lists, 4.8 s of it (docs/benchmarks.md, issue 19, round three).
//
// The store is the file's one writer while the gateway runs, and every
// statement that changes what a cache holds records the change in its
// transaction (tx.deviceChanged, tx.runningChanged): the frequent ones say
// how the cached value changes, the rare ones drop it. run applies the
// changes once the transaction has committed, or drops the values when it
// did not.
//
// Ordering: each write transaction takes a number (DB.writes) while it
// holds the single writer connection, so the numbers are in commit order.
// A value remembers the number of the last write folded into it; a change
// that arrives out of order (a later write's change was applied first)
// drops the value instead of applying an older change over a newer one. A
// reader that misses notes the cache's change sequence before its read
// transaction and the write number after it: it keeps its value only if no
// change of that device was applied meanwhile (as desiredCache.put), and
// numbers it with the write number, so a change of a write that may
// already be in its snapshot drops the value rather than being applied a
// second time.
type rowCache[T any] struct {
	clone func(T) T // a deep copy: no caller shares a cached value

	mu      sync.Mutex // guards the fields below
	seq     uint64     // counts applied changes
	changed map[string]uint64
	rows    map[string]cachedRow[T]
}

type cachedRow[T any] struct {
	v     T
	write uint64 // the last write folded in
}

// rowChange is one transaction's change of one device's cached value: set
// changes it as the statement changed what is stored; nil drops it.
type rowChange[T any] struct {
	id  string
	set func(*T)
}

func newRowCache[T any](clone func(T) T) *rowCache[T] {
	return &rowCache[T]{clone: clone, changed: map[string]uint64{}, rows: map[string]cachedRow[T]{}}
}

// get returns a copy of the cached value of id, or the sequence a reader
// that misses passes to put.
func (c *rowCache[T]) get(id string) (v T, seq uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.rows[id]
	if !ok {
		return v, c.seq, false
	}
	return c.clone(r.v), c.seq, true
}

// put keeps v as id's value, read after seq was noted and before the write
// numbered write began, unless a change of id was applied since seq.
func (c *rowCache[T]) put(id string, v T, seq, write uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.changed[id] > seq {
		return
	}
	c.rows[id] = cachedRow[T]{v: c.clone(v), write: write}
}

// apply folds in the changes of the write transaction numbered write, in
// the order the transaction made them: committed, each set is applied to a
// value that has seen no later write; otherwise (or not committed, or set
// is nil) the value is dropped. A value this call already changed takes
// the transaction's next change of it too (a batch, UpdateStates, can
// change one device twice). Either way the device is marked changed, so a
// reader that started before does not put it back. The marks stay after a
// device is removed, as desiredCache's do.
func (c *rowCache[T]) apply(write uint64, changes []rowChange[T], committed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var folded map[string]bool // values this call changed; made only for a second change
	for i, ch := range changes {
		c.seq++
		c.changed[ch.id] = c.seq
		r, ok := c.rows[ch.id]
		if !ok {
			continue
		}
		if !committed || ch.set == nil || r.write > write || r.write == write && !folded[ch.id] {
			delete(c.rows, ch.id)
			continue
		}
		ch.set(&r.v)
		r.write = write
		c.rows[ch.id] = r
		if i < len(changes)-1 {
			if folded == nil {
				folded = map[string]bool{}
			}
			folded[ch.id] = true
		}
	}
}

// deviceRow is a device as the row cache holds it: dev without its skills
// report (dev.Reported is nil), which reported holds packed
// (packedjson.go: one report per device was the largest fleet-side holder
// of a 10,000-device gateway's live heap).
type deviceRow struct {
	dev      fleet.Device
	reported packedJSON
}

// rowOf is d as the row cache keeps it.
func rowOf(d *fleet.Device) deviceRow {
	r := deviceRow{dev: *d, reported: packJSON(d.Reported)}
	r.dev.Reported = nil
	return r
}

// copyDeviceRow copies r's device with its slices; the packed report is
// shared, as a packedJSON is never changed once made.
func copyDeviceRow(r deviceRow) deviceRow {
	return deviceRow{dev: copyDevice(r.dev), reported: r.reported}
}

// copyDevice copies d with its slices.
func copyDevice(d fleet.Device) fleet.Device {
	out := d
	out.Tags = slices.Clone(d.Tags)
	out.SkillKey = bytes.Clone(d.SkillKey)
	out.Connectivity = bytes.Clone(d.Connectivity)
	out.Reported = bytes.Clone(d.Reported)
	return out
}

// copyExecutions copies a list of executions (their fields are values);
// an empty list is nil, as queryAll returns it.
func copyExecutions(es []*fleet.Execution) []*fleet.Execution {
	if len(es) == 0 {
		return nil
	}
	out := make([]*fleet.Execution, len(es))
	for i, e := range es {
		c := *e
		out[i] = &c
	}
	return out
}

// setRunning puts e, as a transition left it, into the device's list of
// in-progress executions in ListExecutions' order (by rollout: one device
// has one execution per rollout), or takes it out when it left that state.
func setRunning(es []*fleet.Execution, e fleet.Execution) []*fleet.Execution {
	es = slices.DeleteFunc(es, func(x *fleet.Execution) bool { return x.RolloutID == e.RolloutID })
	if e.State != fleet.ExecInProgress {
		return es
	}
	i, _ := slices.BinarySearchFunc(es, e.RolloutID, func(x *fleet.Execution, id int64) int {
		switch {
		case x.RolloutID < id:
			return -1
		case x.RolloutID > id:
			return 1
		}
		return 0
	})
	return slices.Insert(es, i, &e)
}
