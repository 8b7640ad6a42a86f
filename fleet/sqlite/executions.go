package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/chorus-edge/chorus/fleet"
)

// GetExecution returns one device's execution of a rollout.
func (db *DB) GetExecution(ctx context.Context, rolloutID int64, deviceID string) (*fleet.Execution, error) {
	if err := fleet.ValidDeviceID(deviceID); err != nil {
		return nil, err
	}
	var e *fleet.Execution
	err := db.read(ctx, func(tx *tx) (err error) {
		e, err = getExecution(ctx, tx, rolloutID, deviceID)
		return err
	})
	return e, err
}

// ListExecutions returns the executions f selects, by rollout, canaries
// first, then by device id.
func (db *DB) ListExecutions(ctx context.Context, f fleet.ExecutionFilter) ([]*fleet.Execution, error) {
	var where []string
	var args []any
	if f.RolloutID != 0 {
		where, args = append(where, `rollout_id = ?`), append(args, f.RolloutID)
	}
	if f.DeviceID != "" {
		if err := fleet.ValidDeviceID(f.DeviceID); err != nil {
			return nil, err
		}
		where, args = append(where, `device_id = ?`), append(args, f.DeviceID)
	}
	if len(f.States) > 0 {
		where = append(where, `state IN (`+placeholders(len(f.States))+`)`)
		for _, s := range f.States {
			args = append(args, s)
		}
	}
	from := ``
	if f.DeviceID != "" {
		// One device's executions: without this SQLite may walk
		// executions_state (state, rollout_id) for the ORDER BY and filter
		// every execution in that state by device, once per report.
		from = ` INDEXED BY executions_device`
	}
	q := `SELECT ` + executionColumns + from + whereClause(where) + ` ORDER BY rollout_id, canary DESC, device_id` + limitClause
	args = append(args, limitArg(f.Limit))
	// One device's in-progress executions, judge's question on every
	// report, are kept in memory (devicecache.go).
	running := f.DeviceID != "" && f.RolloutID == 0 && f.Limit == 0 &&
		slices.Equal(f.States, []fleet.ExecState{fleet.ExecInProgress})
	var seq uint64
	if running {
		es, s, ok := db.running.get(f.DeviceID)
		if ok {
			return es, nil
		}
		seq = s
	}
	var out []*fleet.Execution
	err := db.read(ctx, func(tx *tx) (err error) {
		out, err = queryAll(ctx, tx, scanExecution, q, args...)
		return err
	})
	if err == nil && running {
		db.running.put(f.DeviceID, out, seq, db.writes.Load()) // after the read (devicecache.go)
	}
	return out, err
}

// TransitionExecution moves one execution to another state if the state
// machine allows it; starting one (→ in_progress) also needs its rollout in
// progress. Illegal moves are ErrInvalid and change nothing.
func (db *DB) TransitionExecution(ctx context.Context, rolloutID int64, deviceID string, to fleet.ExecState, reason string) (*fleet.Execution, error) {
	if err := fleet.ValidDeviceID(deviceID); err != nil {
		return nil, err
	}
	var e *fleet.Execution
	err := db.write(ctx, func(tx *tx) (err error) {
		e, err = transitionExecution(ctx, tx, rolloutID, deviceID, to, reason, nil)
		return err
	})
	return e, err
}

