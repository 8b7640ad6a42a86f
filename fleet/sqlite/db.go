// Package sqlite stores the fleet controller's state in one SQLite file
// (modernc.org/sqlite, pure Go) and implements the fleet service interfaces.
//
// Concurrency: one writer connection (database/sql pool of size 1, every
// write transaction BEGIN IMMEDIATE) serialises writes in this process, and
// busy_timeout covers another process such as a backup tool; a separate
// query_only pool serves reads, which WAL lets run alongside the writer.
// Nothing outside this package knows about SQL: every method returns
// *fleet.Error values for what callers branch on.
package sqlite

import (
	"github.com/chorus-edge/chorus/gateway/privatedb"

	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/chorus-edge/chorus/fleet"
)

// The writer's pragmas run on every new connection (go-deps.md §3): WAL so
// readers never block the writer, synchronous NORMAL (durable at checkpoint,
// never corrupt), foreign keys on, and a busy timeout instead of SQLITE_BUSY.
//
// A reader's page cache is capped at 512 KiB (cache_size -512) instead of SQLite's
// 2 MiB: every commit of the writer empties the caches of the readers (a
// WAL reader starting a transaction after a commit drops its cache), so
// while the fleet changes, which is when the gateway's memory peaks, a
// reader's cache holds little more than one transaction's pages; what a
// full cache of each reader costs is memory outside the Go heap that
// modernc's allocator keeps mapped (docs/benchmarks.md, issue 19).
const (
	writerParams = "_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_txlock=immediate"
	readerParams = "_pragma=busy_timeout(5000)&_pragma=query_only(1)&_pragma=cache_size(-512)"
)

// Compile-time checks that DB provides every fleet service.
var (
	_ fleet.DeviceService     = (*DB)(nil)
	_ fleet.CredentialService = (*DB)(nil)
	_ fleet.CatalogService    = (*DB)(nil)
	_ fleet.AssignmentService = (*DB)(nil)
	_ fleet.RolloutService    = (*DB)(nil)
	_ fleet.AuditService      = (*DB)(nil)
)

// DB is an open fleet database.
type DB struct {
	path string
	now  func() time.Time
	w    *sql.DB // the single writer
	r    *sql.DB // read-only pool

	// stmts caches prepared statements by pool and query text: SQLite's
	// parser costs more than most of our queries, and database/sql re-uses a
	// statement prepared on a connection for every transaction on it.
	stmts sync.Map // stmtKey -> *sql.Stmt

	desired *desiredCache                 // DesiredFor's documents (desiredcache.go)
	latest  *latestCache                  // LatestVersion's versions (catalogcache.go)
	sums    *artifactCache                // ArtifactBySHA256's versions (catalogcache.go)
	devices *rowCache[deviceRow]          // GetDevice's rows (devicecache.go)
	running *rowCache[[]*fleet.Execution] // each device's in-progress executions (devicecache.go)
	writes  atomic.Uint64                 // numbers write transactions, in commit order (devicecache.go)

	closeOnce sync.Once
	closeErr  error
}

// Open opens (creating if needed) the database at path and applies pending
// migrations. now is the clock every stored timestamp comes from (nil =
// time.Now). A database written by a newer binary is refused with
// ErrSchemaTooNew.
func Open(path string, now func() time.Time) (*DB, error) {
	if now == nil {
		now = time.Now
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open fleet db %s: %w", path, err)
	}
	if err := privatedb.Prepare(abs); err != nil {
		return nil, fmt.Errorf("open fleet db: %w", err)
	}
	db := &DB{path: abs, now: now, desired: newDesiredCache(), latest: newLatestCache(), sums: newArtifactCache(), devices: newRowCache(copyDeviceRow), running: newRowCache(copyExecutions)}
	if db.w, err = openPool(abs, writerParams, 1); err != nil {
		return nil, err
	}
	if err := db.migrate(context.Background()); err != nil {
		db.Close()
		return nil, fmt.Errorf("open fleet db %s: %w", path, err)
	}
	if db.r, err = openPool(abs, readerParams, min(max(runtime.NumCPU(), 2), 8)); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func openPool(path, params string, conns int) (*sql.DB, error) {
	p, err := sql.Open("sqlite", "file:"+uriPath(path)+"?"+params)
	if err != nil {
		return nil, fmt.Errorf("open fleet db %s: %w", path, err)
	}
	// Keep connections: the pragmas above run once per connection.
	p.SetMaxOpenConns(conns)
	p.SetMaxIdleConns(conns)
	p.SetConnMaxLifetime(0)
	p.SetConnMaxIdleTime(0)
	if err := p.Ping(); err != nil {
		p.Close()
		return nil, fmt.Errorf("open fleet db %s: %w", path, err)
	}
	return p, nil
}

// uriPath escapes the characters that end or escape the path of an SQLite
// URI filename, so any file name is taken literally.
func uriPath(p string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(p))
}

