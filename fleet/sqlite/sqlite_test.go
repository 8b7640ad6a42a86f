package sqlite_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/sqlite"
)

var ctx = context.Background()

// clock is the injected time: it only moves when a test says so.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// mustOpen opens a database in a fresh temporary directory.
func mustOpen(tb testing.TB) (*sqlite.DB, *clock) {
	tb.Helper()
	c := newClock()
	db := mustOpenAt(tb, filepath.Join(tb.TempDir(), "fleet.db"), c)
	return db, c
}

func mustOpenAt(tb testing.TB, path string, c *clock) *sqlite.DB {
	tb.Helper()
	db, err := sqlite.Open(path, c.Now)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func key(seed byte) []byte {
	s := make([]byte, ed25519.SeedSize)
	s[0] = seed
	return ed25519.NewKeyFromSeed(s).Public().(ed25519.PublicKey)
}

func newDevice(id string, tags ...string) *fleet.Device {
	return &fleet.Device{ID: id, Tags: tags, SecretHash: "sha256:" + id, SkillKey: key(1)}
}

func mustDevice(tb testing.TB, db *sqlite.DB, id string, tags ...string) *fleet.Device {
	tb.Helper()
	d := newDevice(id, tags...)
	if err := db.CreateDevice(ctx, d); err != nil {
		tb.Fatalf("CreateDevice(%s): %v", id, err)
	}
	return d
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func newVersion(skill, version string) *fleet.SkillVersion {
	return &fleet.SkillVersion{SkillID: skill, Version: version, SHA256: digest(skill + "@" + version), Size: 1000,
		Title: skill, Manifest: []byte(`{"name":"` + skill + `"}`), Requirements: []string{"internet"}}
}

func mustPublish(tb testing.TB, db *sqlite.DB, skill, version string) *fleet.SkillVersion {
	tb.Helper()
	v, err := db.PublishVersion(ctx, newVersion(skill, version))
	if err != nil {
		tb.Fatalf("PublishVersion(%s@%s): %v", skill, version, err)
	}
	return v
}

func mustPut(tb testing.TB, db *sqlite.DB, a *fleet.Assignment) {
	tb.Helper()
	if err := db.PutAssignment(ctx, a); err != nil {
		tb.Fatalf("PutAssignment(%s → %s): %v", a.SkillID, a.Target, err)
	}
}

// wantCode fails unless err carries the fleet error code want ("" = nil).
func wantCode(tb testing.TB, err error, want string) {
	tb.Helper()
	if got := fleet.ErrorCode(err); got != want {
		tb.Fatalf("error %v: code %q, want %q", err, got, want)
	}
	sentinel := map[string]error{fleet.ENOTFOUND: fleet.ErrNotFound, fleet.ECONFLICT: fleet.ErrConflict, fleet.EINVALID: fleet.ErrInvalid}[want]
	if sentinel != nil && !errors.Is(err, sentinel) {
		tb.Fatalf("errors.Is(%v, %v) = false", err, sentinel)
	}
}
