package sqlite

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chorus-edge/chorus/fleet"
)

const routeColumns = `satellite, hub, allow, blacklisted_skills, blacklisted_intents, created_at, updated_at`

// PutRoute creates or replaces the route of r.Satellite. Both devices must
// exist (ErrNotFound); a satellite that is some route's hub, or a hub that is
// some route's satellite, is ErrConflict (no cascades).
func (db *DB) PutRoute(ctx context.Context, r *fleet.Route) error {
	r.Normalize()
	if err := r.Validate(); err != nil {
		return err
	}
	lists := make([]string, 3)
	for i, l := range [][]string{r.Allow, r.BlacklistedSkills, r.BlacklistedIntents} {
		s, err := jsonText(l)
		if err != nil {
			return err
		}
		lists[i] = s
	}
	return db.write(ctx, func(tx *tx) error {
		if err := routeDevicesOK(ctx, tx, r); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO routes (`+routeColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (satellite) DO UPDATE SET hub = excluded.hub, allow = excluded.allow,
			blacklisted_skills = excluded.blacklisted_skills, blacklisted_intents = excluded.blacklisted_intents,
			updated_at = excluded.updated_at`,
			r.Satellite, r.Hub, lists[0], lists[1], lists[2], encTime(tx.now), encTime(tx.now))
		if err != nil {
			return err
		}
		got, err := scanRoute(tx.QueryRowContext(ctx, `SELECT `+routeColumns+` FROM routes WHERE satellite = ?`, r.Satellite))
		if err != nil {
			return err
		}
		*r = *got
		return nil
	})
}

func routeDevicesOK(ctx context.Context, tx *tx, r *fleet.Route) error {
	for _, id := range []string{r.Satellite, r.Hub} {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM devices WHERE id = ?`, id).Scan(&one)
		if err := notFoundOr(err, "device %q not found", id); err != nil {
			return err
		}
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM routes WHERE hub = ?`, r.Satellite).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return fleet.Errorf(fleet.ECONFLICT, "device %q is the hub of %d route(s); a satellite cannot be a hub", r.Satellite, n)
	}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM routes WHERE satellite = ?`, r.Hub).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return fleet.Errorf(fleet.ECONFLICT, "device %q is relayed to a hub itself; a hub cannot be a satellite", r.Hub)
	}
	return nil
}

// GetRoute returns the route of a satellite.
func (db *DB) GetRoute(ctx context.Context, satellite string) (*fleet.Route, error) {
	if err := fleet.ValidDeviceID(satellite); err != nil {
		return nil, err
	}
	var r *fleet.Route
	err := db.read(ctx, func(tx *tx) (err error) {
		r, err = scanRoute(tx.QueryRowContext(ctx, `SELECT `+routeColumns+` FROM routes WHERE satellite = ?`, satellite))
		return notFoundOr(err, "no route for satellite %q", satellite)
	})
	return r, err
}

// ListRoutes returns every route by satellite.
func (db *DB) ListRoutes(ctx context.Context) ([]*fleet.Route, error) {
	var out []*fleet.Route
	err := db.read(ctx, func(tx *tx) (err error) {
		out, err = queryAll(ctx, tx, scanRoute, `SELECT `+routeColumns+` FROM routes ORDER BY satellite`)
		return err
	})
	return out, err
}

// DeleteRoute removes the route of a satellite.
func (db *DB) DeleteRoute(ctx context.Context, satellite string) error {
	if err := fleet.ValidDeviceID(satellite); err != nil {
		return err
	}
	return db.write(ctx, func(tx *tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM routes WHERE satellite = ?`, satellite)
		return affected(res, err, "no route for satellite %q", satellite)
	})
}

func scanRoute(s scanner) (*fleet.Route, error) {
	var (
		r                fleet.Route
		lists            [3]string
		created, updated int64
	)
	if err := s.Scan(&r.Satellite, &r.Hub, &lists[0], &lists[1], &lists[2], &created, &updated); err != nil {
		return nil, err
	}
	for i, dst := range []*[]string{&r.Allow, &r.BlacklistedSkills, &r.BlacklistedIntents} {
		if err := json.Unmarshal([]byte(lists[i]), dst); err != nil {
			return nil, fmt.Errorf("route %s: %w", r.Satellite, err)
		}
		*dst = nonNilList(*dst)
	}
	r.CreatedAt, r.UpdatedAt = decTime(created), decTime(updated)
	return &r, nil
}

func nonNilList(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

var _ fleet.RouteService = (*DB)(nil)