// Path returns the database file's absolute path.
func (db *DB) Path() string { return db.path }

// Close closes both pools. It is idempotent.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		var errs []error
		db.stmts.Range(func(_, v any) bool {
			errs = append(errs, v.(*sql.Stmt).Close())
			return true
		})
		if db.r != nil {
			errs = append(errs, db.r.Close())
		}
		errs = append(errs, db.w.Close())
		db.closeErr = errors.Join(errs...)
	})
	return db.closeErr
}

// tx is a transaction with the time it started: every row written in one
// transaction carries the same timestamp (wtf sqlite.Tx).
//
// Its QueryContext, QueryRowContext and ExecContext run cached prepared
// statements, so each must hold exactly one SQL statement; a script (a
// migration) goes through tx.Tx.ExecContext.
type tx struct {
	*sql.Tx
	now  time.Time
	db   *DB
	pool *sql.DB

	unprepared []string             // queries without a cached statement yet
	own        map[string]*sql.Stmt // those queries, prepared for this transaction (stmt)

	write   uint64                          // a write transaction's number (DB.writes)
	touched []int64                         // rollouts whose updated_at tx set (touchRollout)
	devices []rowChange[deviceRow]          // device rows changed (deviceChanged)
	running []rowChange[[]*fleet.Execution] // in-progress executions changed (runningChanged)
}

// deviceChanged records that tx changed what getDevice reads of device id:
// set changes a cached row the same way, nil drops it. run applies it to
// the cache once tx committed (devicecache.go); every write of the devices
// row, its tags or its desired version calls it.
func (tx *tx) deviceChanged(id string, set func(*deviceRow)) {
	tx.devices = append(tx.devices, rowChange[deviceRow]{id: id, set: set})
}

// runningChanged records that tx moved execution e of its device into or
// out of in_progress (transition, the only statement that changes an
// execution's state); run applies it to the device's cached list once tx
// committed (devicecache.go). Executions are inserted queued and never
// deleted (rollouts are never deleted, and executions keep no foreign key
// to devices): a statement that deletes one must record it too.
func (tx *tx) runningChanged(e fleet.Execution) {
	tx.running = append(tx.running, rowChange[[]*fleet.Execution]{id: e.DeviceID, set: func(es *[]*fleet.Execution) {
		*es = setRunning(*es, e)
	}})
}

// touchRollout reports whether tx has yet to set rollout id's updated_at,
// and notes that it will. A transaction moves the executions of few
// rollouts, so a list is enough.
func (tx *tx) touchRollout(id int64) bool {
	if slices.Contains(tx.touched, id) {
		return false
	}
	tx.touched = append(tx.touched, id)
	return true
}

type stmtKey struct {
	pool  *sql.DB
	query string
}

// stmt returns q prepared for use in t. A statement seen for the first time
// is prepared for this transaction only, once however often the
// transaction runs it, and remembered; run prepares it on the pool once the
// transaction has released its connection (preparing on the pool inside
// the transaction would wait for the writer's only connection, which the
// transaction holds). Preparing it again for each use kept every copy
// alive until the commit: the first rollout of a process, which inserts an
// execution per device in one transaction, held 10,000 prepared INSERTs,
// ~50 MiB of SQLite's memory outside the Go heap that its allocator then
// kept mapped (docs/benchmarks.md, issue 19, round six).
func (t *tx) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if v, ok := t.db.stmts.Load(stmtKey{t.pool, q}); ok {
		return t.StmtContext(ctx, v.(*sql.Stmt)), nil
	}
	if s, ok := t.own[q]; ok {
		return s, nil
	}
	s, err := t.Tx.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if t.own == nil {
		t.own = map[string]*sql.Stmt{}
	}
	t.own[q] = s
	t.unprepared = append(t.unprepared, q)
	return s, nil
}

// prepare caches the statements a finished transaction met for the first time.
func (db *DB) prepare(pool *sql.DB, queries []string) {
	for _, q := range queries {
		k := stmtKey{pool, q}
		if _, ok := db.stmts.Load(k); ok {
			continue
		}
		s, err := pool.Prepare(q)
		if err != nil {
			continue // the transaction reported it; a closed pool lands here too
		}
		if _, loaded := db.stmts.LoadOrStore(k, s); loaded {
			s.Close()
		}
	}
}

