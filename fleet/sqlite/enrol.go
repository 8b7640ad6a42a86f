package sqlite

import (
	"context"
	"encoding/json"

	"github.com/chorus-edge/chorus/fleet"
)

const joinTokenCols = `id, secret_hash, tags, uses, used, approve, expires_at, revoked_at, created_at`

// CreateJoinToken stores a new join token (its secret's hash only); Tags
// are sorted and de-duplicated. A taken id is ErrConflict.
func (db *DB) CreateJoinToken(ctx context.Context, t *fleet.JoinToken) error {
	if err := t.Validate(); err != nil {
		return err
	}
	t.Tags = fleet.NormalizeTags(t.Tags)
	tags, err := jsonText(nonNilTags(t.Tags))
	if err != nil {
		return err
	}
	return db.write(ctx, func(tx *tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO join_tokens (id, secret_hash, tags, uses, used, approve, expires_at, created_at) VALUES (?, ?, ?, ?, 0, ?, ?, ?)`,
			t.ID, t.SecretHash, tags, t.Uses, t.Approve, encTime(t.ExpiresAt), encTime(tx.now))
		if err != nil {
			return conflictOr(err, "join token %q already exists", t.ID)
		}
		t.Used, t.CreatedAt = 0, tx.now
		return nil
	})
}

// GetJoinToken returns one join token.
func (db *DB) GetJoinToken(ctx context.Context, id string) (*fleet.JoinToken, error) {
	var t *fleet.JoinToken
	err := db.read(ctx, func(tx *tx) (err error) {
		t, err = getJoinToken(ctx, tx, id)
		return err
	})
	return t, err
}

func getJoinToken(ctx context.Context, tx *tx, id string) (*fleet.JoinToken, error) {
	t, err := scanJoinToken(tx.QueryRowContext(ctx, `SELECT `+joinTokenCols+` FROM join_tokens WHERE id = ?`, id))
	return t, notFoundOr(err, "join token %q not found (chorus fleet token list shows the tokens)", id)
}

// ListJoinTokens returns every join token, newest first.
func (db *DB) ListJoinTokens(ctx context.Context) ([]*fleet.JoinToken, error) {
	var out []*fleet.JoinToken
	err := db.read(ctx, func(tx *tx) (err error) {
		out, err = queryAll(ctx, tx, scanJoinToken, `SELECT `+joinTokenCols+` FROM join_tokens ORDER BY created_at DESC, id`)
		return err
	})
	return out, err
}

// RevokeJoinToken marks a token revoked; revoking it again changes nothing.
func (db *DB) RevokeJoinToken(ctx context.Context, id string) (*fleet.JoinToken, error) {
	var t *fleet.JoinToken
	err := db.write(ctx, func(tx *tx) (err error) {
		if t, err = getJoinToken(ctx, tx, id); err != nil {
			return err
		}
		if !t.RevokedAt.IsZero() {
			return nil
		}
		if _, err = tx.ExecContext(ctx, `UPDATE join_tokens SET revoked_at = ? WHERE id = ?`, encTime(tx.now), id); err != nil {
			return err
		}
		t.RevokedAt = tx.now
		return nil
	})
	return t, err
}

// UseJoinToken counts one use when the token is usable at the store's clock.
func (db *DB) UseJoinToken(ctx context.Context, id string) (*fleet.JoinToken, error) {
	var t *fleet.JoinToken
	err := db.write(ctx, func(tx *tx) (err error) {
		if t, err = getJoinToken(ctx, tx, id); err != nil {
			return err
		}
		if err = t.Usable(tx.now); err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, `UPDATE join_tokens SET used = used + 1 WHERE id = ?`, id); err != nil {
			return err
		}
		t.Used++
		return nil
	})
	return t, err
}

// RefundJoinToken gives back one use.
func (db *DB) RefundJoinToken(ctx context.Context, id string) error {
	return db.write(ctx, func(tx *tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE join_tokens SET used = used - 1 WHERE id = ? AND used > 0`, id)
		return affected(res, err, "join token %q not found or unused", id)
	})
}

func scanJoinToken(s scanner) (*fleet.JoinToken, error) {
	var (
		t                         fleet.JoinToken
		tags                      string
		expires, revoked, created int64
	)
	if err := s.Scan(&t.ID, &t.SecretHash, &tags, &t.Uses, &t.Used, &t.Approve, &expires, &revoked, &created); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(tags), &t.Tags); err != nil {
		return nil, err
	}
	t.Tags = nonNilTags(t.Tags)
	t.ExpiresAt, t.RevokedAt, t.CreatedAt = decTime(expires), decTime(revoked), decTime(created)
	return &t, nil
}

