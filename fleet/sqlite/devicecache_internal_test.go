package sqlite

import (
	"testing"

	"github.com/chorus-edge/chorus/fleet"
)

func setReported(v int64) func(*fleet.Device) {
	return func(d *fleet.Device) { d.AppliedVersion = v }
}

// TestDeviceCacheRefusesStaleReads: a row read before a change of its device
// was applied is not kept (the write may have committed after the read's
// snapshot); a change of another device does not refuse it.
func TestDeviceCacheRefusesStaleReads(t *testing.T) {
	c := newDeviceCache()
	_, seq, ok := c.get("pi1")
	if ok {
		t.Fatal("empty cache hit")
	}
	w := c.begin()
	c.apply(w, []deviceChange{{id: "pi1", set: setReported(2)}}, true)
	c.put(&fleet.Device{ID: "pi1", AppliedVersion: 1}, seq, c.lastWrite())
	if _, _, ok := c.get("pi1"); ok {
		t.Fatal("a read from before pi1's change was kept")
	}

	_, seq, _ = c.get("pi1")
	w = c.begin()
	c.apply(w, []deviceChange{{id: "pi2", set: nil}}, true)
	c.put(&fleet.Device{ID: "pi1", AppliedVersion: 2}, seq, c.lastWrite())
	if d, _, ok := c.get("pi1"); !ok || d.AppliedVersion != 2 {
		t.Fatalf("a change of pi2 refused pi1's read: %+v, %v", d, ok)
	}
}

// TestDeviceCacheWriteOrder: changes are applied in the order their
// transactions began (their commit order: one writer); a change that
// arrives after a later write's was applied, one of a write that may be in
// the snapshot a row was read from, one of a transaction that did not
// commit, and a drop all leave no row.
func TestDeviceCacheWriteOrder(t *testing.T) {
	cases := []struct {
		name string
		run  func(c *deviceCache)
		want int64 // AppliedVersion cached; 0: no row
	}{
		{"in order", func(c *deviceCache) {
			a, b := c.begin(), c.begin()
			c.apply(a, []deviceChange{{id: "pi1", set: setReported(5)}}, true)
			c.apply(b, []deviceChange{{id: "pi1", set: setReported(6)}}, true)
		}, 6},
		{"out of order", func(c *deviceCache) {
			a, b := c.begin(), c.begin()
			c.apply(b, []deviceChange{{id: "pi1", set: setReported(6)}}, true)
			c.apply(a, []deviceChange{{id: "pi1", set: setReported(5)}}, true)
		}, 0},
		{"not committed", func(c *deviceCache) {
			c.apply(c.begin(), []deviceChange{{id: "pi1", set: setReported(5)}}, false)
		}, 0},
		{"dropped", func(c *deviceCache) {
			c.apply(c.begin(), []deviceChange{{id: "pi1", set: nil}}, true)
		}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newDeviceCache()
			_, seq, _ := c.get("pi1")
			c.put(&fleet.Device{ID: "pi1", AppliedVersion: 1}, seq, c.lastWrite())
			tc.run(c)
			d, _, ok := c.get("pi1")
			switch {
			case tc.want == 0 && ok:
				t.Fatalf("cached %+v, want no row", d)
			case tc.want != 0 && (!ok || d.AppliedVersion != tc.want):
				t.Fatalf("cached %+v (%v), want applied version %d", d, ok, tc.want)
			}
		})
	}

	// A write begun before a read ended may be in its snapshot: its change
	// drops the row rather than being applied over it again.
	c := newDeviceCache()
	_, seq, _ := c.get("pi1")
	w := c.begin()
	c.put(&fleet.Device{ID: "pi1", AppliedVersion: 6}, seq, c.lastWrite())
	c.apply(w, []deviceChange{{id: "pi1", set: setReported(5)}}, true)
	if d, _, ok := c.get("pi1"); ok {
		t.Fatalf("a change of a write begun before the read was applied: %+v", d)
	}
}