// TransitionExecutions applies moves in one write transaction
// (fleet.RolloutService): one commit for a batch of judged executions
// instead of one each, which was a quarter of the store's write time in a
// 1,000-device install (docs/benchmarks.md, issue 19). A refused move is
// found before it writes anything (transitionExecution checks before its
// UPDATE), so it fails alone and the others commit.
func (db *DB) TransitionExecutions(ctx context.Context, moves []fleet.ExecMove) ([]error, error) {
	for _, m := range moves {
		if err := fleet.ValidDeviceID(m.DeviceID); err != nil {
			return nil, err
		}
	}
	var out []error
	err := db.write(ctx, func(tx *tx) error {
		out = make([]error, len(moves))
		for i, m := range moves {
			_, err := transitionExecution(ctx, tx, m.RolloutID, m.DeviceID, m.To, m.Reason, nil)
			switch fleet.ErrorCode(err) {
			case "":
			case fleet.EINVALID, fleet.ENOTFOUND:
				out[i] = err
			default:
				return fmt.Errorf("move rollout %d on %s to %s: %w", m.RolloutID, m.DeviceID, m.To, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// transitionExecution is TransitionExecution in tx; a batch b
// (StartExecutions; nil otherwise) reads each rollout's state once for all
// its starts.
func transitionExecution(ctx context.Context, tx *tx, rolloutID int64, deviceID string, to fleet.ExecState, reason string, b *startBatch) (*fleet.Execution, error) {
	e, err := getExecution(ctx, tx, rolloutID, deviceID)
	if err != nil {
		return nil, err
	}
	if to == fleet.ExecInProgress {
		state, err := b.rolloutState(ctx, tx, rolloutID)
		if err != nil {
			return nil, err
		}
		if state != fleet.RolloutInProgress {
			return nil, fleet.Errorf(fleet.EINVALID, "rollout %d is %s: executions start only while it is in progress", rolloutID, state)
		}
	}
	return e, transition(ctx, tx, e, to, reason, 0)
}

// StartExecutions starts executions in one transaction (fleet.RolloutService):
// one commit for a batch instead of three per execution (put the assignment,
// store the document, move the execution), which were a third of the
// engine's time in a 1,000-device install (docs/benchmarks.md, issue 19).
func (db *DB) StartExecutions(ctx context.Context, starts []fleet.ExecStart) ([]fleet.ExecStarted, error) {
	settings := make([]json.RawMessage, len(starts))
	for i, s := range starts {
		a := s.Assignment
		if a == nil || a.Target.Kind != fleet.TargetDevice {
			return nil, fleet.Errorf(fleet.EINVALID, "start %d: want a device assignment", i)
		}
		if err := a.Validate(); err != nil {
			return nil, err
		}
		var err error
		if settings[i], err = compactJSON(a.Settings); err != nil {
			return nil, err
		}
	}
	var (
		out []fleet.ExecStarted
		seq uint64 // the cache's sequence once every document is computed
	)
	err := db.write(ctx, func(tx *tx) error {
		out = make([]fleet.ExecStarted, len(starts))
		b := &startBatch{}
		for i, s := range starts {
			r, err := startExecution(ctx, tx, s, settings[i], b)
			if err != nil {
				return fmt.Errorf("start rollout %d on %s: %w", s.RolloutID, s.Assignment.Target.Value, err)
			}
			out[i] = r
		}
		if err := b.storeCounters(ctx, tx); err != nil {
			return fmt.Errorf("start executions: %w", err)
		}
		seq = db.desired.sequence()
		return nil
	})
	for i, s := range starts {
		dev := s.Assignment.Target.Value
		if err != nil || out[i].Err != nil {
			db.desired.drop(dev) // nothing committed for it; dropping is harmless
			continue
		}
		db.desired.replace(dev, out[i].Desired, seq)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// startExecution is one start of StartExecutions in tx. A device, skill or
// version that is gone is the start's Err, found before anything is written.
func startExecution(ctx context.Context, tx *tx, s fleet.ExecStart, settings json.RawMessage, b *startBatch) (fleet.ExecStarted, error) {
	a := s.Assignment
	err := putAssignment(ctx, tx, a, settings, s.KeepSettings, b)
	if fleet.ErrorCode(err) == fleet.ENOTFOUND {
		return fleet.ExecStarted{Err: err}, nil
	}
	if err != nil {
		return fleet.ExecStarted{}, err
	}
	c, err := computeDesired(ctx, tx, a.Target.Value)
	if err != nil {
		return fleet.ExecStarted{}, err
	}
	if !c.unchanged() {
		if err := storeDesired(ctx, tx, a.Target.Value, &c, b); err != nil {
			return fleet.ExecStarted{}, err
		}
	}
	e, err := transitionExecution(ctx, tx, s.RolloutID, a.Target.Value, fleet.ExecInProgress, "", b)
	if err != nil {
		return fleet.ExecStarted{}, err
	}
	return fleet.ExecStarted{Execution: e, Desired: c.doc}, nil
}

// startBatch is what one StartExecutions transaction has read once for
// all its starts: the skill versions found and the rollouts' states. The
// batch's statements neither delete a version nor change a rollout's
// state (they write assignments, desired documents and executions), so
// an answer stays true until the transaction ends; a nil batch reads
// every time. It holds a few entries per batch, never one per device.
type startBatch struct {
	versions []skillVersionKey            // versions resolveVersion found
	rollouts map[int64]fleet.RolloutState // rollouts' states
	counters []batchCounter               // counters taken from; written back by storeCounters
}

// batchCounter is a counter a batch numbers from: its first number is
// taken with nextCounter (which writes it), the next ones are counted here
// and the last is written by storeCounters before the transaction commits,
// so the counters table ends as if every number had been taken there.
type batchCounter struct {
	name      string
	last      int64
	unwritten bool
}

// nextCounter is nextCounter for a batch: one statement per counter and
// batch instead of one per number (a nil batch takes each in the table).
func (b *startBatch) nextCounter(ctx context.Context, tx *tx, name string) (int64, error) {
	if b == nil {
		return nextCounter(ctx, tx, name)
	}
	for i := range b.counters {
		if c := &b.counters[i]; c.name == name {
			c.last++
			c.unwritten = true
			return c.last, nil
		}
	}
	v, err := nextCounter(ctx, tx, name)
	if err != nil {
		return 0, err
	}
	b.counters = append(b.counters, batchCounter{name: name, last: v})
	return v, nil
}

// storeCounters writes the batch's last numbers back to the counters
// table; StartExecutions calls it before the transaction commits.
func (b *startBatch) storeCounters(ctx context.Context, tx *tx) error {
	for _, c := range b.counters {
		if !c.unwritten {
			continue
		}
		if _, err := tx.ExecContext(ctx, `UPDATE counters SET value = ? WHERE name = ?`, c.last, c.name); err != nil {
			return fmt.Errorf("counter %s: %w", c.name, err)
		}
	}
	return nil
}

type skillVersionKey struct{ skill, version string }

// versionExists is resolveVersion's check that the version (or, for "",
// some version) of skill exists, asked once per batch.
func (b *startBatch) versionExists(ctx context.Context, tx *tx, skill, version string) error {
	k := skillVersionKey{skill, version}
	if b != nil && slices.Contains(b.versions, k) {
		return nil
	}
	if _, err := resolveVersion(ctx, tx, skill, version); err != nil {
		return err // not found is not remembered: the start's own Err
	}
	if b != nil {
		b.versions = append(b.versions, k)
	}
	return nil
}

// rolloutState reads rollout id's state, once per batch.
func (b *startBatch) rolloutState(ctx context.Context, tx *tx, id int64) (fleet.RolloutState, error) {
	if b != nil {
		if st, ok := b.rollouts[id]; ok {
			return st, nil
		}
	}
	var state fleet.RolloutState
	if err := tx.QueryRowContext(ctx, `SELECT state FROM rollouts WHERE id = ?`, id).Scan(&state); err != nil {
		return "", err
	}
	if b != nil {
		if b.rollouts == nil {
			b.rollouts = map[int64]fleet.RolloutState{}
		}
		b.rollouts[id] = state
	}
	return state, nil
}

// transition applies one guarded execution state change and records it in
// the audit log.
func transition(ctx context.Context, tx *tx, e *fleet.Execution, to fleet.ExecState, reason string, supersededBy int64) error {
	if !e.State.CanTransition(to) {
		return fleet.Errorf(fleet.EINVALID, "execution of rollout %d on %s is %s: it cannot become %s", e.RolloutID, e.DeviceID, e.State, to)
	}
	from := e.State
	e.State, e.Reason, e.UpdatedAt = to, reason, tx.now
	switch {
	case to == fleet.ExecInProgress:
		e.Attempts++
		e.StartedAt = tx.now
	case to.Terminal():
		e.FinishedAt = tx.now
	}
	if supersededBy != 0 {
		e.SupersededBy = supersededBy
	}
	_, err := tx.ExecContext(ctx, `UPDATE executions SET state = ?, reason = ?, attempts = ?, superseded_by = ?,
		started_at = ?, finished_at = ?, updated_at = ? WHERE rollout_id = ? AND device_id = ?`,
		e.State, e.Reason, e.Attempts, e.SupersededBy, encTime(e.StartedAt), encTime(e.FinishedAt), encTime(tx.now),
		e.RolloutID, e.DeviceID)
	if err != nil {
		return err
	}
	if from == fleet.ExecInProgress || to == fleet.ExecInProgress {
		tx.runningChanged(*e) // as scanExecution reads it back: tx.now is UTC, without a monotonic reading
	}
	// The rollout changed too: its updated_at (`rollout list` UPDATED)
	// moves with every execution that starts or finishes (issue 16 §8).
	// Once per rollout and transaction: every statement of tx sets it to
	// tx.now, so a batch's second move of a rollout would write the same value.
	if tx.touchRollout(e.RolloutID) {
		if _, err := tx.ExecContext(ctx, `UPDATE rollouts SET updated_at = ? WHERE id = ?`, encTime(tx.now), e.RolloutID); err != nil {
			return err
		}
	}
	detail, err := json.Marshal(transitionDetail{From: from, Reason: reason, To: to})
	if err != nil {
		return err
	}
	return appendAudit(ctx, tx, &fleet.AuditEntry{Actor: fleet.ActorController, Action: "execution." + string(to),
		Subject: fmt.Sprintf("rollout/%d/%s", e.RolloutID, e.DeviceID), Detail: detail})
}

// transitionDetail is the audit detail of a transition: the bytes the
// map {"from", "reason", "to"} it replaces encoded to (fields in key
// order), without a map per transition.
type transitionDetail struct {
	From   fleet.ExecState `json:"from"`
	Reason string          `json:"reason"`
	To     fleet.ExecState `json:"to"`
}

// cancelActive cancels every unfinished execution matching cond.
func cancelActive(ctx context.Context, tx *tx, reason, cond string, args ...any) error {
	es, err := queryAll(ctx, tx, scanExecution, `SELECT `+executionColumns+` WHERE state IN `+activeStates+` AND `+cond+
		` ORDER BY rollout_id, device_id`, args...)
	if err != nil {
		return err
	}
	for _, e := range es {
		if err := transition(ctx, tx, e, fleet.ExecCanceled, reason, 0); err != nil {
			return err
		}
	}
	return nil
}

func cancelDeviceExecutions(ctx context.Context, tx *tx, deviceID string) error {
	return cancelActive(ctx, tx, fleet.ReasonDeviceRemoved, `device_id = ?`, deviceID)
}

func getExecution(ctx context.Context, tx *tx, rolloutID int64, deviceID string) (*fleet.Execution, error) {
	e, err := scanExecution(tx.QueryRowContext(ctx, `SELECT `+executionColumns+` WHERE rollout_id = ? AND device_id = ?`,
		rolloutID, deviceID))
	return e, notFoundOr(err, "rollout %d has no execution on device %q", rolloutID, deviceID)
}

func scanExecution(s scanner) (*fleet.Execution, error) {
	var (
		e                                  fleet.Execution
		queued, started, finished, updated int64
	)
	err := s.Scan(&e.RolloutID, &e.DeviceID, &e.State, &e.Reason, &e.Canary, &e.Attempts, &e.SupersededBy,
		&queued, &started, &finished, &updated)
	if err != nil {
		return nil, err
	}
	e.QueuedAt, e.StartedAt, e.FinishedAt, e.UpdatedAt = decTime(queued), decTime(started), decTime(finished), decTime(updated)
	return &e, nil
}