const pendingCols = `id, device, tags, token, address, secret_hash, accepted, created_at, collected_at`

// CreatePending adds a device waiting for an operator; a device id that is
// already waiting is ErrConflict.
func (db *DB) CreatePending(ctx context.Context, p *fleet.PendingDevice) error {
	if err := p.Validate(); err != nil {
		return err
	}
	p.Tags = fleet.NormalizeTags(p.Tags)
	tags, err := jsonText(nonNilTags(p.Tags))
	if err != nil {
		return err
	}
	return db.write(ctx, func(tx *tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO pending_devices (`+pendingCols+`) VALUES (?, ?, ?, ?, ?, ?, 0, ?, 0)`,
			p.ID, p.DeviceID, tags, p.TokenID, p.Address, p.SecretHash, encTime(tx.now))
		if err != nil {
			return conflictOr(err, "device %q is already waiting to be accepted: pick another name with --device, or ask the operator to reject the waiting one (chorus fleet device pending)", p.DeviceID)
		}
		p.Accepted, p.CreatedAt = false, tx.now
		return nil
	})
}

// GetPending returns one pending entry.
func (db *DB) GetPending(ctx context.Context, id string) (*fleet.PendingDevice, error) {
	var p *fleet.PendingDevice
	err := db.read(ctx, func(tx *tx) (err error) {
		p, err = getPending(ctx, tx, id)
		return err
	})
	return p, err
}

func getPending(ctx context.Context, tx *tx, id string) (*fleet.PendingDevice, error) {
	p, err := scanPending(tx.QueryRowContext(ctx, `SELECT `+pendingCols+` FROM pending_devices WHERE id = ?`, id))
	return p, notFoundOr(err, "pending enrolment %q not found (chorus fleet device pending lists them)", id)
}

// ListPending returns the entries still waiting (not collected), oldest
// first.
func (db *DB) ListPending(ctx context.Context) ([]*fleet.PendingDevice, error) {
	var out []*fleet.PendingDevice
	err := db.read(ctx, func(tx *tx) (err error) {
		out, err = queryAll(ctx, tx, scanPending, `SELECT `+pendingCols+` FROM pending_devices WHERE collected_at = 0 ORDER BY created_at, id`)
		return err
	})
	return out, err
}

// AcceptPending marks an entry accepted.
func (db *DB) AcceptPending(ctx context.Context, id string) (*fleet.PendingDevice, error) {
	var p *fleet.PendingDevice
	err := db.write(ctx, func(tx *tx) (err error) {
		if p, err = getPending(ctx, tx, id); err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, `UPDATE pending_devices SET accepted = 1 WHERE id = ?`, id); err != nil {
			return err
		}
		p.Accepted = true
		return nil
	})
	return p, err
}

// CollectPending records that the agent collected its credentials now.
func (db *DB) CollectPending(ctx context.Context, id string) (*fleet.PendingDevice, error) {
	var p *fleet.PendingDevice
	err := db.write(ctx, func(tx *tx) (err error) {
		if p, err = getPending(ctx, tx, id); err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, `UPDATE pending_devices SET collected_at = ? WHERE id = ?`, encTime(tx.now), id); err != nil {
			return err
		}
		p.CollectedAt = tx.now
		return nil
	})
	return p, err
}

// DeletePending removes an entry.
func (db *DB) DeletePending(ctx context.Context, id string) error {
	return db.write(ctx, func(tx *tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM pending_devices WHERE id = ?`, id)
		return affected(res, err, "pending enrolment %q not found (chorus fleet device pending lists them)", id)
	})
}

func scanPending(s scanner) (*fleet.PendingDevice, error) {
	var (
		p                  fleet.PendingDevice
		tags               string
		created, collected int64
	)
	if err := s.Scan(&p.ID, &p.DeviceID, &tags, &p.TokenID, &p.Address, &p.SecretHash, &p.Accepted, &created, &collected); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(tags), &p.Tags); err != nil {
		return nil, err
	}
	p.Tags = nonNilTags(p.Tags)
	p.CreatedAt, p.CollectedAt = decTime(created), decTime(collected)
	return &p, nil
}

func nonNilTags(tags []string) []string {
	if tags == nil {
		return []string{}
	}
	return tags
}
