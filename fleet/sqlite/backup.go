package sqlite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/atomicfile"
)

// Backup writes a consistent copy of the live database to dstPath while the
// gateway runs. It uses `VACUUM INTO`, SQLite's online copy: it reads one
// snapshot of the database (WAL included) and writes a compact, self-contained
// database file with no -wal or -shm companion, so restoring is copying that
// one file into an empty data dir. Writes wait for the copy (milliseconds for
// a fleet database); reads go on.
//
// The copy is written next to dstPath, synced, and renamed into place, so a
// crash never leaves a half-written file under dstPath. An existing dstPath is
// refused with ErrConflict rather than overwritten.
func (db *DB) Backup(ctx context.Context, dstPath string) error {
	dst, err := filepath.Abs(dstPath)
	if err != nil {
		return fmt.Errorf("backup %s: %w", dstPath, err)
	}
	if _, err := os.Lstat(dst); err == nil {
		return fleet.Errorf(fleet.ECONFLICT, "backup %s: file exists", dstPath)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("backup %s: %w", dstPath, err)
	}
	tmp := dst + ".partial"
	os.Remove(tmp) // a leftover of an interrupted backup
	if _, err := db.w.ExecContext(ctx, `VACUUM INTO ?`, tmp); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("backup %s: %w", dstPath, err)
	}
	// The copy holds credential hashes: readable by the gateway's user only.
	if err := atomicfile.Commit(tmp, dst, 0o600); err != nil {
		return fmt.Errorf("backup %s: %w", dstPath, err)
	}
	return nil
}
