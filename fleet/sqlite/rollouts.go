package sqlite

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/chorus-edge/chorus/fleet"
)

const (
	rolloutColumns = `id, skill_id, version, action, targets, canary, max_in_flight, failure_threshold_pct,
		min_executed, timeout_ns, deadline_ns, rate_per_min, ramp_base_per_min, ramp_every_ns, state, reason, created_by, created_at, updated_at, started_at, finished_at FROM rollouts`
	executionColumns = `rollout_id, device_id, state, reason, canary, attempts, superseded_by,
		queued_at, started_at, finished_at, updated_at FROM executions`
	activeStates = `('queued', 'in_progress')`
)

// CreateRollout stores r in state queued with one queued execution per
// targeted device and returns the executions (see fleet.RolloutService).
// An install names the version it pins: r.Version "" becomes the latest.
func (db *DB) CreateRollout(ctx context.Context, r *fleet.Rollout) ([]*fleet.Execution, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	var execs []*fleet.Execution
	err := db.write(ctx, func(tx *tx) error {
		if r.Action == fleet.RolloutInstall {
			v, err := resolveVersion(ctx, tx, r.SkillID, r.Version)
			if err != nil {
				return err
			}
			r.Version = v.Version
		}
		devices, err := resolveTargets(ctx, tx, r.Targets)
		if err != nil {
			return err
		}
		if len(devices) == 0 {
			return fleet.Errorf(fleet.EINVALID, "%s %s: the target matches no device", r.Action, r.SkillID)
		}
		if err := insertRollout(ctx, tx, r); err != nil {
			return err
		}
		if err := supersede(ctx, tx, r, devices); err != nil {
			return err
		}
		execs, err = insertExecutions(ctx, tx, r, devices)
		return err
	})
	if err != nil {
		return nil, err
	}
	return execs, nil
}

type targetDevice struct {
	id     string
	online bool
}

