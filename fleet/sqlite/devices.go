package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/chorus-edge/chorus/fleet"
)

const deviceColumns = `d.id, d.secret_hash, d.skill_key, d.key_version, d.created_at, d.updated_at,
	d.online, d.last_seen, d.birth_session, d.agent_version, d.connectivity, d.reported,
	d.applied_version, coalesce(dd.version, 0)
	FROM devices d LEFT JOIN device_desired dd ON dd.device_id = d.id`

// CreateDevice adds d to the registry. The registry sets CreatedAt and
// UpdatedAt, sorts and de-duplicates Tags, and starts KeyVersion at 1 unless
// d names a higher one. A taken id is ErrConflict.
func (db *DB) CreateDevice(ctx context.Context, d *fleet.Device) error {
	if err := d.Validate(); err != nil {
		return err
	}
	d.Tags = fleet.NormalizeTags(d.Tags)
	d.KeyVersion = max(d.KeyVersion, 1)
	defer db.desired.drop(d.ID) // once committed (desiredcache.go)
	return db.write(ctx, func(tx *tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO devices (id, secret_hash, skill_key, key_version, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?)`, d.ID, d.SecretHash, d.SkillKey, d.KeyVersion, encTime(tx.now), encTime(tx.now))
		if err != nil {
			return conflictOr(err, "device %q already exists", d.ID)
		}
		tx.deviceChanged(d.ID, nil)
		if err := insertTags(ctx, tx, d.ID, d.Tags); err != nil {
			return err
		}
		d.CreatedAt, d.UpdatedAt = tx.now, tx.now
		return nil
	})
}

// GetDevice returns one device.
func (db *DB) GetDevice(ctx context.Context, id string) (*fleet.Device, error) {
	if err := fleet.ValidDeviceID(id); err != nil {
		return nil, err
	}
	cached, seq, ok := db.devices.get(id)
	if ok {
		d := cached.dev
		d.Reported = unpackJSON(cached.reported) // outside the cache's lock
		return &d, nil
	}
	var d *fleet.Device
	err := db.read(ctx, func(tx *tx) (err error) {
		d, err = getDevice(ctx, tx, id)
		return err
	})
	if err == nil {
		db.devices.put(id, rowOf(d), seq, db.writes.Load()) // after the read (devicecache.go)
	}
	return d, err
}

// GetDeviceInto is GetDevice with the skills report unpacked into buf's
// memory when buf has room for it (appended to buf[:0]): the returned
// device's Reported is valid only until the caller reuses buf. The fleet
// controller reads every device's report this way once per reconcile pass,
// only to parse it; a new copy per pass was 39 MB of a 10,000-device
// install's allocations (unpackJSON, issue 19 round seven). A device the
// cache does not hold is read as GetDevice reads it.
func (db *DB) GetDeviceInto(ctx context.Context, id string, buf []byte) (*fleet.Device, error) {
	if err := fleet.ValidDeviceID(id); err != nil {
		return nil, err
	}
	if cached, _, ok := db.devices.get(id); ok {
		d := cached.dev
		d.Reported = appendUnpacked(buf[:0], cached.reported) // outside the cache's lock
		return &d, nil
	}
	return db.GetDevice(ctx, id)
}

// ListDevices returns the devices f selects, ordered by id.
func (db *DB) ListDevices(ctx context.Context, f fleet.DeviceFilter) ([]*fleet.Device, error) {
	where, args, err := deviceWhere(f)
	if err != nil {
		return nil, err
	}
	var out []*fleet.Device
	err = db.read(ctx, func(tx *tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+deviceColumns+where+` ORDER BY d.id`, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			d, err := scanDevice(rows)
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return fillTags(ctx, tx, out)
	})
	return out, err
}

// ListDeviceIDs returns the ids of the devices f selects, ordered. A caller
// that only needs the ids (the controller queueing a rollout's targets) does
// not hold every device's report at once: at 10,000 devices ListDevices'
// copies were ~20 MB of live heap at the uninstall's start, the gateway's
// memory peak (docs/benchmarks.md, round seven).
func (db *DB) ListDeviceIDs(ctx context.Context, f fleet.DeviceFilter) ([]string, error) {
	where, args, err := deviceWhere(f)
	if err != nil {
		return nil, err
	}
	var out []string
	err = db.read(ctx, func(tx *tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT d.id FROM devices d`+where+` ORDER BY d.id`, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			out = append(out, id)
		}
		return rows.Err()
	})
	return out, err
}

