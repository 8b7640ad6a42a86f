package sqlite_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/chorus-edge/chorus/fleet"
)

func TestBackup(t *testing.T) {
	t.Parallel()
	db, c := mustOpen(t)
	mustPublish(t, db, "weather", "1.0.0")
	mustDevice(t, db, "pi1", "kitchen")
	mustPut(t, db, install("weather", fleet.TagTarget("kitchen"), "", `{"units":"metric"}`))
	want, err := db.DesiredFor(ctx, "pi1")
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "backup.db")
	if err := db.Backup(ctx, dst); err != nil {
		t.Fatalf("Backup: %v", err)
	}
	// The live database keeps changing; the backup does not.
	mustDevice(t, db, "pi2")

	fi, err := os.Stat(dst)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v, %v", fi, err)
	}
	if _, err := os.Stat(dst + "-wal"); err == nil {
		t.Error("backup has a -wal companion before it was opened")
	}
	restored := mustOpenAt(t, dst, c)
	got, err := restored.DesiredFor(ctx, "pi1")
	if err != nil || got.Version != want.Version || !fleet.SameSkills(got.Skills, want.Skills) {
		t.Fatalf("restored desired = %+v, %v; want %+v", got, err, want)
	}
	if _, err := restored.GetDevice(ctx, "pi2"); fleet.ErrorCode(err) != fleet.ENOTFOUND {
		t.Fatalf("backup holds a device added after it: %v", err)
	}
	if v, err := restored.SchemaVersion(ctx); err != nil || v < 1 {
		t.Fatalf("restored schema version %d, %v", v, err)
	}

	wantCode(t, db.Backup(ctx, dst), fleet.ECONFLICT)
	if err := db.Backup(ctx, filepath.Join(t.TempDir(), "missing", "dir", "b.db")); err == nil {
		t.Fatal("backup into a missing directory succeeded")
	}
}

// TestConcurrentReadersWhileWriting runs readers against the read pool while
// the single writer changes devices, desired documents and the audit log,
// and a backup runs in the middle (go test -race).
func TestConcurrentReadersWhileWriting(t *testing.T) {
	t.Parallel()
	db, _ := mustOpen(t)
	mustPublish(t, db, "weather", "1.0.0")
	mustPut(t, db, install("weather", fleet.AllTarget(), "", ""))
	const devices = 60
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	stop := make(chan struct{})
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < devices; i += 2 {
				id := fmt.Sprintf("pi%03d", i)
				if err := db.CreateDevice(ctx, newDevice(id, "kitchen")); err != nil {
					errs <- err
					return
				}
				if _, err := db.UpdatePresence(ctx, id, fleet.Presence{Online: true, Session: 1}); err != nil {
					errs <- err
					return
				}
				if _, err := db.DesiredFor(ctx, id); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var readers sync.WaitGroup
	for range 4 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ds, err := db.ListDevices(ctx, fleet.DeviceFilter{Tag: "kitchen"})
				if err != nil {
					errs <- err
					return
				}
				for _, d := range ds {
					if _, err := db.GetDevice(ctx, d.ID); err != nil {
						errs <- err
						return
					}
				}
				if _, err := db.ListAudit(ctx, fleet.AuditFilter{}, 10); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := db.Backup(ctx, filepath.Join(t.TempDir(), "mid.db")); err != nil {
			errs <- err
		}
	}()
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	ds, err := db.ListDevices(ctx, fleet.DeviceFilter{})
	if err != nil || len(ds) != devices {
		t.Fatalf("devices = %d, %v", len(ds), err)
	}
	for _, d := range ds {
		if !d.Online || d.DesiredVersion == 0 {
			t.Fatalf("device %+v", d)
		}
	}
}
