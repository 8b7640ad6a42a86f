package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/chorus-edge/chorus/fleet"
)

const versionColumns = `skill_id, version, sha256, size, manifest, title, description, requirements, published_at FROM skill_versions`

// PublishVersion adds a version to the catalog and returns the stored one.
// Publishing an identical version again (same sha256 and size) returns the
// stored version unchanged; the same version with other bytes is ErrConflict.
func (db *DB) PublishVersion(ctx context.Context, v *fleet.SkillVersion) (_ *fleet.SkillVersion, err error) {
	if err := v.Validate(); err != nil {
		return nil, err
	}
	reqs := v.Requirements
	if reqs == nil {
		reqs = []string{}
	}
	reqText, err := jsonText(reqs)
	if err != nil {
		return nil, err
	}
	var (
		out *fleet.SkillVersion
		// assigned: an assignment names the skill, so the new version may
		// change the documents it reaches (set in the transaction).
		assigned bool
	)
	// A published version changes a desired document only through an
	// assignment of its skill (computeDesired resolves versions for the
	// assignments that match the device, and nothing else): while no
	// assignment names the skill, no document changes, and dropping every
	// document made each device's next pass recompute its unchanged one
	// (the requeue after a publish, haCatalogChanged: ~6 % of the gateway's
	// CPU in a 5,000-device install that follows a publish, docs/benchmarks.md
	// issue 19 round five). An assignment of the skill put later drops what
	// it changes itself (PutAssignment). A write that fails drops too: whether
	// it committed is not known.
	defer func() {
		if assigned || err != nil {
			db.desired.dropAll() // once committed (desiredcache.go)
		}
	}()
	defer db.latest.dropAll() // a new latest version, once committed (catalogcache.go)
	err = db.write(ctx, func(tx *tx) error {
		old, err := getVersion(ctx, tx, v.SkillID, v.Version)
		switch {
		case err == nil && old.SHA256 == v.SHA256 && old.Size == v.Size:
			out = old
			return nil
		case err == nil:
			return fleet.Errorf(fleet.ECONFLICT, "skill %s version %s is already published with sha256 %s; publish a new version",
				v.SkillID, v.Version, old.SHA256)
		case fleet.ErrorCode(err) != fleet.ENOTFOUND:
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO skill_versions
			(skill_id, version, sha256, size, manifest, title, description, requirements, published_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			v.SkillID, v.Version, v.SHA256, v.Size, nullJSON(v.Manifest), v.Title, v.Description, reqText, encTime(tx.now))
		if err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM assignments WHERE skill_id = ?)`, v.SkillID).
			Scan(&assigned); err != nil {
			return err
		}
		out, err = getVersion(ctx, tx, v.SkillID, v.Version)
		return err
	})
	return out, err
}

// GetVersion returns one published version.
func (db *DB) GetVersion(ctx context.Context, skillID, version string) (*fleet.SkillVersion, error) {
	if err := validSkillVersion(skillID, version); err != nil {
		return nil, err
	}
	var v *fleet.SkillVersion
	err := db.read(ctx, func(tx *tx) (err error) {
		v, err = getVersion(ctx, tx, skillID, version)
		return err
	})
	return v, err
}

// LatestVersion returns the most recently published version of a skill.
func (db *DB) LatestVersion(ctx context.Context, skillID string) (*fleet.SkillVersion, error) {
	if err := fleet.ValidSkillID(skillID); err != nil {
		return nil, err
	}
	cached, gen, ok := db.latest.get(skillID)
	if ok {
		return cached, nil
	}
	var v *fleet.SkillVersion
	err := db.read(ctx, func(tx *tx) (err error) {
		v, err = latestVersion(ctx, tx, skillID)
		return err
	})
	if err == nil {
		db.latest.put(v, gen) // after the read (catalogcache.go)
	}
	return v, err
}

// ListSkills returns the latest version of every skill, by skill id.
func (db *DB) ListSkills(ctx context.Context) ([]*fleet.SkillVersion, error) {
	return db.listVersions(ctx, `SELECT `+versionColumns+`
		WHERE seq IN (SELECT max(seq) FROM skill_versions GROUP BY skill_id) ORDER BY skill_id`)
}

// ListVersions returns every version of a skill, newest first. An unknown
// skill is ErrNotFound.
func (db *DB) ListVersions(ctx context.Context, skillID string) ([]*fleet.SkillVersion, error) {
	if err := fleet.ValidSkillID(skillID); err != nil {
		return nil, err
	}
	vs, err := db.listVersions(ctx, `SELECT `+versionColumns+` WHERE skill_id = ? ORDER BY seq DESC`, skillID)
	if err == nil && len(vs) == 0 {
		return nil, fleet.Errorf(fleet.ENOTFOUND, "skill %s not found", skillID)
	}
	return vs, err
}

// ArtifactBySHA256 returns the first version published with this artifact,
// so the HTTP layer can serve /v1/artifacts/<sha256> only for known digests.
func (db *DB) ArtifactBySHA256(ctx context.Context, sum string) (*fleet.SkillVersion, error) {
	if err := fleet.ValidSHA256(sum); err != nil {
		return nil, err
	}
	if v, ok := db.sums.get(sum); ok {
		return v, nil
	}
	var v *fleet.SkillVersion
	err := db.read(ctx, func(tx *tx) (err error) {
		v, err = scanVersion(tx.QueryRowContext(ctx, `SELECT `+versionColumns+` WHERE sha256 = ? ORDER BY seq LIMIT 1`, sum))
		return notFoundOr(err, "artifact %s not found", sum)
	})
	if err == nil {
		db.sums.put(v) // the answer for sum from now on (catalogcache.go)
	}
	return v, err
}

func (db *DB) listVersions(ctx context.Context, q string, args ...any) ([]*fleet.SkillVersion, error) {
	var out []*fleet.SkillVersion
	err := db.read(ctx, func(tx *tx) (err error) {
		out, err = queryAll(ctx, tx, scanVersion, q, args...)
		return err
	})
	return out, err
}

func getVersion(ctx context.Context, tx *tx, skillID, version string) (*fleet.SkillVersion, error) {
	v, err := scanVersion(tx.QueryRowContext(ctx, `SELECT `+versionColumns+` WHERE skill_id = ? AND version = ?`, skillID, version))
	return v, notFoundOr(err, "skill %s version %s is not published", skillID, version)
}

func latestVersion(ctx context.Context, tx *tx, skillID string) (*fleet.SkillVersion, error) {
	v, err := scanVersion(tx.QueryRowContext(ctx, `SELECT `+versionColumns+` WHERE skill_id = ? ORDER BY seq DESC LIMIT 1`, skillID))
	return v, notFoundOr(err, "skill %s not found", skillID)
}

// resolveVersion finds version of skillID, or its latest when version is "".
func resolveVersion(ctx context.Context, tx *tx, skillID, version string) (*fleet.SkillVersion, error) {
	if version == "" {
		return latestVersion(ctx, tx, skillID)
	}
	return getVersion(ctx, tx, skillID, version)
}

func scanVersion(s scanner) (*fleet.SkillVersion, error) {
	var (
		v         fleet.SkillVersion
		manifest  sql.NullString
		reqs      string
		published int64
	)
	err := s.Scan(&v.SkillID, &v.Version, &v.SHA256, &v.Size, &manifest, &v.Title, &v.Description, &reqs, &published)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(reqs), &v.Requirements); err != nil {
		return nil, err
	}
	if v.Requirements == nil {
		v.Requirements = []string{}
	}
	v.Manifest, v.PublishedAt = rawJSON(manifest), decTime(published)
	return &v, nil
}

func validSkillVersion(skillID, version string) error {
	if err := fleet.ValidSkillID(skillID); err != nil {
		return err
	}
	return fleet.ValidVersion(version)
}
