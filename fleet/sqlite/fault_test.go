package sqlite_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/sqlite"
)

// lockHolder is a second connection to the database file (another process,
// such as a backup tool or sqlite3 in a shell) holding the write lock.
func lockHolder(t *testing.T, path string) *sql.Conn {
	t.Helper()
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatalf("take the write lock: %v", err)
	}
	return conn
}

// integrityOK fails unless SQLite's integrity check of the file passes,
// read through a connection of its own.
func integrityOK(t *testing.T, path string) {
	t.Helper()
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var got string
	if err := other.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&got); err != nil || got != "ok" {
		t.Fatalf("integrity_check = %q, %v", got, err)
	}
}

func deviceCount(t *testing.T, db *sqlite.DB) int {
	t.Helper()
	ds, err := db.ListDevices(ctx, fleet.DeviceFilter{})
	if err != nil {
		t.Fatalf("list devices: %v", err)
	}
	return len(ds)
}

// TestBusyWaitsForTheLock promises that a write meeting another
// connection's write lock waits (busy_timeout) instead of failing, and
// completes, whole, once the lock is released.
func TestBusyWaitsForTheLock(t *testing.T) {
	t.Parallel()
	db, _ := mustOpen(t)
	mustDevice(t, db, "pi-1")
	holder := lockHolder(t, db.Path())
	done := make(chan error, 1)
	go func() { done <- db.CreateDevice(ctx, newDevice("pi-2", "kitchen", "den")) }()
	select {
	case err := <-done:
		t.Fatalf("the write returned while another connection held the lock: %v", err)
	case <-time.After(300 * time.Millisecond): // bounded: it must still be waiting
	}
	if _, err := holder.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("write after the lock was released: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the write did not complete after the lock was released")
	}
	d, err := db.GetDevice(ctx, "pi-2")
	if err != nil || len(d.Tags) != 2 {
		t.Fatalf("pi-2 = %+v, %v; want it with both tags", d, err)
	}
	integrityOK(t, db.Path())
}

// TestBusyTimeoutIsAClearError promises that a write lock held longer than
// the busy timeout fails the write with an error that says the database was
// locked and what the store was doing, changes nothing, and that the store
// works again once the lock is gone.
func TestBusyTimeoutIsAClearError(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits out the 5 s busy timeout")
	}
	db, _ := mustOpen(t)
	mustDevice(t, db, "pi-1")
	holder := lockHolder(t, db.Path())
	start := time.Now()
	err := db.CreateDevice(ctx, newDevice("pi-2", "kitchen"))
	if err == nil {
		t.Fatal("a write succeeded while another connection held the lock")
	}
	if waited := time.Since(start); waited < 4*time.Second {
		t.Errorf("gave up after %s, before the busy timeout", waited)
	}
	msg := err.Error()
	t.Logf("refused: %v", err)
	if !strings.Contains(msg, "locked") || !strings.Contains(msg, "fleet db") || !strings.Contains(msg, "begin write") {
		t.Fatalf("error %q: want it to name the fleet db, the write it began and the lock", msg)
	}
	if fleet.ErrorCode(err) != fleet.EUNAVAILABLE || !strings.Contains(fleet.ErrorMessage(err), "busy") {
		t.Fatalf("code %q, message %q: want unavailable, saying the database is busy", fleet.ErrorCode(err), fleet.ErrorMessage(err))
	}
	if _, err := holder.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if n := deviceCount(t, db); n != 1 {
		t.Fatalf("%d devices after the refused write, want 1", n)
	}
	mustDevice(t, db, "pi-2")
	integrityOK(t, db.Path())
}

// TestDatabaseFull promises that a write into a full database (capped with
// max_page_count, as a full disk would stop it) fails with an error that
// says the database is full; a transaction that does not fit leaves nothing
// behind (no device without its tags); what was stored before is intact
// (integrity_check ok); and writes work again once there is room.
func TestDatabaseFull(t *testing.T) {
	t.Parallel()
	db, _ := mustOpen(t)
	for i := range 5 {
		mustDevice(t, db, fmt.Sprintf("pi-%d", i), "kitchen")
	}
	if err := db.SetMaxPageCount(ctx, 1); err != nil { // at most the pages it has now
		t.Fatal(err)
	}
	tags := make([]string, 200) // a transaction far bigger than one page
	for i := range tags {
		tags[i] = fmt.Sprintf("room-%03d-%s", i, strings.Repeat("x", 40))
	}
	var err error
	added := 0
	for i := 0; i < 1000 && err == nil; i++ {
		if err = db.CreateDevice(ctx, newDevice(fmt.Sprintf("full-%d", i), tags...)); err == nil {
			added++
		}
	}
	if err == nil {
		t.Fatal("1000 devices fit into a capped database")
	}
	t.Logf("refused after %d devices fit: %v", added, err)
	if msg := err.Error(); !strings.Contains(msg, "full") || !strings.Contains(msg, "fleet db") {
		t.Fatalf("error %q: want it to say the fleet db is full", msg)
	}
	if fleet.ErrorCode(err) != fleet.EUNAVAILABLE || !strings.Contains(fleet.ErrorMessage(err), "full") {
		t.Fatalf("code %q, message %q: want unavailable, saying the database is full", fleet.ErrorCode(err), fleet.ErrorMessage(err))
	}
	ds, lerr := db.ListDevices(ctx, fleet.DeviceFilter{})
	if lerr != nil || len(ds) != 5+added {
		t.Fatalf("%d devices, %v; want the 5 stored before and the %d that fit", len(ds), lerr, added)
	}
	for _, d := range ds {
		if want := 1; strings.HasPrefix(d.ID, "full-") {
			want = len(tags)
			if len(d.Tags) != want {
				t.Fatalf("%s has %d tags, want %d: a partial write", d.ID, len(d.Tags), want)
			}
		}
	}
	integrityOK(t, db.Path())

	if err := db.SetMaxPageCount(ctx, 1<<30); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateDevice(ctx, newDevice("after", tags...)); err != nil {
		t.Fatalf("write after making room: %v", err)
	}
	integrityOK(t, db.Path())
}
