package backup

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/sqlite"
)

func TestBackupWhileOpenAndRestore(t *testing.T) {
	src := t.TempDir()
	db, err := sqlite.Open(filepath.Join(src, DBFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if err := db.CreateDevice(ctx, &fleet.Device{ID: "pi-1", SecretHash: "sha256:" + string(bytes.Repeat([]byte("a"), 64)),
		SkillKey: bytes.Repeat([]byte{1}, 32), KeyVersion: 1}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(src, "operator-token"), []byte("tok\n"), 0o600)
	os.MkdirAll(filepath.Join(src, ArtifactsDir), 0o700)
	os.WriteFile(filepath.Join(src, ArtifactsDir, "abc"), []byte("archive"), 0o644)

	var buf bytes.Buffer
	if err := Create(ctx, src, &buf); err != nil { // the source DB stays open, as in a running gateway
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "restored")
	if err := Restore(bytes.NewReader(buf.Bytes()), dst); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(filepath.Join(dst, "operator-token"))
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("token mode %v", st.Mode())
	}
	if b, _ := os.ReadFile(filepath.Join(dst, ArtifactsDir, "abc")); string(b) != "archive" {
		t.Fatal("artifact not restored")
	}
	rdb, err := sqlite.Open(filepath.Join(dst, DBFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if _, err := rdb.GetDevice(ctx, "pi-1"); err != nil {
		t.Fatalf("restored registry: %v", err)
	}
	// Restoring over a non-empty data dir is refused.
	if err := Restore(bytes.NewReader(buf.Bytes()), dst); err == nil {
		t.Fatal("restore into a non-empty dir succeeded")
	}
}

func TestRestoreRefusesGarbage(t *testing.T) {
	if err := Restore(bytes.NewReader([]byte("not a backup")), filepath.Join(t.TempDir(), "d")); err == nil {
		t.Fatal("garbage restored")
	}
}
