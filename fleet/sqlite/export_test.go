package sqlite

import (
	"context"
	"fmt"
)

// SetMaxPageCount caps the size of the database as the writer sees it, in
// pages (tests only): SQLite's max_page_count is a setting of a connection,
// and the writer pool holds exactly one, kept open.
func (db *DB) SetMaxPageCount(ctx context.Context, n int) error {
	_, err := db.w.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", n))
	return err
}
