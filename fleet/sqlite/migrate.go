package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// migrationFiles are the schema changes, applied in order of their number.
// A migration is never edited once released: a change is a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// ErrSchemaTooNew is returned by Open for a database that a newer binary
// migrated: this binary does not know its schema and must not write to it.
var ErrSchemaTooNew = errors.New("database schema is newer than this binary")

type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads migrations/NNNN_name.sql, numbered 1, 2, 3… without
// gaps or duplicates.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_description.sql", base)
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: want version %d (versions are 1, 2, 3… without gaps)", m.name, i+1)
		}
	}
	return ms, nil
}

// migrate applies every migration not yet recorded in schema_migrations,
// each in its own transaction together with its record, so a crash leaves
// the schema at a known version. BEGIN IMMEDIATE makes two processes opening
// the same file take turns; each re-checks inside its transaction.
func (db *DB) migrate(ctx context.Context) error {
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		return err
	}
	if _, err := db.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	) STRICT`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	var newest sql.NullInt64
	if err := db.w.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&newest); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if int(newest.Int64) > len(ms) {
		return fmt.Errorf("%w: the database is at schema version %d, this binary knows versions up to %d; run a newer chorus or restore a backup taken with this one",
			ErrSchemaTooNew, newest.Int64, len(ms))
	}
	for _, m := range ms {
		if err := db.apply(ctx, m); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
	}
	return nil
}

func (db *DB) apply(ctx context.Context, m migration) error {
	return db.write(ctx, func(tx *tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.version).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		if _, err := tx.Tx.ExecContext(ctx, m.sql); err != nil { // a script: not a cached statement
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.version, m.name, encTime(tx.now))
		return err
	})
}

// SchemaVersion returns the newest applied migration.
func (db *DB) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := db.r.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}