// deviceWhere is the WHERE clause (with a leading space, or empty) and its
// arguments selecting f's devices, aliased d.
func deviceWhere(f fleet.DeviceFilter) (string, []any, error) {
	var where []string
	var args []any
	if f.Tag != "" {
		if err := fleet.ValidTag(f.Tag); err != nil {
			return "", nil, err
		}
		where = append(where, `d.id IN (SELECT device_id FROM device_tags WHERE tag = ?)`)
		args = append(args, f.Tag)
	}
	if f.Online != nil {
		where = append(where, `d.online = ?`)
		args = append(args, *f.Online)
	}
	if len(where) == 0 {
		return "", nil, nil
	}
	return ` WHERE ` + strings.Join(where, ` AND `), args, nil
}

// DeleteDevice removes a device with its tags, desired document and device
// assignments, and cancels its unfinished executions (ReasonDeviceRemoved),
// all in one transaction.
func (db *DB) DeleteDevice(ctx context.Context, id string) error {
	if err := fleet.ValidDeviceID(id); err != nil {
		return err
	}
	defer db.desired.drop(id) // once committed (desiredcache.go)
	return db.write(ctx, func(tx *tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM devices WHERE id = ?`, id)
		if err := affected(res, err, "device %q not found", id); err != nil {
			return err
		}
		tx.deviceChanged(id, nil)
		if _, err := tx.ExecContext(ctx, `DELETE FROM assignments WHERE target_kind = 'device' AND target_value = ?`, id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM skill_grants WHERE device = ?`, id); err != nil {
			return err
		}
		// An enrolment of this name (accepted, not yet collected) dies with
		// it: collected later it would rotate the secret of a device
		// re-created under the name.
		if _, err := tx.ExecContext(ctx, `DELETE FROM pending_devices WHERE device = ?`, id); err != nil {
			return err
		}
		return cancelDeviceExecutions(ctx, tx, id)
	})
}

// SetDeviceTags replaces the device's tags.
func (db *DB) SetDeviceTags(ctx context.Context, id string, tags []string) (*fleet.Device, error) {
	return db.changeTags(ctx, id, tags, func(tx *tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM device_tags WHERE device_id = ?`, id); err != nil {
			return err
		}
		return insertTags(ctx, tx, id, fleet.NormalizeTags(tags))
	})
}

// AddDeviceTag adds one tag; adding a tag the device has changes nothing.
func (db *DB) AddDeviceTag(ctx context.Context, id, tag string) (*fleet.Device, error) {
	return db.changeTags(ctx, id, []string{tag}, func(tx *tx) error {
		return insertTags(ctx, tx, id, []string{tag})
	})
}

// RemoveDeviceTag removes one tag; removing a tag the device lacks changes nothing.
func (db *DB) RemoveDeviceTag(ctx context.Context, id, tag string) (*fleet.Device, error) {
	return db.changeTags(ctx, id, []string{tag}, func(tx *tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM device_tags WHERE device_id = ? AND tag = ?`, id, tag)
		return err
	})
}

