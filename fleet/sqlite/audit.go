package sqlite

import (
	"context"
	"database/sql"

	"github.com/chorus-edge/chorus/fleet"
)

const (
	defaultAuditLimit = 100
	maxAuditLimit     = 10000
)

// AppendAudit records e, setting its ID and At (the store's clock: entries
// are ordered by ID, and At never goes backwards with a monotonic clock).
func (db *DB) AppendAudit(ctx context.Context, e *fleet.AuditEntry) error {
	if err := e.Validate(); err != nil {
		return err
	}
	return db.write(ctx, func(tx *tx) error { return appendAudit(ctx, tx, e) })
}

func appendAudit(ctx context.Context, tx *tx, e *fleet.AuditEntry) error {
	e.At = tx.now
	return tx.QueryRowContext(ctx, `INSERT INTO audit (at, actor, action, subject, detail) VALUES (?, ?, ?, ?, ?) RETURNING id`,
		encTime(e.At), e.Actor, e.Action, e.Subject, nullJSON(e.Detail)).Scan(&e.ID)
}

// ListAudit returns the newest entries f selects first, at most limit
// (0 = 100, capped at 10,000). Page backwards with f.BeforeID set to the
// smallest ID of the previous page.
func (db *DB) ListAudit(ctx context.Context, f fleet.AuditFilter, limit int) ([]*fleet.AuditEntry, error) {
	var where []string
	var args []any
	add := func(cond string, arg any) { where, args = append(where, cond), append(args, arg) }
	if f.Actor != "" {
		add(`actor = ?`, f.Actor)
	}
	if f.Action != "" {
		add(`action = ?`, f.Action)
	}
	if f.Subject != "" && f.Subject[len(f.Subject)-1] == '/' {
		where = append(where, `substr(subject, 1, length(?)) = ?`)
		args = append(args, f.Subject, f.Subject)
	} else if f.Subject != "" {
		add(`subject = ?`, f.Subject)
	}
	if !f.Since.IsZero() {
		add(`at >= ?`, encTime(f.Since))
	}
	if f.BeforeID > 0 {
		add(`id < ?`, f.BeforeID)
	}
	if limit <= 0 {
		limit = defaultAuditLimit
	}
	q := `SELECT id, at, actor, action, subject, detail FROM audit` + whereClause(where) +
		` ORDER BY id DESC` + limitClause
	args = append(args, min(limit, maxAuditLimit))
	var out []*fleet.AuditEntry
	err := db.read(ctx, func(tx *tx) (err error) {
		out, err = queryAll(ctx, tx, scanAudit, q, args...)
		return err
	})
	return out, err
}

func scanAudit(s scanner) (*fleet.AuditEntry, error) {
	var (
		e      fleet.AuditEntry
		at     int64
		detail sql.NullString
	)
	if err := s.Scan(&e.ID, &at, &e.Actor, &e.Action, &e.Subject, &detail); err != nil {
		return nil, err
	}
	e.At, e.Detail = decTime(at), rawJSON(detail)
	return &e, nil
}
