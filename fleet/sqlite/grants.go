package sqlite

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chorus-edge/chorus/fleet"
)

const grantColumns = `skill, device, allow, created_at, updated_at`

// PutSkillGrant creates or replaces the grant of (g.Skill, g.Device); Allow is
// sorted and de-duplicated. A device-scoped grant needs the device.
func (db *DB) PutSkillGrant(ctx context.Context, g *fleet.SkillGrant) error {
	g.Allow = fleet.NormalizeTags(g.Allow)
	if err := g.Validate(); err != nil {
		return err
	}
	allow, err := jsonText(g.Allow)
	if err != nil {
		return err
	}
	return db.write(ctx, func(tx *tx) error {
		if g.Device != "" {
			var one int
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM devices WHERE id = ?`, g.Device).Scan(&one)
			if err := notFoundOr(err, "device %q not found", g.Device); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO skill_grants (`+grantColumns+`) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (skill, device) DO UPDATE SET allow = excluded.allow, updated_at = excluded.updated_at`,
			g.Skill, g.Device, allow, encTime(tx.now), encTime(tx.now))
		if err != nil {
			return err
		}
		got, err := scanGrant(tx.QueryRowContext(ctx, `SELECT `+grantColumns+` FROM skill_grants WHERE skill = ? AND device = ?`, g.Skill, g.Device))
		if err != nil {
			return err
		}
		*g = *got
		return nil
	})
}

// ListSkillGrants returns every grant by skill, fleet-wide grants first.
func (db *DB) ListSkillGrants(ctx context.Context) ([]*fleet.SkillGrant, error) {
	var out []*fleet.SkillGrant
	err := db.read(ctx, func(tx *tx) (err error) {
		out, err = queryAll(ctx, tx, scanGrant, `SELECT `+grantColumns+` FROM skill_grants ORDER BY skill, device`)
		return err
	})
	return out, err
}

// DeleteSkillGrant removes the grant of skill on device ("" for the
// fleet-wide grant).
func (db *DB) DeleteSkillGrant(ctx context.Context, skill, device string) error {
	g := fleet.SkillGrant{Skill: skill, Device: device}
	if err := g.ValidIDs(); err != nil {
		return err
	}
	return db.write(ctx, func(tx *tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM skill_grants WHERE skill = ? AND device = ?`, skill, device)
		return affected(res, err, "no grant for skill %q on %s", skill, g.Scope())
	})
}

func scanGrant(s scanner) (*fleet.SkillGrant, error) {
	var (
		g                fleet.SkillGrant
		allow            string
		created, updated int64
	)
	if err := s.Scan(&g.Skill, &g.Device, &allow, &created, &updated); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(allow), &g.Allow); err != nil {
		return nil, fmt.Errorf("grant %s: %w", g.Skill, err)
	}
	g.Allow = nonNilList(g.Allow)
	g.CreatedAt, g.UpdatedAt = decTime(created), decTime(updated)
	return &g, nil
}

var _ fleet.GrantService = (*DB)(nil)