func (db *DB) changeTags(ctx context.Context, id string, tags []string, change func(*tx) error) (*fleet.Device, error) {
	if err := fleet.ValidDeviceID(id); err != nil {
		return nil, err
	}
	if err := fleet.ValidTags(tags); err != nil {
		return nil, err
	}
	var d *fleet.Device
	defer db.desired.drop(id) // once committed (desiredcache.go)
	err := db.write(ctx, func(tx *tx) error {
		if err := touchDevice(ctx, tx, id); err != nil {
			return err
		}
		if err := change(tx); err != nil {
			return err
		}
		tx.deviceChanged(id, nil) // its tags
		var err error
		d, err = getDevice(ctx, tx, id)
		return err
	})
	return d, err
}

// RotateDevice replaces the device's secret hash and skill key and
// increments its key version, so skill credentials minted with the old key
// stop verifying.
func (db *DB) RotateDevice(ctx context.Context, id, secretHash string, skillKey []byte) (*fleet.Device, error) {
	probe := fleet.Device{ID: id, SecretHash: secretHash, SkillKey: skillKey}
	if err := probe.Validate(); err != nil {
		return nil, err
	}
	var d *fleet.Device
	err := db.write(ctx, func(tx *tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE devices SET secret_hash = ?, skill_key = ?,
			key_version = key_version + 1, updated_at = ? WHERE id = ?`, secretHash, skillKey, encTime(tx.now), id)
		if err := affected(res, err, "device %q not found", id); err != nil {
			return err
		}
		tx.deviceChanged(id, nil)
		d, err = getDevice(ctx, tx, id)
		return err
	})
	return d, err
}

// UpdatePresence applies an availability message unless its session is
// older than the newest session seen (a late Will). It reports whether the
// message applied. An applied message raises BirthSession to its session and
// sets LastSeen to p.At (the transaction's time when zero).
func (db *DB) UpdatePresence(ctx context.Context, id string, p fleet.Presence) (bool, error) {
	return db.updateSession(ctx, id, p.Session, p.Force, func(tx *tx) error {
		seen := encTime(orNow(p.At, tx))
		_, err := tx.ExecContext(ctx, `UPDATE devices SET online = ?, birth_session = ?, last_seen = ? WHERE id = ?`,
			p.Online, int64(p.Session), seen, id)
		tx.deviceChanged(id, func(r *deviceRow) {
			r.dev.Online, r.dev.BirthSession, r.dev.LastSeen = p.Online, p.Session, decTime(seen)
		})
		return err
	})
}

// UpdateBirth applies a birth payload unless its session is older than the
// newest session seen. It does not change Online: availability does.
func (db *DB) UpdateBirth(ctx context.Context, id string, b fleet.Birth) (bool, error) {
	return db.updateSession(ctx, id, b.Session, b.Force, func(tx *tx) error {
		seen := encTime(orNow(b.At, tx))
		_, err := tx.ExecContext(ctx, `UPDATE devices SET birth_session = ?, agent_version = ?, last_seen = ? WHERE id = ?`,
			int64(b.Session), b.AgentVersion, seen, id)
		tx.deviceChanged(id, func(r *deviceRow) {
			r.dev.BirthSession, r.dev.AgentVersion, r.dev.LastSeen = b.Session, b.AgentVersion, decTime(seen)
		})
		return err
	})
}

func (db *DB) updateSession(ctx context.Context, id string, session uint64, force bool, apply func(*tx) error) (bool, error) {
	if err := fleet.ValidDeviceID(id); err != nil {
		return false, err
	}
	if session > math.MaxInt64 {
		return false, fleet.Errorf(fleet.EINVALID, "device %q: session %d out of range", id, session)
	}
	applied := false
	err := db.write(ctx, func(tx *tx) error {
		var stored int64
		err := tx.QueryRowContext(ctx, `SELECT birth_session FROM devices WHERE id = ?`, id).Scan(&stored)
		if err != nil {
			return notFoundOr(err, "device %q not found", id)
		}
		if int64(session) < stored && !force {
			return nil // stale: a message of an older session (ARCHITECTURE.md §3)
		}
		applied = true
		return apply(tx)
	})
	return applied, err
}

// UpdateConnectivity stores the latest connectivity payload verbatim.
func (db *DB) UpdateConnectivity(ctx context.Context, id string, payload json.RawMessage) error {
	return db.updateState(ctx, fleet.StateUpdate{DeviceID: id, Payload: payload})
}

// UpdateReported stores the latest skills payload verbatim with the desired
// version it says the agent applied.
func (db *DB) UpdateReported(ctx context.Context, id string, payload json.RawMessage, appliedVersion int64) error {
	return db.updateState(ctx, fleet.StateUpdate{DeviceID: id, Reported: true, Payload: payload, AppliedVersion: appliedVersion})
}

func (db *DB) updateState(ctx context.Context, u fleet.StateUpdate) error {
	if err := validUpdate(u); err != nil {
		return err
	}
	return db.write(ctx, func(tx *tx) error { return storeState(ctx, tx, u) })
}

// UpdateStates stores a batch of reports and connectivity payloads in one
// write transaction (fleet.DeviceService): one commit for the reports the
// inbox took together instead of one each, which was a tenth of the
// gateway's CPU in a 10,000-device install (docs/benchmarks.md, issue 19).
// A refused update (invalid, or its device gone) is found before it writes
// anything, so it fails alone and the others commit. Each update's cached
// row changes only once the transaction committed (DB.run), in order.
func (db *DB) UpdateStates(ctx context.Context, updates []fleet.StateUpdate) ([]error, error) {
	out := make([]error, len(updates))
	valid := 0
	for i, u := range updates {
		if out[i] = validUpdate(u); out[i] == nil {
			valid++
		}
	}
	if valid == 0 {
		return out, nil
	}
	err := db.write(ctx, func(tx *tx) error {
		for i, u := range updates {
			if out[i] != nil {
				continue
			}
			err := storeState(ctx, tx, u)
			switch fleet.ErrorCode(err) {
			case "":
			case fleet.ENOTFOUND:
				out[i] = err
			default:
				return fmt.Errorf("store the state of %s: %w", u.DeviceID, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func validUpdate(u fleet.StateUpdate) error {
	if !u.Reported {
		return validState(u.DeviceID, "connectivity", u.Payload)
	}
	if err := validState(u.DeviceID, "skills report", u.Payload); err != nil {
		return err
	}
	if u.AppliedVersion < 0 {
		return fleet.Errorf(fleet.EINVALID, "device %q: applied version %d: must not be negative", u.DeviceID, u.AppliedVersion)
	}
	return nil
}

// storeState writes one validated update in tx. Its UPDATE is its only
// statement, so one that finds no device wrote nothing. A cached row takes
// a skills report packed (packedjson.go), connectivity as storedJSON says.
func storeState(ctx context.Context, tx *tx, u fleet.StateUpdate) error {
	var (
		res sql.Result
		err error
	)
	if u.Reported {
		res, err = tx.ExecContext(ctx, `UPDATE devices SET reported = ?, applied_version = ? WHERE id = ?`,
			nullJSON(u.Payload), u.AppliedVersion, u.DeviceID)
		tx.deviceChanged(u.DeviceID, func(r *deviceRow) { r.reported, r.dev.AppliedVersion = packJSON(u.Payload), u.AppliedVersion })
	} else {
		res, err = tx.ExecContext(ctx, `UPDATE devices SET connectivity = ? WHERE id = ?`, nullJSON(u.Payload), u.DeviceID)
		tx.deviceChanged(u.DeviceID, func(r *deviceRow) { r.dev.Connectivity = storedJSON(u.Payload) })
	}
	return affected(res, err, "device %q not found", u.DeviceID)
}

// storedJSON is payload as getDevice reads it back after nullJSON stored
// it (nil for none), in memory of its own. A cached row takes it while the
// write is still running (DB.run applies the change before it returns), so
// the caller's payload is copied before the caller can change it.
func storedJSON(payload json.RawMessage) json.RawMessage {
	if len(payload) == 0 {
		return nil
	}
	return bytes.Clone(payload)
}

func validState(id, what string, payload json.RawMessage) error {
	if err := fleet.ValidDeviceID(id); err != nil {
		return err
	}
	return fleet.ValidJSONObject(what, payload, fleet.MaxStatePayload)
}

// getDevice reads one device with its tags in one statement: it runs on
// every reconcile pass (9 % of a 1,000-device install's CPU with a second
// statement for the tags, docs/benchmarks.md). Tags are ids (no spaces), so
// a space joins them.
func getDevice(ctx context.Context, tx *tx, id string) (*fleet.Device, error) {
	var tags sql.NullString
	row := tx.QueryRowContext(ctx, `SELECT (SELECT group_concat(t.tag, ' ') FROM device_tags t WHERE t.device_id = d.id), `+
		deviceColumns+` WHERE d.id = ?`, id)
	d, err := scanDevice(withLeading{row, &tags})
	if err != nil {
		return nil, notFoundOr(err, "device %q not found", id)
	}
	if tags.String != "" {
		d.Tags = strings.Fields(tags.String)
		slices.Sort(d.Tags)
	}
	return d, nil
}

// withLeading scans a leading column into first, the rest as s would.
type withLeading struct {
	s     scanner
	first any
}

func (w withLeading) Scan(dest ...any) error { return w.s.Scan(append([]any{w.first}, dest...)...) }

// touchDevice bumps updated_at, or says the device does not exist.
func touchDevice(ctx context.Context, tx *tx, id string) error {
	res, err := tx.ExecContext(ctx, `UPDATE devices SET updated_at = ? WHERE id = ?`, encTime(tx.now), id)
	tx.deviceChanged(id, nil)
	return affected(res, err, "device %q not found", id)
}

func scanDevice(s scanner) (*fleet.Device, error) {
	var (
		d                                   fleet.Device
		created, updated, lastSeen, session int64
		conn, reported                      sql.NullString
	)
	err := s.Scan(&d.ID, &d.SecretHash, &d.SkillKey, &d.KeyVersion, &created, &updated,
		&d.Online, &lastSeen, &session, &d.AgentVersion, &conn, &reported,
		&d.AppliedVersion, &d.DesiredVersion)
	if err != nil {
		return nil, err
	}
	d.CreatedAt, d.UpdatedAt, d.LastSeen = decTime(created), decTime(updated), decTime(lastSeen)
	d.BirthSession = uint64(session)
	d.Connectivity, d.Reported = rawJSON(conn), rawJSON(reported)
	d.Tags = []string{}
	return &d, nil
}

func insertTags(ctx context.Context, tx *tx, id string, tags []string) error {
	for _, tag := range tags {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO device_tags (device_id, tag) VALUES (?, ?)`, id, tag); err != nil {
			return err
		}
	}
	return nil
}

// fillTags loads the tags of ds: one query for one device, one scan of the
// tag table for a list.
func fillTags(ctx context.Context, tx *tx, ds []*fleet.Device) error {
	if len(ds) == 0 {
		return nil
	}
	byID := make(map[string]*fleet.Device, len(ds))
	for _, d := range ds {
		byID[d.ID] = d
	}
	q, args := `SELECT device_id, tag FROM device_tags ORDER BY device_id, tag`, []any(nil)
	if len(ds) == 1 {
		q, args = `SELECT device_id, tag FROM device_tags WHERE device_id = ? ORDER BY tag`, []any{ds[0].ID}
	}
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, tag string
		if err := rows.Scan(&id, &tag); err != nil {
			return err
		}
		if d := byID[id]; d != nil {
			d.Tags = append(d.Tags, tag)
		}
	}
	return rows.Err()
}

// orNow returns t, or the transaction's time when t is zero.
func orNow(t time.Time, tx *tx) time.Time {
	if t.IsZero() {
		return tx.now
	}
	return t
}
