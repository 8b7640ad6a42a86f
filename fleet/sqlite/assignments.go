package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"strings"

	"github.com/chorus-edge/chorus/fleet"
)

const assignmentColumns = `id, skill_id, target_kind, target_value, action, version, settings, seq, created_at, updated_at FROM assignments`

// PutAssignment creates or replaces the assignment of a.SkillID to a.Target
// and fills a's ID, Seq and times. The skill (and the version, when named)
// must be published and a device target must exist: ErrNotFound otherwise.
// Each Put takes a new Seq, so the last Put wins among equals.
func (db *DB) PutAssignment(ctx context.Context, a *fleet.Assignment) error {
	if err := a.Validate(); err != nil {
		return err
	}
	settings, err := compactJSON(a.Settings)
	if err != nil {
		return err
	}
	defer db.desired.dropTarget(a.Target) // once committed (desiredcache.go)
	return db.write(ctx, func(tx *tx) error { return putAssignment(ctx, tx, a, settings, false, nil) })
}

// putAssignment is PutAssignment in tx, with a's settings compacted; a
// batch b (StartExecutions; nil otherwise) looks each skill version up once
// for all its starts. keep (fleet.ExecStart.KeepSettings) keeps the settings
// of the assignment it replaces unless that one is an uninstall; a's
// Settings are then the ones stored.
func putAssignment(ctx context.Context, tx *tx, a *fleet.Assignment, settings json.RawMessage, keep bool, b *startBatch) error {
	if err := b.versionExists(ctx, tx, a.SkillID, a.Version); err != nil {
		return err
	}
	if a.Target.Kind == fleet.TargetDevice {
		if err := deviceExists(ctx, tx, a.Target.Value); err != nil {
			return err
		}
	}
	seq, err := b.nextCounter(ctx, tx, "assignment_seq")
	if err != nil {
		return err
	}
	var (
		created int64
		stored  sql.NullString
	)
	err = tx.QueryRowContext(ctx, `INSERT INTO assignments
		(skill_id, target_kind, target_value, action, version, settings, seq, created_at, updated_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
		ON CONFLICT (skill_id, target_kind, target_value) DO UPDATE SET
			action = excluded.action, version = excluded.version,
			settings = CASE WHEN ?10 AND assignments.action <> 'uninstall' THEN assignments.settings ELSE excluded.settings END,
			seq = excluded.seq, updated_at = excluded.updated_at
		RETURNING id, created_at, settings`,
		a.SkillID, a.Target.Kind, a.Target.Value, a.Action, a.Version, nullJSON(settings), seq,
		encTime(tx.now), encTime(tx.now), keep).Scan(&a.ID, &created, &stored)
	if err != nil {
		return err
	}
	if keep {
		settings = rawJSON(stored)
	}
	a.Settings, a.Seq, a.CreatedAt, a.UpdatedAt = settings, seq, decTime(created), tx.now
	return nil
}

// GetAssignment returns the assignment of a skill to a target.
func (db *DB) GetAssignment(ctx context.Context, skillID string, t fleet.Target) (*fleet.Assignment, error) {
	if err := validSkillTarget(skillID, t); err != nil {
		return nil, err
	}
	var a *fleet.Assignment
	err := db.read(ctx, func(tx *tx) (err error) {
		a, err = scanAssignment(tx.QueryRowContext(ctx, `SELECT `+assignmentColumns+`
			WHERE skill_id = ? AND target_kind = ? AND target_value = ?`, skillID, t.Kind, t.Value))
		return notFoundOr(err, "no assignment of %s to %s", skillID, t)
	})
	return a, err
}

// DeleteAssignment removes the assignment of a skill to a target. Devices
// it matched no longer desire the skill unless another assignment says so.
func (db *DB) DeleteAssignment(ctx context.Context, skillID string, t fleet.Target) error {
	if err := validSkillTarget(skillID, t); err != nil {
		return err
	}
	defer db.desired.dropTarget(t) // once committed (desiredcache.go)
	return db.write(ctx, func(tx *tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM assignments WHERE skill_id = ? AND target_kind = ? AND target_value = ?`,
			skillID, t.Kind, t.Value)
		return affected(res, err, "no assignment of %s to %s", skillID, t)
	})
}

// ListAssignments returns the assignments f selects, by skill, then from
// the least to the most specific target.
func (db *DB) ListAssignments(ctx context.Context, f fleet.AssignmentFilter) ([]*fleet.Assignment, error) {
	var where []string
	var args []any
	if f.SkillID != "" {
		if err := fleet.ValidSkillID(f.SkillID); err != nil {
			return nil, err
		}
		where, args = append(where, `skill_id = ?`), append(args, f.SkillID)
	}
	if f.Target != nil {
		if err := f.Target.Validate(); err != nil {
			return nil, err
		}
		where, args = append(where, `target_kind = ? AND target_value = ?`), append(args, f.Target.Kind, f.Target.Value)
	}
	q := `SELECT ` + assignmentColumns
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY skill_id, CASE target_kind WHEN 'all' THEN 0 WHEN 'tag' THEN 1 ELSE 2 END, target_value`
	var out []*fleet.Assignment
	err := db.read(ctx, func(tx *tx) (err error) {
		out, err = queryAll(ctx, tx, scanAssignment, q, args...)
		return err
	})
	return out, err
}

func scanAssignment(s scanner) (*fleet.Assignment, error) {
	var (
		a                fleet.Assignment
		settings         sql.NullString
		created, updated int64
	)
	err := s.Scan(&a.ID, &a.SkillID, &a.Target.Kind, &a.Target.Value, &a.Action, &a.Version, &settings,
		&a.Seq, &created, &updated)
	if err != nil {
		return nil, err
	}
	a.Settings, a.CreatedAt, a.UpdatedAt = rawJSON(settings), decTime(created), decTime(updated)
	return &a, nil
}

func validSkillTarget(skillID string, t fleet.Target) error {
	if err := fleet.ValidSkillID(skillID); err != nil {
		return err
	}
	return t.Validate()
}

func deviceExists(ctx context.Context, tx *tx, id string) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM devices WHERE id = ?`, id).Scan(&one)
	return notFoundOr(err, "device %q not found", id)
}

// nextCounter increments and returns a named gateway-wide counter.
func nextCounter(ctx context.Context, tx *tx, name string) (int64, error) {
	var v int64
	err := tx.QueryRowContext(ctx, `INSERT INTO counters (name, value) VALUES (?, 1)
		ON CONFLICT (name) DO UPDATE SET value = value + 1 RETURNING value`, name).Scan(&v)
	return v, err
}

// compactJSON stores JSON without insignificant whitespace, so equal
// settings compare equal byte for byte.
func compactJSON(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, fleet.Errorf(fleet.EINVALID, "settings: %v", err)
	}
	return b.Bytes(), nil
}