// resolveTargets returns the union of the devices the targets select,
// online devices first, then by id: the order canaries are picked in.
func resolveTargets(ctx context.Context, tx *tx, targets []fleet.Target) ([]targetDevice, error) {
	seen := map[string]bool{}
	var out []targetDevice
	scan := func(s scanner) (d targetDevice, err error) { return d, s.Scan(&d.id, &d.online) }
	for _, t := range targets {
		var q string
		var args []any
		switch t.Kind {
		case fleet.TargetDevice:
			if err := deviceExists(ctx, tx, t.Value); err != nil {
				return nil, err
			}
			q, args = `SELECT id, online FROM devices WHERE id = ?`, []any{t.Value}
		case fleet.TargetTag:
			q, args = `SELECT id, online FROM devices WHERE id IN (SELECT device_id FROM device_tags WHERE tag = ?)`, []any{t.Value}
		default:
			q = `SELECT id, online FROM devices`
		}
		ds, err := queryAll(ctx, tx, scan, q, args...)
		if err != nil {
			return nil, err
		}
		for _, d := range ds {
			if !seen[d.id] {
				seen[d.id] = true
				out = append(out, d)
			}
		}
	}
	slices.SortFunc(out, func(a, b targetDevice) int {
		if a.online != b.online {
			if a.online {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.id, b.id)
	})
	return out, nil
}

func insertRollout(ctx context.Context, tx *tx, r *fleet.Rollout) error {
	targets, err := jsonText(r.Targets)
	if err != nil {
		return err
	}
	r.State, r.Reason = fleet.RolloutQueued, ""
	r.CreatedAt, r.UpdatedAt, r.StartedAt, r.FinishedAt = tx.now, tx.now, time.Time{}, time.Time{}
	return tx.QueryRowContext(ctx, `INSERT INTO rollouts (skill_id, version, action, targets, canary, max_in_flight,
		failure_threshold_pct, min_executed, timeout_ns, deadline_ns, rate_per_min, ramp_base_per_min, ramp_every_ns,
		state, created_by, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		r.SkillID, r.Version, r.Action, targets, r.Canary, r.MaxInFlight, r.FailureThresholdPct, r.MinExecuted,
		int64(r.Timeout), int64(r.Deadline), r.RatePerMin, r.RampBasePerMin, int64(r.RampEvery), r.State, r.CreatedBy, encTime(tx.now), encTime(tx.now)).Scan(&r.ID)
}

// supersede cancels the unfinished executions of older rollouts of the same
// skill on the devices r takes over (fleet-anchors §9: a newer desired state
// supersedes a stuck execution instead of queueing behind it).
func supersede(ctx context.Context, tx *tx, r *fleet.Rollout, devices []targetDevice) error {
	old, err := queryAll(ctx, tx, scanExecution, `SELECT `+executionColumns+`
		WHERE state IN `+activeStates+` AND rollout_id IN (SELECT id FROM rollouts WHERE skill_id = ? AND id < ?)`,
		r.SkillID, r.ID)
	if err != nil {
		return err
	}
	taken := make(map[string]bool, len(devices))
	for _, d := range devices {
		taken[d.id] = true
	}
	for _, e := range old {
		if taken[e.DeviceID] {
			if err := transition(ctx, tx, e, fleet.ExecCanceled, fleet.ReasonSuperseded, r.ID); err != nil {
				return err
			}
		}
	}
	return nil
}

func insertExecutions(ctx context.Context, tx *tx, r *fleet.Rollout, devices []targetDevice) ([]*fleet.Execution, error) {
	execs := make([]*fleet.Execution, len(devices))
	for i, d := range devices {
		e := &fleet.Execution{RolloutID: r.ID, DeviceID: d.id, State: fleet.ExecQueued, Canary: i < r.Canary,
			QueuedAt: tx.now, UpdatedAt: tx.now}
		_, err := tx.ExecContext(ctx, `INSERT INTO executions (rollout_id, device_id, state, canary, queued_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?)`, e.RolloutID, e.DeviceID, e.State, e.Canary, encTime(tx.now), encTime(tx.now))
		if err != nil {
			return nil, err
		}
		execs[i] = e
	}
	r.Counts = map[fleet.ExecState]int{fleet.ExecQueued: len(execs)}
	return execs, nil
}

// GetRollout returns one rollout with its execution counts.
func (db *DB) GetRollout(ctx context.Context, id int64) (*fleet.Rollout, error) {
	var r *fleet.Rollout
	err := db.read(ctx, func(tx *tx) (err error) {
		r, err = getRollout(ctx, tx, id)
		return err
	})
	return r, err
}

// ListRollouts returns the rollouts f selects, newest first, with counts.
func (db *DB) ListRollouts(ctx context.Context, f fleet.RolloutFilter) ([]*fleet.Rollout, error) {
	var where []string
	var args []any
	if f.SkillID != "" {
		if err := fleet.ValidSkillID(f.SkillID); err != nil {
			return nil, err
		}
		where, args = append(where, `skill_id = ?`), append(args, f.SkillID)
	}
	if len(f.States) > 0 {
		where = append(where, `state IN (`+placeholders(len(f.States))+`)`)
		for _, s := range f.States {
			args = append(args, s)
		}
	}
	q := `SELECT ` + rolloutColumns + whereClause(where) + ` ORDER BY id DESC` + limitClause
	args = append(args, limitArg(f.Limit))
	var out []*fleet.Rollout
	err := db.read(ctx, func(tx *tx) (err error) {
		if out, err = queryAll(ctx, tx, scanRollout, q, args...); err != nil {
			return err
		}
		for _, r := range out {
			if r.Counts, err = executionCounts(ctx, tx, r.ID); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// UpdateRolloutState moves a rollout to another state if its state machine
// allows it (ErrInvalid otherwise) and, with from set, only from that state
// (ECONFLICT otherwise). Aborting or canceling it cancels its unfinished
// executions in the same transaction.
func (db *DB) UpdateRolloutState(ctx context.Context, id int64, from, to fleet.RolloutState, reason string) (*fleet.Rollout, error) {
	var r *fleet.Rollout
	err := db.write(ctx, func(tx *tx) (err error) {
		if r, err = getRollout(ctx, tx, id); err != nil {
			return err
		}
		if from != "" && r.State != from {
			return fleet.Errorf(fleet.ECONFLICT, "rollout %d is %s, no longer %s: it changed meanwhile", id, r.State, from)
		}
		if !r.State.CanTransition(to) {
			return fleet.Errorf(fleet.EINVALID, "rollout %d is %s: it cannot become %s", id, r.State, to)
		}
		if err := setRolloutState(ctx, tx, r, to, reason); err != nil {
			return err
		}
		if to == fleet.RolloutAborted || to == fleet.RolloutCanceled {
			why := fleet.ReasonRolloutAborted
			if to == fleet.RolloutCanceled {
				why = fleet.ReasonRolloutCancel
			}
			if err := cancelActive(ctx, tx, why, `rollout_id = ?`, id); err != nil {
				return err
			}
		}
		r.Counts, err = executionCounts(ctx, tx, id)
		return err
	})
	return r, err
}

func setRolloutState(ctx context.Context, tx *tx, r *fleet.Rollout, to fleet.RolloutState, reason string) error {
	r.State, r.Reason, r.UpdatedAt = to, reason, tx.now
	if to == fleet.RolloutInProgress && r.StartedAt.IsZero() {
		r.StartedAt = tx.now
	}
	if to.Terminal() {
		r.FinishedAt = tx.now
	}
	_, err := tx.ExecContext(ctx, `UPDATE rollouts SET state = ?, reason = ?, updated_at = ?, started_at = ?, finished_at = ?
		WHERE id = ?`, r.State, r.Reason, encTime(tx.now), encTime(r.StartedAt), encTime(r.FinishedAt), r.ID)
	return err
}

func getRollout(ctx context.Context, tx *tx, id int64) (*fleet.Rollout, error) {
	r, err := scanRollout(tx.QueryRowContext(ctx, `SELECT `+rolloutColumns+` WHERE id = ?`, id))
	if err != nil {
		return nil, notFoundOr(err, "rollout %d not found", id)
	}
	r.Counts, err = executionCounts(ctx, tx, id)
	return r, err
}

func executionCounts(ctx context.Context, tx *tx, id int64) (map[fleet.ExecState]int, error) {
	type count struct {
		state fleet.ExecState
		n     int
	}
	cs, err := queryAll(ctx, tx, func(s scanner) (c count, err error) { return c, s.Scan(&c.state, &c.n) },
		`SELECT state, count(*) FROM executions WHERE rollout_id = ? GROUP BY state`, id)
	out := make(map[fleet.ExecState]int, len(cs))
	for _, c := range cs {
		out[c.state] = c.n
	}
	return out, err
}

func scanRollout(s scanner) (*fleet.Rollout, error) {
	var (
		r                                   fleet.Rollout
		targets                             string
		timeout, deadline, rampEvery        int64
		created, updated, started, finished int64
	)
	err := s.Scan(&r.ID, &r.SkillID, &r.Version, &r.Action, &targets, &r.Canary, &r.MaxInFlight,
		&r.FailureThresholdPct, &r.MinExecuted, &timeout, &deadline, &r.RatePerMin, &r.RampBasePerMin, &rampEvery, &r.State, &r.Reason, &r.CreatedBy,
		&created, &updated, &started, &finished)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(targets), &r.Targets); err != nil {
		return nil, err
	}
	r.Timeout, r.Deadline, r.RampEvery = time.Duration(timeout), time.Duration(deadline), time.Duration(rampEvery)
	r.CreatedAt, r.UpdatedAt, r.StartedAt, r.FinishedAt = decTime(created), decTime(updated), decTime(started), decTime(finished)
	return &r, nil
}
