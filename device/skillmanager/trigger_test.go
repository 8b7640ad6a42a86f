package skillmanager

import (
	"context"
	"testing"
	"testing/synctest"
)

// A burst of fires while the work runs costs exactly one more run, which
// sees every reason of the burst; a fire after that run starts another.
func TestTriggerCoalescesABurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		tr := newTrigger()
		release := make(chan struct{})
		var runs []string
		go tr.run(ctx, func(_ context.Context, why string) {
			runs = append(runs, why)
			<-release
		})
		tr.fire("first")
		synctest.Wait() // the first run is blocked in the work
		for range 100 {
			tr.fire("burst")
		}
		tr.fire("other")
		release <- struct{}{} // the first run ends
		synctest.Wait()       // the one coalesced run is blocked
		release <- struct{}{}
		synctest.Wait()
		if len(runs) != 2 || runs[0] != "first" || runs[1] != "burst, other" {
			t.Fatalf("runs %q, want [first] then one run for the burst", runs)
		}
		tr.fire("later")
		synctest.Wait()
		release <- struct{}{}
		synctest.Wait()
		if len(runs) != 3 || runs[2] != "later" {
			t.Fatalf("runs %q, want a third run for the later fire", runs)
		}
	})
}

// Request handlers run at most maxRequests at once; one more is answered
// busy at once, and a slot frees when a handler ends.
func TestRequestsAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &Manager{requests: make(chan struct{}, maxRequests)}
		m.runCtx = t.Context()
		block := make(chan struct{})
		for i := range maxRequests {
			if err := m.goRequest(func(context.Context) { <-block }); err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
		}
		if err := m.goRequest(func(context.Context) {}); err != errBusy {
			t.Fatalf("request over the bound: %v, want errBusy", err)
		}
		block <- struct{}{}
		synctest.Wait()
		if err := m.goRequest(func(context.Context) { <-block }); err != nil {
			t.Fatalf("request after a slot freed: %v", err)
		}
		close(block)
		m.tasks.Wait()
	})
}
