package sqlite_test

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/fleet/sqlite"
)

func TestMigrationsApplyOnceAndReopen(t *testing.T) {
	t.Parallel()
	c := newClock()
	path := filepath.Join(t.TempDir(), "fleet.db")
	db := mustOpenAt(t, path, c)
	mustDevice(t, db, "pi1", "kitchen")
	v1, err := db.SchemaVersion(ctx)
	if err != nil || v1 < 1 {
		t.Fatalf("SchemaVersion = %d, %v", v1, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for i := range 2 {
		db = mustOpenAt(t, path, c)
		if v, err := db.SchemaVersion(ctx); err != nil || v != v1 {
			t.Fatalf("reopen %d: SchemaVersion = %d, %v; want %d", i, v, err, v1)
		}
		if _, err := db.GetDevice(ctx, "pi1"); err != nil {
			t.Fatalf("reopen %d: data lost: %v", i, err)
		}
		db.Close()
	}
	raw := rawDB(t, path)
	var rows int
	if err := raw.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&rows); err != nil || rows != v1 {
		t.Fatalf("schema_migrations rows = %d, %v; want %d (each migration recorded once)", rows, err, v1)
	}
	var mode string
	if err := raw.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v", mode, err)
	}
}

func TestFutureSchemaRefused(t *testing.T) {
	t.Parallel()
	c := newClock()
	path := filepath.Join(t.TempDir(), "fleet.db")
	db := mustOpenAt(t, path, c)
	db.Close()
	raw := rawDB(t, path)
	if _, err := raw.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, '9999_future.sql', 0)`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	_, err := sqlite.Open(path, c.Now)
	if !errors.Is(err, sqlite.ErrSchemaTooNew) {
		t.Fatalf("Open = %v, want ErrSchemaTooNew", err)
	}
	if !strings.Contains(err.Error(), "9999") {
		t.Errorf("error %q does not name the database's version", err)
	}
}

func TestOpenOddPath(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a dir?#%x")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	db := mustOpenAt(t, filepath.Join(dir, "fleet.db"), newClock())
	mustDevice(t, db, "pi1")
	if _, err := os.Stat(filepath.Join(dir, "fleet.db")); err != nil {
		t.Fatalf("database not at the literal path: %v", err)
	}
}

func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}
