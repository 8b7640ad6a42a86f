// Package atomicfile replaces files so that a reader, or the next start after
// a crash or power cut, sees either the whole old file or the whole new one.
//
// Every file Chorus writes for itself (credentials, the birth session number,
// installer state, settings, configs, keys, backups, artifacts) goes through
// here, so all of them have the same durability:
//
//  1. a temporary file is created in the destination's directory (a rename
//     is atomic only within one file system) under a unique name, so two
//     writers never share a temporary file and a leftover never lends its
//     mode to the next write;
//  2. its mode (and owner, when asked) is set before the first byte, so a
//     secret is never readable by others, not even briefly;
//  3. the data is written and fsynced;
//  4. the file is renamed over the destination;
//  5. the directory is fsynced, so the rename itself survives a power cut.
//
// On any failure the temporary file is removed and the destination is left
// as it was.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Owner asks for the new file to be owned by uid:gid (a skill's settings
// under the skill's own uid). Changing the owner needs CAP_CHOWN.
type Owner struct {
	UID, GID int
}

// WriteFile replaces path with data, mode perm. The parent directory must
// exist: its mode is the caller's decision.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return write(path, perm, nil, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFileOwned is WriteFile with the new file owned by o.
func WriteFileOwned(path string, data []byte, perm os.FileMode, o Owner) error {
	return write(path, perm, &o, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFunc replaces path with what fill writes, for content streamed from
// elsewhere. An error from fill leaves path untouched.
func WriteFunc(path string, perm os.FileMode, fill func(io.Writer) error) error {
	return write(path, perm, nil, fill)
}

// Commit makes an already written file tmp (in dst's directory, written by
// someone else: SQLite's VACUUM INTO, a checked upload) the file dst, with
// mode perm: steps 2-5 of the package's sequence. On failure tmp is removed.
func Commit(tmp, dst string, perm os.FileMode) error {
	f, err := os.OpenFile(tmp, os.O_RDWR, 0)
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("replace %s: %w", dst, err)
	}
	if err := errors.Join(f.Chmod(perm), f.Sync(), f.Close()); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("replace %s: %w", dst, err)
	}
	if err := renameSynced(tmp, dst); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("replace %s: %w", dst, err)
	}
	return nil
}

// SyncDir makes earlier renames and creations in dir durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

func write(path string, perm os.FileMode, owner *Owner, fill func(io.Writer) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	tmp := f.Name()
	if err := fillFile(f, perm, owner, fill); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("replace %s: %w", path, err)
	}
	if err := renameSynced(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return nil
}

// fillFile runs steps 2 and 3 and closes f.
func fillFile(f *os.File, perm os.FileMode, owner *Owner, fill func(io.Writer) error) error {
	err := f.Chmod(perm)
	if err == nil && owner != nil {
		err = f.Chown(owner.UID, owner.GID)
	}
	if err == nil {
		err = fill(f)
	}
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

func renameSynced(tmp, dst string) error {
	if err := os.Rename(tmp, dst); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(dst))
}
