package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// countingStates records the size of every UpdateStates call; with refuse
// set, a batch of more than one update fails whole, as a full disk or a
// lost file would make it.
type countingStates struct {
	Store
	refuse bool

	mu    sync.Mutex
	sizes []int
}

func (s *countingStates) UpdateStates(ctx context.Context, us []fleet.StateUpdate) ([]error, error) {
	s.mu.Lock()
	s.sizes = append(s.sizes, len(us))
	s.mu.Unlock()
	if s.refuse && len(us) > 1 {
		return nil, errors.New("disk I/O error")
	}
	return s.Store.UpdateStates(ctx, us)
}

// reportMessages is a skills report from each device, as the broker
// delivers them, with one of a device the registry does not know and one
// that is not a report in the middle.
func reportMessages(t *testing.T, es []*fleet.Execution) []broker.Message {
	t.Helper()
	msg := func(dev, payload string) broker.Message {
		tp, err := topic.Skills(dev)
		if err != nil {
			t.Fatal(err)
		}
		return broker.Message{Topic: tp, Payload: []byte(payload), Retain: true}
	}
	var ms []broker.Message
	for i, e := range es {
		ms = append(ms, msg(e.DeviceID, fmt.Sprintf(`{"applied_version":%d,"skills":[]}`, i+1)))
		if i == len(es)/2 {
			ms = append(ms, msg("nobody", `{"applied_version":1,"skills":[]}`), msg(e.DeviceID, `[]`))
		}
	}
	return ms
}

// wantApplied fails unless every device's report is stored and the device
// is queued for reconcile.
func wantApplied(t *testing.T, c *Controller, es []*fleet.Execution) {
	t.Helper()
	for i, e := range es {
		d, err := c.store.GetDevice(context.Background(), e.DeviceID)
		if err != nil {
			t.Fatal(err)
		}
		if d.AppliedVersion != int64(i+1) {
			t.Fatalf("%s: applied version %d stored, want %d", e.DeviceID, d.AppliedVersion, i+1)
		}
		c.queue.mu.Lock()
		queued := c.queue.queued[e.DeviceID]
		c.queue.mu.Unlock()
		if !queued {
			t.Fatalf("%s not queued for reconcile after its report was stored", e.DeviceID)
		}
	}
	c.queue.mu.Lock()
	defer c.queue.mu.Unlock()
	if c.queue.queued["nobody"] {
		t.Fatal("a device the registry does not know was queued")
	}
}

// TestApplyStatesBatches: reports taken together are written in
// transactions of stateBatch (a refused report does not go to the store
// and an unknown device fails alone), and each is stored and its device
// queued after.
func TestApplyStatesBatches(t *testing.T) {
	t.Parallel()
	var store *countingStates
	n := stateBatch + 10
	c, _, es := finisherEnv(t, n, func(s Store) Store { store = &countingStates{Store: s}; return store })
	c.applyStates(context.Background(), reportMessages(t, es))
	if want := []int{stateBatch, n + 1 - stateBatch}; !slices.Equal(store.sizes, want) {
		t.Fatalf("UpdateStates calls of %v updates, want %v", store.sizes, want)
	}
	wantApplied(t, c, es)
}

// TestApplyStatesRefusedBatch: a batch the store refuses whole is written
// one report at a time, so each report still has its own outcome and none
// is lost because the batch failed.
func TestApplyStatesRefusedBatch(t *testing.T) {
	t.Parallel()
	var store *countingStates
	n := 20
	c, _, es := finisherEnv(t, n, func(s Store) Store { store = &countingStates{Store: s, refuse: true}; return store })
	c.applyStates(context.Background(), reportMessages(t, es))
	if len(store.sizes) != n+2 || store.sizes[0] != n+1 {
		t.Fatalf("UpdateStates calls of %v updates, want one of %d then %d of one", store.sizes, n+1, n+1)
	}
	wantApplied(t, c, es)
}

// TestApplyStatesKeepsOrder: a birth between reports writes the batch
// before it first, so the store sees the messages in the order take gave
// them: the reports before the birth, the birth, then the report after.
func TestApplyStatesKeepsOrder(t *testing.T) {
	t.Parallel()
	var store *countingStates
	c, db, es := finisherEnv(t, 3, func(s Store) Store { store = &countingStates{Store: s}; return store })
	var ms []broker.Message
	for _, m := range reportMessages(t, es) {
		if p := string(m.Payload); p != "[]" && !strings.Contains(m.Topic, "/nobody/") {
			ms = append(ms, m)
		}
	}
	bt, err := topic.Birth(es[0].DeviceID)
	if err != nil {
		t.Fatal(err)
	}
	birth := broker.Message{Topic: bt, Payload: []byte(`{"session":4,"agent_version":"9.9"}`), Retain: true}
	ms = slices.Insert(ms, 2, birth) // after es[0]'s and es[1]'s reports, before es[2]'s
	c.applyStates(context.Background(), ms)
	if want := []int{2, 1}; !slices.Equal(store.sizes, want) {
		t.Fatalf("UpdateStates calls of %v updates around the birth, want %v", store.sizes, want)
	}
	d, err := db.GetDevice(context.Background(), es[0].DeviceID)
	if err != nil || d.AgentVersion != "9.9" || d.BirthSession != 4 {
		t.Fatalf("after the birth: %+v, %v", d, err)
	}
	wantApplied(t, c, es)
}