// stmtContext is the context a statement of t runs under. A write
// transaction's statements run without ctx's cancellation, once ctx is
// checked: modernc.org/sqlite watches a cancellable context with a
// goroutine and two progress-handler calls per statement (interruptOnDone),
// ~0.3 s of CPU and 34 MB of garbage in a 10,000-device install
// (docs/benchmarks.md, issue 19), for statements that touch a few rows.
// What a write's caller gives up: a statement already running when ctx ends
// runs to its end; the transaction then stops at its next statement (the
// ctx.Err() here) or at COMMIT, and database/sql rolls it back once ctx is
// done. BEGIN and COMMIT still watch ctx (they run under BeginTx's), so a
// wait for another process's lock ends with it. Reads keep ctx whole: an
// HTTP handler's list query stops when its client goes away.
func (t *tx) stmtContext(ctx context.Context) (context.Context, error) {
	if t.pool != t.db.w {
		return ctx, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return context.WithoutCancel(ctx), nil
}

func (t *tx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	ctx, err := t.stmtContext(ctx)
	if err != nil {
		return nil, err
	}
	s, err := t.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(ctx, args...)
}

func (t *tx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	sctx, err := t.stmtContext(ctx)
	if err != nil {
		return t.Tx.QueryRowContext(ctx, q, args...) // reports ctx's error on Scan
	}
	s, err := t.stmt(sctx, q)
	if err != nil {
		return t.Tx.QueryRowContext(sctx, q, args...) // reports the same error on Scan
	}
	return s.QueryRowContext(sctx, args...)
}

func (t *tx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	ctx, err := t.stmtContext(ctx)
	if err != nil {
		return nil, err
	}
	s, err := t.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return s.ExecContext(ctx, args...)
}

// write runs fn in a write transaction on the single writer and commits it
// when fn returns nil.
func (db *DB) write(ctx context.Context, fn func(*tx) error) error {
	return db.run(ctx, db.w, nil, fn)
}

// read runs fn in a read-only transaction (one consistent snapshot).
func (db *DB) read(ctx context.Context, fn func(*tx) error) error {
	return db.run(ctx, db.r, &sql.TxOptions{ReadOnly: true}, fn)
}

// run runs fn in a transaction of pool. An error that is not a fleet error
// (SQLite's own: locked past the busy timeout, disk or database full, I/O)
// is wrapped with the file and the step that failed, so a log line says
// which database could not do what; the transaction is rolled back whole.
func (db *DB) run(ctx context.Context, pool *sql.DB, opts *sql.TxOptions, fn func(*tx) error) error {
	kind := "write"
	if opts != nil && opts.ReadOnly {
		kind = "read"
	}
	t, err := pool.BeginTx(ctx, opts)
	if err != nil {
		return unavailableOr(fmt.Errorf("fleet db %s: begin %s: %w", db.path, kind, err))
	}
	tx := &tx{Tx: t, now: db.now().UTC(), db: db, pool: pool}
	if pool == db.w {
		tx.write = db.writes.Add(1) // holding the one writer connection: commit order
	}
	err = fn(tx)
	switch {
	case err != nil:
		t.Rollback()
		if fleet.ErrorCode(err) == fleet.EINTERNAL {
			err = fmt.Errorf("fleet db %s: %s: %w", db.path, kind, err)
		}
	default:
		if err = t.Commit(); err != nil {
			err = commitFailed(fmt.Errorf("fleet db %s: commit %s: %w", db.path, kind, err))
		}
	}
	if len(tx.devices) > 0 {
		db.devices.apply(tx.write, tx.devices, err == nil)
	}
	if len(tx.running) > 0 {
		db.running.apply(tx.write, tx.running, err == nil)
	}
	if len(tx.unprepared) > 0 {
		db.prepare(pool, tx.unprepared)
	}
	return unavailableOr(err)
}

// Timestamps are stored as Unix nanoseconds; 0 is the zero time.
func encTime(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func decTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// Ping reports whether the database answers a read (for /healthz). It reads
// through the read pool, so a long write does not make the gateway look
// unhealthy.
func (db *DB) Ping(ctx context.Context) error {
	var one int
	if err := db.r.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
		return fmt.Errorf("fleet db %s: %w", db.path, err)
	}
	return nil
}
