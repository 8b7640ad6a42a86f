package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/chorus-edge/chorus/fleet"
)

// DesiredFor computes the device's desired document (fleet.ComputeDesired
// over the assignments matching the device and the catalog) and stores it.
// The version is taken from the gateway-wide desired_version counter only
// when the skills differ from the stored document, so repeated calls return
// the same version until an assignment, a tag or a "latest" version changes
// what the device should run.
//
// The computation runs first on the read pool; only a changed document
// takes the writer, where it is computed again and stored, so a reconciler
// pass over an unchanged fleet never holds up writes. The document returned
// is kept in memory until a write it depends on commits (desiredcache.go), so
// calls in between run no statement.
func (db *DB) DesiredFor(ctx context.Context, deviceID string) (fleet.Desired, error) {
	if err := fleet.ValidDeviceID(deviceID); err != nil {
		return fleet.Desired{}, err
	}
	doc, seq, ok := db.desired.get(deviceID)
	if ok {
		return doc, nil
	}
	var c computed
	err := db.read(ctx, func(tx *tx) (err error) {
		c, err = computeDesired(ctx, tx, deviceID)
		return err
	})
	if err != nil {
		return c.doc, err
	}
	if !c.unchanged() {
		err = db.write(ctx, func(tx *tx) (err error) {
			if c, err = computeDesired(ctx, tx, deviceID); err != nil || c.unchanged() {
				return err
			}
			return storeDesired(ctx, tx, deviceID, &c, nil)
		})
		if err != nil {
			return c.doc, err
		}
	}
	db.desired.put(deviceID, c.doc, seq)
	return c.doc, nil
}

// computed is a desired document with what is stored for the device.
type computed struct {
	doc    fleet.Desired // Version is the stored version
	json   string        // canonical JSON of doc.Skills
	stored string        // canonical JSON stored ("" when none)
}

func (c *computed) unchanged() bool { return c.stored != "" && c.stored == c.json }

func computeDesired(ctx context.Context, tx *tx, deviceID string) (computed, error) {
	tags, err := deviceTags(ctx, tx, deviceID)
	if err != nil {
		return computed{}, err
	}
	as, resolve, err := matchingAssignments(ctx, tx, deviceID)
	if err != nil {
		return computed{}, err
	}
	c := computed{doc: fleet.Desired{Skills: fleet.ComputeDesired(deviceID, tags, as, resolve)}}
	b, err := json.Marshal(c.doc.Skills) // canonical: sorted keys, compact settings
	if err != nil {
		return computed{}, err
	}
	c.json = string(b)
	err = tx.QueryRowContext(ctx, `SELECT version, skills FROM device_desired WHERE device_id = ?`, deviceID).
		Scan(&c.doc.Version, &c.stored)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return computed{}, err
	}
	return c, nil
}

// storeDesired stores c's document under the next desired version; a
// batch b (StartExecutions; nil otherwise) numbers the documents from its
// own counter (startBatch.nextCounter).
func storeDesired(ctx context.Context, tx *tx, deviceID string, c *computed, b *startBatch) (err error) {
	if c.doc.Version, err = b.nextCounter(ctx, tx, "desired_version"); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO device_desired (device_id, version, skills, computed_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (device_id) DO UPDATE SET version = excluded.version, skills = excluded.skills,
			computed_at = excluded.computed_at`, deviceID, c.doc.Version, c.json, encTime(tx.now))
	version := c.doc.Version
	tx.deviceChanged(deviceID, func(r *deviceRow) { r.dev.DesiredVersion = version })
	return err
}

// deviceTags returns the device's tags, or ErrNotFound for an unknown
// device, in one query.
func deviceTags(ctx context.Context, tx *tx, id string) ([]string, error) {
	rows, err := queryAll(ctx, tx, func(s scanner) (t sql.NullString, err error) { return t, s.Scan(&t) },
		`SELECT t.tag FROM devices d LEFT JOIN device_tags t ON t.device_id = d.id WHERE d.id = ? ORDER BY t.tag`, id)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fleet.Errorf(fleet.ENOTFOUND, "device %q not found", id)
	}
	tags := make([]string, 0, len(rows))
	for _, t := range rows {
		if t.Valid {
			tags = append(tags, t.String)
		}
	}
	return tags, nil
}

// matchingAssignments returns the assignments that target the device by id,
// by one of its tags, or all devices, with a resolver over the catalog
// versions they name (the latest for version ""), all in one query: a
// desired document costs a fixed number of statements however many skills
// it holds.
func matchingAssignments(ctx context.Context, tx *tx, id string) ([]*fleet.Assignment, fleet.VersionResolver, error) {
	type key struct{ skill, version string }
	versions := map[key]*fleet.SkillVersion{}
	scan := func(s scanner) (*fleet.Assignment, error) {
		var (
			a                fleet.Assignment
			settings         sql.NullString
			created, updated int64
			ver, sum         sql.NullString
			size             sql.NullInt64
		)
		err := s.Scan(&a.ID, &a.SkillID, &a.Target.Kind, &a.Target.Value, &a.Action, &a.Version, &settings,
			&a.Seq, &created, &updated, &ver, &sum, &size)
		if err != nil {
			return nil, err
		}
		a.Settings, a.CreatedAt, a.UpdatedAt = rawJSON(settings), decTime(created), decTime(updated)
		if ver.Valid {
			versions[key{a.SkillID, a.Version}] = &fleet.SkillVersion{SkillID: a.SkillID, Version: ver.String,
				SHA256: sum.String, Size: size.Int64}
		}
		return &a, nil
	}
	as, err := queryAll(ctx, tx, scan, `SELECT a.id, a.skill_id, a.target_kind, a.target_value, a.action, a.version,
			a.settings, a.seq, a.created_at, a.updated_at, v.version, v.sha256, v.size
		FROM assignments a
		LEFT JOIN skill_versions v ON v.seq = (SELECT max(s.seq) FROM skill_versions s
			WHERE s.skill_id = a.skill_id AND (a.version = '' OR s.version = a.version))
		WHERE a.target_kind = 'all'
		   OR (a.target_kind = 'device' AND a.target_value = ?1)
		   OR (a.target_kind = 'tag' AND a.target_value IN (SELECT tag FROM device_tags WHERE device_id = ?1))`, id)
	resolve := func(skill, version string) (*fleet.SkillVersion, bool) {
		v, ok := versions[key{skill, version}]
		return v, ok
	}
	return as, resolve, err
}
