package sqlite

import (
	"context"
	"database/sql"
	"errors"
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

// TestWriteStatementsCancelBetween: a write transaction's statements run
// under a context without cancellation (no interrupt watcher per statement),
// a read's under the caller's, and a write whose caller cancels stops at its
// next statement and is rolled back whole.
func TestWriteStatementsCancelBetween(t *testing.T) {
	db, ctx := openWithPi1(t)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	err := db.write(wctx, func(tx *tx) error {
		sctx, err := tx.stmtContext(wctx)
		if err != nil || sctx.Done() != nil {
			t.Fatalf("a write statement's context: Done %v, %v; want none", sctx.Done(), err)
		}
		if _, err := tx.ExecContext(wctx, `UPDATE devices SET agent_version = 'renamed' WHERE id = 'pi1'`); err != nil {
			return err
		}
		cancel()
		_, err = tx.ExecContext(wctx, `UPDATE devices SET agent_version = 'again' WHERE id = 'pi1'`)
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("write canceled between statements: %v, want context.Canceled", err)
	}
	err = db.read(ctx, func(tx *tx) error {
		if sctx, _ := tx.stmtContext(ctx); sctx != ctx {
			t.Error("a read statement does not run under its caller's context")
		}
		var name string
		if err := tx.QueryRowContext(ctx, `SELECT agent_version FROM devices WHERE id = 'pi1'`).Scan(&name); err != nil {
			return err
		}
		if name == "renamed" || name == "again" {
			t.Errorf("agent_version %q after a canceled write, want it rolled back", name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestReaderCacheSize: every reader connection has readerParams' page cache
// of 512 KiB (cache_size is a setting of each connection), and the
// writer keeps SQLite's default.
func TestReaderCacheSize(t *testing.T) {
	db, ctx := openWithPi1(t)
	for _, tc := range []struct {
		name  string
		pool  *sql.DB
		conns int
		want  int
	}{{"reader", db.r, 2, -512}, {"writer", db.w, 1, -2000}} {
		// hold conns connections at once, so each of them answers
		var held []*sql.Conn
		for range tc.conns {
			c, err := tc.pool.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
		for i, c := range held {
			var got int
			if err := c.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&got); err != nil || got != tc.want {
				t.Errorf("%s connection %d: cache_size %d (%v), want %d", tc.name, i, got, err, tc.want)
			}
			c.Close()
		}
	}
}
