package sqlite

import (
	"database/sql"
	"testing"
)

// TestTxPreparesANewQueryOnce: a query with no cached statement yet is
// prepared once for the transaction however often the transaction runs it
// (the first rollout runs one INSERT per device in one transaction, and a
// statement per run held ~50 MiB of SQLite's memory until the commit), a
// query that does not prepare is not remembered, and after the commit the
// statement is cached on the pool.
func TestTxPreparesANewQueryOnce(t *testing.T) {
	db, ctx := openWithPi1(t)
	const q = `SELECT count(*) FROM devices WHERE id = ? -- TestTxPreparesANewQueryOnce`
	err := db.write(ctx, func(tx *tx) error {
		var first *sql.Stmt
		for i := range 1000 {
			s, err := tx.stmt(ctx, q)
			if err != nil {
				return err
			}
			if first == nil {
				first = s
			} else if s != first {
				t.Fatalf("run %d prepared the query again", i)
			}
			var n int
			if err := s.QueryRowContext(ctx, "pi1").Scan(&n); err != nil || n != 1 {
				t.Fatalf("run %d: count %d, %v; want 1", i, n, err)
			}
		}
		if _, err := tx.stmt(ctx, `SELECT nothing FROM nowhere`); err == nil {
			t.Fatal("a query of a missing table prepared")
		}
		if len(tx.unprepared) != 1 || len(tx.own) != 1 {
			t.Fatalf("transaction remembers %q and %d statements; want only the one query", tx.unprepared, len(tx.own))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := db.stmts.Load(stmtKey{db.w, q}); !ok {
		t.Fatal("the query is not cached on the writer's pool after the commit")
	}
}
