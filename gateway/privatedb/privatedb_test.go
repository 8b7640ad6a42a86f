package privatedb_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/chorus-edge/chorus/gateway/privatedb"
)

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestNewDatabasePrivate: with a permissive umask, a database prepared
// here and then opened in WAL mode by SQLite has its file, -wal and -shm at
// 0600 in a 0700 directory.
func TestNewDatabasePrivate(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "data", "fleet.db")
	if err := privatedb.Prepare(path); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t (x); INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if got := mode(t, p); got != 0o600 {
			t.Errorf("%s mode %o, want 600", filepath.Base(p), got)
		}
	}
	if got := mode(t, filepath.Dir(path)); got != 0o700 {
		t.Errorf("directory mode %o, want 700", got)
	}
}

// TestExistingDatabaseTightened: files an older version left 0644 in a
// 0755 directory are made private; the directory keeps only the execute
// bits others need to pass through (an agent's skills, docs/install.md).
func TestExistingDatabaseTightened(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "fleet.db")
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := privatedb.Prepare(path); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if got := mode(t, p); got != 0o600 {
			t.Errorf("%s mode %o, want 600", filepath.Base(p), got)
		}
	}
	if got := mode(t, dir); got != 0o711 {
		t.Errorf("directory mode %o, want 711", got)
	}
}
