package controller

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/sqlite"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// nopBroker is a Broker the finisher never uses.
type nopBroker struct{}

func (nopBroker) Publish(broker.Message) error { return errors.New("nopBroker: no publishing here") }
func (nopBroker) Subscribe(string, func(broker.Message)) (func(), error) {
	return nil, errors.New("nopBroker: no subscribing here")
}
func (nopBroker) SetTable(*broker.Table) {}

// failingMoves is a store whose batched transitions fail whole, as a full
// disk or a lost file would make them.
type failingMoves struct{ Store }

func (failingMoves) TransitionExecutions(context.Context, []fleet.ExecMove) ([]error, error) {
	return nil, errors.New("disk I/O error")
}

// finisherEnv is a controller that was not started (no broker traffic, no
// workers) over a real store with a rollout of n devices whose executions
// are all in progress.
func finisherEnv(t testing.TB, n int, wrap func(Store) Store) (*Controller, *sqlite.DB, []*fleet.Execution) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "fleet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.PublishVersion(ctx, &fleet.SkillVersion{SkillID: "weather", Version: "1.0.0", Title: "weather",
		SHA256: fmt.Sprintf("%064x", 1), Size: 1000, Manifest: []byte(`{"name":"weather"}`)}); err != nil {
		t.Fatal(err)
	}
	r := &fleet.Rollout{SkillID: "weather", Action: fleet.RolloutInstall}
	for i := range n {
		id := fmt.Sprintf("pi-%04d", i)
		d := &fleet.Device{ID: id, SecretHash: "sha256:" + id, SkillKey: ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public().(ed25519.PublicKey)}
		if err := db.CreateDevice(ctx, d); err != nil {
			t.Fatal(err)
		}
		r.Targets = append(r.Targets, fleet.DeviceTarget(id))
	}
	if _, err := db.CreateRollout(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := db.UpdateRolloutState(ctx, r.ID, "", fleet.RolloutInProgress, ""); err != nil {
		t.Fatal(err)
	}
	var es []*fleet.Execution
	for _, tg := range r.Targets {
		e, err := db.TransitionExecution(ctx, r.ID, tg.Value, fleet.ExecInProgress, "")
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	var store Store = db
	if wrap != nil {
		store = wrap(db)
	}
	c, err := New(Config{Store: store, Broker: nopBroker{}, ArtifactDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	t.Cleanup(c.cancel)
	return c, db, es
}

func countIn(t *testing.T, db *sqlite.DB, s fleet.ExecState) int {
	t.Helper()
	es, err := db.ListExecutions(context.Background(), fleet.ExecutionFilter{States: []fleet.ExecState{s}})
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// TestFinisherCloseWritesEveryVerdict: verdicts queued faster than one batch
// takes them, then the finisher stopped at once (as Close does while batches
// are still waiting): every one is in the store when stopFinisher returns,
// and nothing is left marked pending.
func TestFinisherCloseWritesEveryVerdict(t *testing.T) {
	t.Parallel()
	n := 2*finishBatch + 10 // at least three batches
	c, db, es := finisherEnv(t, n+1, nil)
	last := es[n] // judged after the finisher stopped
	c.startFinisher()
	for _, e := range es[:n] {
		c.pubMu.Lock()
		c.startVer[execKey{e.RolloutID, e.DeviceID}] = 1
		c.pubMu.Unlock()
		if err := c.queueFinish(context.Background(), e, fleet.ExecSucceeded, ""); err != nil {
			t.Fatalf("verdict of %s: %v", e.DeviceID, err)
		}
	}
	c.stopFinisher()
	if got := countIn(t, db, fleet.ExecSucceeded); got != n {
		t.Fatalf("%d executions succeeded after the finisher stopped, want %d", got, n)
	}
	if len(c.pendingFinish) != 0 || len(c.startVer) != 0 {
		t.Fatalf("left behind: %d pending, %d start versions", len(c.pendingFinish), len(c.startVer))
	}
	c.stopFinisher() // idempotent
	// Without a finisher (a Reconcile outside Start…Close) a verdict is
	// written before queueFinish returns.
	if err := c.queueFinish(context.Background(), last, fleet.ExecSucceeded, ""); err != nil {
		t.Fatalf("verdict without a finisher: %v", err)
	}
	if e, err := db.GetExecution(context.Background(), last.RolloutID, last.DeviceID); err != nil || e.State != fleet.ExecSucceeded {
		t.Fatalf("verdict without a finisher: %+v, %v; want it written at once", e, err)
	}
}

// TestFinisherQueueOnce: a second verdict of an execution whose first is
// queued is not queued (it could say something else), and a verdict that
// cannot be queued before its pass's context ends is forgotten and fails
// the pass, so the device is judged again after a backoff.
func TestFinisherQueueOnce(t *testing.T) {
	t.Parallel()
	c, _, es := finisherEnv(t, 3, nil)
	// A finisher that takes nothing: a queue of two, open.
	c.verdicts, c.finOpen = make(chan verdictMsg, 2), true
	ctx := context.Background()
	if err := c.queueFinish(ctx, es[0], fleet.ExecSucceeded, ""); err != nil || len(c.verdicts) != 1 {
		t.Fatalf("first verdict: %v, %d queued", err, len(c.verdicts))
	}
	if err := c.queueFinish(ctx, es[0], fleet.ExecFailed, "late"); err != nil || len(c.verdicts) != 1 {
		t.Fatalf("second verdict of the same execution: %v, %d queued; want it dropped", err, len(c.verdicts))
	}
	if !c.finishPending(es[0]) || c.finishPending(es[1]) {
		t.Fatal("pending marks wrong")
	}
	if err := c.queueFinish(ctx, es[1], fleet.ExecSucceeded, ""); err != nil || len(c.verdicts) != 2 {
		t.Fatalf("verdict of another execution: %v, %d queued", err, len(c.verdicts))
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.queueFinish(done, es[2], fleet.ExecSucceeded, ""); !errors.Is(err, context.Canceled) || c.finishPending(es[2]) {
		t.Fatalf("a verdict that found the queue full after its context ended: %v, pending %v; want the context's error and not pending",
			err, c.finishPending(es[2]))
	}
}

// TestFinisherFailedBatchJudgedAgain: a batch the store refuses whole leaves
// its executions in progress, unmarked, and their devices queued for
// another pass, which judges them again from the stored report: nothing a
// pass judged is lost to a failed write.
func TestFinisherFailedBatchJudgedAgain(t *testing.T) {
	t.Parallel()
	c, db, es := finisherEnv(t, 3, func(s Store) Store { return failingMoves{s} })
	c.startFinisher()
	for _, e := range es {
		if err := c.queueFinish(context.Background(), e, fleet.ExecSucceeded, ""); err != nil {
			t.Fatalf("verdict of %s: %v", e.DeviceID, err)
		}
	}
	c.stopFinisher()
	if got := countIn(t, db, fleet.ExecInProgress); got != len(es) {
		t.Fatalf("%d executions in progress after a failed batch, want %d", got, len(es))
	}
	if len(c.pendingFinish) != 0 {
		t.Fatalf("%d verdicts still marked pending after their batch failed", len(c.pendingFinish))
	}
	// Queued again after a delay (refusedDelay), not at once: a store that
	// keeps refusing is not hammered.
	want := []string{es[0].DeviceID, es[1].DeviceID, es[2].DeviceID}
	queued := func() []string {
		c.queue.mu.Lock()
		defer c.queue.mu.Unlock()
		q := slices.Clone(c.queue.items)
		slices.Sort(q)
		return q
	}
	if q := queued(); len(q) != 0 {
		t.Fatalf("queued at once after a failed batch: %v, want after a delay", q)
	}
	poll.Until(t, "the failed batch's devices queued for another pass", 10*time.Second, func() bool { return slices.Equal(queued(), want) })
}

func TestRefusedDelayGrows(t *testing.T) {
	t.Parallel()
	if refusedDelay(0) != 500*time.Millisecond || refusedDelay(1) != time.Second || refusedDelay(100) != 30*time.Second {
		t.Errorf("refusedDelay 0, 1, 100 = %s, %s, %s; want 500ms, 1s, 30s", refusedDelay(0), refusedDelay(1), refusedDelay(100))
	}
}

// TestTimeoutSparesAQueuedVerdict: the engine's timeout skips an execution
// whose verdict is queued, so a success judged before the deadline is not
// overwritten with timed_out before the finisher writes it; an overdue
// execution without a verdict times out in the same pass.
func TestTimeoutSparesAQueuedVerdict(t *testing.T) {
	t.Parallel()
	c, db, es := finisherEnv(t, 2, nil)
	ctx := context.Background()
	r, err := db.GetRollout(ctx, es[0].RolloutID)
	if err != nil {
		t.Fatal(err)
	}
	r.Timeout = time.Minute
	// The engine saw both in progress two minutes ago (monotonic): both
	// overdue.
	for _, e := range es {
		c.inProgress[execKey{e.RolloutID, e.DeviceID}] = progress{seen: time.Now().Add(-2 * time.Minute)}
	}
	// A finisher that takes nothing yet: es[0]'s success waits in the queue.
	c.verdicts, c.finOpen = make(chan verdictMsg, 2), true
	if err := c.queueFinish(ctx, es[0], fleet.ExecSucceeded, ""); err != nil {
		t.Fatal(err)
	}
	n := tally{fleet.ExecInProgress: 2}
	if err := c.timeOut(ctx, r, n, nil); err != nil {
		t.Fatal(err)
	}
	if n[fleet.ExecInProgress] != 1 || n[fleet.ExecTimedOut] != 1 {
		t.Fatalf("tally after the pass: %v, want one in progress (the queued success) and one timed out", n)
	}
	for i, want := range []fleet.ExecState{fleet.ExecInProgress, fleet.ExecTimedOut} {
		e, err := db.GetExecution(ctx, es[i].RolloutID, es[i].DeviceID)
		if err != nil || e.State != want {
			t.Fatalf("%s: %+v, %v; want %s", es[i].DeviceID, e, err, want)
		}
	}
	if m := <-c.verdicts; m.e.DeviceID != es[0].DeviceID || m.to != fleet.ExecSucceeded {
		t.Fatalf("queued verdict %s %s, want %s succeeded", m.e.DeviceID, m.to, es[0].DeviceID)
	}
}
