package sqlite

import (
	"testing"

	"github.com/chorus-edge/chorus/fleet"
)

func setApplied(v int64) func(*fleet.Device) {
	return func(d *fleet.Device) { d.AppliedVersion = v }
}

// TestRowCacheRefusesStaleReads: a value read before a change of its device
// was applied is not kept (the write may have committed after the read's
// snapshot); a change of another device does not refuse it.
func TestRowCacheRefusesStaleReads(t *testing.T) {
	c := newRowCache(copyDevice)
	_, seq, ok := c.get("pi1")
	if ok {
		t.Fatal("empty cache hit")
	}
	c.apply(1, []rowChange[fleet.Device]{{id: "pi1", set: setApplied(2)}}, true)
	c.put("pi1", fleet.Device{ID: "pi1", AppliedVersion: 1}, seq, 1)
	if _, _, ok := c.get("pi1"); ok {
		t.Fatal("a read from before pi1's change was kept")
	}

	_, seq, _ = c.get("pi1")
	c.apply(2, []rowChange[fleet.Device]{{id: "pi2", set: nil}}, true)
	c.put("pi1", fleet.Device{ID: "pi1", AppliedVersion: 2}, seq, 2)
	if d, _, ok := c.get("pi1"); !ok || d.AppliedVersion != 2 {
		t.Fatalf("a change of pi2 refused pi1's read: %+v, %v", d, ok)
	}
}

// TestRowCacheWriteOrder: changes are applied in the order their
// transactions were numbered (their commit order: one writer); a change
// that arrives after a later write's was applied, one of a transaction that
// did not commit, and a drop leave no value, and so does the change of a
// write numbered before the read ended (it may be in the read's snapshot).
func TestRowCacheWriteOrder(t *testing.T) {
	cases := []struct {
		name string
		read uint64 // the write number the read noted after it
		run  func(c *rowCache[fleet.Device])
		want int64 // AppliedVersion cached; 0: none
	}{
		{"in order", 4, func(c *rowCache[fleet.Device]) {
			c.apply(5, []rowChange[fleet.Device]{{id: "pi1", set: setApplied(5)}}, true)
			c.apply(6, []rowChange[fleet.Device]{{id: "pi1", set: setApplied(6)}}, true)
		}, 6},
		{"out of order", 4, func(c *rowCache[fleet.Device]) {
			c.apply(6, []rowChange[fleet.Device]{{id: "pi1", set: setApplied(6)}}, true)
			c.apply(5, []rowChange[fleet.Device]{{id: "pi1", set: setApplied(5)}}, true)
		}, 0},
		{"not committed", 4, func(c *rowCache[fleet.Device]) {
			c.apply(5, []rowChange[fleet.Device]{{id: "pi1", set: setApplied(5)}}, false)
		}, 0},
		{"dropped", 4, func(c *rowCache[fleet.Device]) {
			c.apply(5, []rowChange[fleet.Device]{{id: "pi1", set: nil}}, true)
		}, 0},
		{"write numbered before the read ended", 5, func(c *rowCache[fleet.Device]) {
			c.apply(5, []rowChange[fleet.Device]{{id: "pi1", set: setApplied(5)}}, true)
		}, 0},
		{"two changes of one transaction", 4, func(c *rowCache[fleet.Device]) {
			c.apply(5, []rowChange[fleet.Device]{{id: "pi1", set: setApplied(5)}, {id: "pi2", set: nil}, {id: "pi1", set: setApplied(7)}}, true)
		}, 7},
		{"two changes of one transaction, read in its snapshot", 5, func(c *rowCache[fleet.Device]) {
			c.apply(5, []rowChange[fleet.Device]{{id: "pi1", set: setApplied(5)}, {id: "pi1", set: setApplied(7)}}, true)
		}, 0},
		{"a change after a drop in one transaction", 4, func(c *rowCache[fleet.Device]) {
			c.apply(5, []rowChange[fleet.Device]{{id: "pi1", set: nil}, {id: "pi1", set: setApplied(7)}}, true)
		}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newRowCache(copyDevice)
			_, seq, _ := c.get("pi1")
			c.put("pi1", fleet.Device{ID: "pi1", AppliedVersion: 1}, seq, tc.read)
			tc.run(c)
			d, _, ok := c.get("pi1")
			switch {
			case tc.want == 0 && ok:
				t.Fatalf("cached %+v, want none", d)
			case tc.want != 0 && (!ok || d.AppliedVersion != tc.want):
				t.Fatalf("cached %+v (%v), want applied version %d", d, ok, tc.want)
			}
		})
	}
}

// TestSetRunning: a transition into in_progress adds the execution in
// rollout order, a second one of the same rollout replaces it, a
// transition out of in_progress takes it out.
func TestSetRunning(t *testing.T) {
	run := func(rollout int64, state fleet.ExecState) fleet.Execution {
		return fleet.Execution{RolloutID: rollout, DeviceID: "pi1", State: state, Attempts: int(rollout)}
	}
	var es []*fleet.Execution
	for _, e := range []fleet.Execution{run(7, fleet.ExecInProgress), run(3, fleet.ExecInProgress), run(9, fleet.ExecInProgress)} {
		es = setRunning(es, e)
	}
	es = setRunning(es, fleet.Execution{RolloutID: 3, DeviceID: "pi1", State: fleet.ExecInProgress, Attempts: 2})
	es = setRunning(es, run(7, fleet.ExecSucceeded))
	var got []int64
	for _, e := range es {
		got = append(got, e.RolloutID)
	}
	if len(got) != 2 || got[0] != 3 || got[1] != 9 || es[0].Attempts != 2 {
		t.Fatalf("in progress: rollouts %v (%+v), want [3 9] with rollout 3 at attempt 2", got, es)
	}
}
