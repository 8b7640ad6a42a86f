// Package backup saves and restores a gateway's state while it runs: the
// fleet database (SQLite's online copy), the published artifacts, and the
// locally issued credentials and operator token. The broker's retained
// messages are not included: at start the controller re-publishes every
// desired document and each agent re-publishes its state when it reconnects.
package backup

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/chorus-edge/chorus/fleet/sqlite"
	"github.com/chorus-edge/chorus/gateway/artifact"
)

// The parts of a data dir that a backup holds.
const (
	DBFile       = "fleet.db"
	ArtifactsDir = "artifacts"
)

// secretFiles are restored with mode 0600.
var secretFiles = []string{"local-credentials.json", "operator-token"}

// Create writes a backup of dataDir to w as a tar.gz. The database is copied
// with SQLite's online backup, so the gateway may keep running.
func Create(ctx context.Context, dataDir string, w io.Writer) error {
	tmp, err := os.MkdirTemp("", "chorus-backup-")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer os.RemoveAll(tmp)
	snapshot := filepath.Join(tmp, DBFile)
	if err := copyDB(ctx, filepath.Join(dataDir, DBFile), snapshot); err != nil {
		return err
	}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	if err := addFile(tw, snapshot, DBFile); err != nil {
		return err
	}
	for _, name := range secretFiles {
		if err := addFile(tw, filepath.Join(dataDir, name), name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := addDir(tw, filepath.Join(dataDir, ArtifactsDir), ArtifactsDir); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return gz.Close()
}

func copyDB(ctx context.Context, path, dst string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("backup: no fleet database in the data dir: %w", err)
	}
	db, err := sqlite.Open(path, nil)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer db.Close()
	return db.Backup(ctx, dst)
}

func addFile(tw *tar.Writer, path, name string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	hdr := &tar.Header{Name: name, Mode: 0o644, Size: st.Size(), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("backup %s: %w", name, err)
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("backup %s: %w", name, err)
	}
	return nil
}

func addDir(tw *tar.Writer, dir, name string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("backup %s: %w", name, err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() {
			if err := addFile(tw, filepath.Join(dir, e.Name()), name+"/"+e.Name()); err != nil {
				return err
			}
		}
	}
	return nil
}

// Restore unpacks a backup into dataDir, which must be empty or absent. The
// archive is checked as strictly as a skill archive (no traversal, no links).
func Restore(r io.Reader, dataDir string) error {
	lim := artifact.Limits{MaxBytes: 64 << 30, MaxFiles: 1 << 20, MaxFileBytes: 16 << 30}
	if err := artifact.Unpack(r, dataDir, lim); err != nil {
		return fmt.Errorf("restore into %s: %w", dataDir, err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, DBFile)); err != nil {
		return fmt.Errorf("restore into %s: the archive holds no %s: not a Chorus backup", dataDir, DBFile)
	}
	if err := os.Chmod(dataDir, 0o700); err != nil {
		return err
	}
	for _, name := range append([]string{DBFile}, secretFiles...) {
		if err := os.Chmod(filepath.Join(dataDir, name), 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("restore %s: %w", name, err)
		}
	}
	return nil
}
