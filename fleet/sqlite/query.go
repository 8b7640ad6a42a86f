package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"unsafe"
)

// placeholders returns n comma-separated bind markers.
func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

func whereClause(conds []string) string {
	if len(conds) == 0 {
		return ""
	}
	return ` WHERE ` + strings.Join(conds, ` AND `)
}

// limitClause is a bound LIMIT (-1 = none in SQLite), so the query text,
// and with it the cached statement, does not vary with the limit.
const limitClause = ` LIMIT ?`

func limitArg(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// nullJSON stores an absent JSON value as NULL, and a present one as TEXT
// without a Go copy: the returned string shares raw's memory. It is only a
// statement argument, bound in the call it is passed to: the driver copies
// it into SQLite's memory when it binds it (modernc.org/sqlite bindText),
// so it must not be kept beyond that call, and raw must not change during
// it. The copy string(raw) made was 16 MB of a 10,000-device install's
// allocations, one per skills report stored (issue 19 round seven).
func nullJSON(raw []byte) any {
	if len(raw) == 0 {
		return nil
	}
	return unsafe.String(&raw[0], len(raw))
}

func rawJSON(s sql.NullString) json.RawMessage {
	if !s.Valid {
		return nil
	}
	return json.RawMessage(s.String)
}

// jsonText encodes v for a NOT NULL JSON column.
func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// queryAll runs q and scans every row with scan.
func queryAll[T any](ctx context.Context, tx *tx, scan func(scanner) (T, error), q string, args ...any) ([]T, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

type scanner interface{ Scan(dest ...any) error }
