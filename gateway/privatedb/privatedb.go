// Package privatedb prepares the files of an SQLite database that holds
// secrets or their hashes (the fleet registry's secret hashes, the broker's
// sessions and retained messages) so that only the gateway's user can read
// them: the database file is 0600 before SQLite first opens it, and SQLite
// gives its -wal and -shm files the database file's mode; the directory is
// created 0700. A database left 0644 by an older version is tightened, with
// its -wal, -shm and -journal files (issue 16 §7; docs/security.md).
//
// An existing directory loses its group and other read and write bits but
// keeps their execute bits: `chorus up` and an agent sharing the data dir
// need it 0711 so that skills, under uids of their own, can pass through to
// their installed code (docs/install.md). Passing through lists nothing,
// and the files themselves are 0600.
package privatedb

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Prepare makes path's directory (0700; an existing one keeps at most 0711)
// and path itself (0600, created empty when absent; SQLite treats an empty
// file as a new database), and tightens the companion files that exist.
func Prepare(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("database directory %s: %w", dir, err)
	}
	if err := tighten(dir, 0o711); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("database file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("database file %s: %w", path, err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		if err := tighten(p, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// tighten clears the bits of p's mode outside want; a missing p is fine.
func tighten(p string, want fs.FileMode) error {
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check mode of %s: %w", p, err)
	}
	if fi.Mode().Perm()&^want == 0 {
		return nil
	}
	if err := os.Chmod(p, fi.Mode().Perm()&want); err != nil {
		return fmt.Errorf("make %s private (mode %o): %w", p, want, err)
	}
	return nil
}
