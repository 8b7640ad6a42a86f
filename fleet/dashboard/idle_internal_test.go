package dashboard

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chorus-edge/chorus/fleet"
)

// listFleet is the three reads the view makes, over a fixed device list,
// counting the full loads.
type listFleet struct {
	Fleet // the rest is not called

	mu    sync.Mutex
	loads int
}

func (f *listFleet) ListDevices(context.Context, fleet.DeviceFilter) ([]*fleet.Device, error) {
	f.mu.Lock()
	f.loads++
	f.mu.Unlock()
	return []*fleet.Device{{ID: "pi-1", Online: true}}, nil
}

func (f *listFleet) GetDevice(_ context.Context, id string) (*fleet.Device, error) {
	return &fleet.Device{ID: id, Online: true}, nil
}

func (f *listFleet) DesiredOf(context.Context, string) (fleet.Desired, error) {
	return fleet.Desired{}, nil
}

func (f *listFleet) loaded() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.loads
}

type chanFeed struct{ wake chan struct{} }

func (f chanFeed) Wake() <-chan struct{}  { return f.wake }
func (f chanFeed) Take() ([]string, bool) { return nil, false }

// subscriptions counts the open change feeds (Config.Subscribe).
type subscriptions struct {
	mu sync.Mutex
	n  int
}

func (s *subscriptions) open() (Feed, func()) {
	s.add(1)
	return chanFeed{make(chan struct{})}, func() { s.add(-1) }
}

func (s *subscriptions) add(d int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n += d
}

func (s *subscriptions) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// An unused dashboard neither subscribes to the change feed nor loads the
// devices; a page read loads them and subscribes; idleAfter without a
// reader or an open stream ends the subscription and drops the rows; the
// next read loads them again (docs/dashboard.md "Live updates").
func TestViewOnlyWhileInUse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, subs := &listFleet{}, &subscriptions{}
		d, err := New(Config{Fleet: f, Subscribe: subs.open})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		synctest.Wait()
		if f.loaded() != 0 || subs.count() != 0 {
			t.Fatalf("unused: %d loads, %d subscriptions; want none", f.loaded(), subs.count())
		}
		ctx := context.Background()
		if err := d.view.ready(ctx); err != nil {
			t.Fatal(err)
		}
		if _, ok := d.view.get("pi-1"); !ok || f.loaded() != 1 || subs.count() != 1 {
			t.Fatalf("after a read: row %v, %d loads, %d subscriptions; want the row, 1, 1", ok, f.loaded(), subs.count())
		}
		time.Sleep(idleAfter + idleCheck) // synctest's fake clock
		synctest.Wait()
		if _, ok := d.view.get("pi-1"); ok || subs.count() != 0 {
			t.Fatalf("idle: row %v, %d subscriptions; want none", ok, subs.count())
		}
		_, stop := d.hub.add() // an open stream keeps the view in use
		defer stop()
		if err := d.view.ready(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * idleAfter)
		synctest.Wait()
		if _, ok := d.view.get("pi-1"); !ok || f.loaded() != 2 || subs.count() != 1 {
			t.Fatalf("with a stream open: row %v, %d loads, %d subscriptions; want the row, 2, 1", ok, f.loaded(), subs.count())
		}
	})
}
