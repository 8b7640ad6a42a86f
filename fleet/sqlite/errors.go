package sqlite

import (
	"database/sql"
	"errors"

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
