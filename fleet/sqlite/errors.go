package sqlite

import (
	"database/sql"
	"errors"
	"fmt"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/chorus-edge/chorus/fleet"
)

// isUnique reports whether err is a UNIQUE or PRIMARY KEY violation.
func isUnique(err error) bool {
	var se *msqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	c := se.Code()
	return c == sqlite3.SQLITE_CONSTRAINT_UNIQUE || c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}

// coded is an SQLite error with its result code (*modernc.org/sqlite.Error).
type coded interface {
	error
	Code() int
}

// unavailableOr gives SQLite's storage failures an operator-facing message
// (fleet.EUNAVAILABLE) while keeping the original error in the chain for the
// log; any other error passes through. The transaction was rolled back, so
// nothing changed.
func unavailableOr(err error) error {
	var se coded
	if err == nil || fleet.ErrorCode(err) != fleet.EINTERNAL || !errors.As(err, &se) {
		return err // no error, already an application error, or not SQLite's
	}
	var msg string
	switch se.Code() & 0xff { // the primary result code
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		msg = "the fleet database is busy (another writer held it past the timeout); nothing changed, retry"
	case sqlite3.SQLITE_FULL:
		msg = "the fleet database is full (no disk space, or its size limit); nothing changed; free space on the gateway and retry"
	case sqlite3.SQLITE_IOERR:
		msg = "the fleet database could not be written (I/O error: a full disk, a file size limit or a failing disk); nothing changed; see the gateway's log"
	default:
		return err
	}
	return fmt.Errorf("%w: %w", fleet.Errorf(fleet.EUNAVAILABLE, "%s", msg), err)
}

// commitFailed is unavailableOr for an error of COMMIT itself. An I/O error
// there leaves the outcome unknown (in WAL mode the frames may have reached
// the log before the failure), so the message must not promise that nothing
// changed; a busy or full database at commit did roll back.
func commitFailed(err error) error {
	var se coded
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_IOERR {
		return fmt.Errorf("%w: %w", fleet.Errorf(fleet.EUNAVAILABLE, "%s",
			"the fleet database could not confirm the change (I/O error while committing: a full disk, a file size limit or a failing disk); it may or may not have been applied: check before retrying, and see the gateway's log"), err)
	}
	return unavailableOr(err)
}

// conflictOr maps a uniqueness violation to a conflict with msg and passes
// any other error through.
func conflictOr(err error, format string, args ...any) error {
	if isUnique(err) {
		return fleet.Errorf(fleet.ECONFLICT, format, args...)
	}
	return err
}

// notFoundOr maps sql.ErrNoRows to a not-found error with msg and passes any
// other error through.
func notFoundOr(err error, format string, args ...any) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fleet.Errorf(fleet.ENOTFOUND, format, args...)
	}
	return err
}

// affected returns a not-found error when res changed no row.
func affected(res sql.Result, err error, format string, args ...any) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fleet.Errorf(fleet.ENOTFOUND, format, args...)
	}
	return nil
}
