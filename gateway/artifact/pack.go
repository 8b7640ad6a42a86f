package artifact

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

// epoch is every entry's mtime and the gzip header's: times are not content.
var epoch = time.Unix(0, 0)

// Pack writes a reproducible tar.gz of the contents of dir to w: the same
// files with the same contents and executable bits give the same bytes, and
// so the same sha256, whatever their mtimes, owners or the order the
// filesystem lists them in (for one Go release: the bytes come from
// compress/flate).
//
// Entries are dir's contents (not dir itself) in lexical path order, named
// relative with '/' (directories end in '/'), owned by 0:0 with no names,
// mtime 0, modes normalised (0755 directories and executables, else 0644).
// A symlink whose target is a regular file inside dir is stored as that
// file; a symlink to a directory or out of dir, a device, a fifo or a socket
// is refused. Pack also refuses what Unpack with DefaultLimits would: more
// than DefaultMaxFiles entries, a file over DefaultMaxFileBytes, or more
// than DefaultMaxBytes in total. On error, w holds a partial archive.
func Pack(dir string, w io.Writer) (Info, error) {
	// Resolve the root itself, so a skill directory reached through a
	// symlink is walked (WalkDir does not follow links).
	root, err := filepath.EvalSymlinks(dir)
	if err == nil {
		root, err = filepath.Abs(root)
	}
	if err != nil {
		return Info{}, fmt.Errorf("pack %s: %w", dir, err)
	}
	if fi, err := os.Stat(root); err != nil {
		return Info{}, fmt.Errorf("pack: %w", err)
	} else if !fi.IsDir() {
		return Info{}, fmt.Errorf("pack %s: not a directory", dir)
	}
	cw := &countingWriter{w: w, h: sha256.New()}
	p := &packer{root: root, lim: DefaultLimits()}
	if err := p.write(cw); err != nil {
		return Info{}, fmt.Errorf("pack %s: %w", dir, err)
	}
	return Info{SHA256: hex.EncodeToString(cw.h.Sum(nil)), Size: cw.n}, nil
}

type packer struct {
	root  string
	lim   Limits
	files int
	bytes int64
}

func (p *packer) write(w io.Writer) error {
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	zw.ModTime, zw.Name, zw.Comment, zw.OS = time.Time{}, "", "", 255 // fixed header
	tw := tar.NewWriter(zw)
	// WalkDir visits in lexical order, so the archive order is fixed.
	err = filepath.WalkDir(p.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == p.root {
			return nil
		}
		return p.entry(tw, path, d)
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// entry writes one walked path.
func (p *packer) entry(tw *tar.Writer, path string, d fs.DirEntry) error {
	rel, err := filepath.Rel(p.root, path)
	if err != nil {
		return err
	}
	name := filepath.ToSlash(rel)
	if err := packName(name); err != nil {
		return err
	}
	if p.files++; p.files > p.lim.MaxFiles {
		return fmt.Errorf("%w: more than %d entries", ErrTooLarge, p.lim.MaxFiles)
	}
	switch t := d.Type(); {
	case t.IsDir():
		return tw.WriteHeader(header(name+"/", tar.TypeDir, dirMode, 0))
	case t.IsRegular():
		return p.file(tw, name, path)
	case t&fs.ModeSymlink != 0:
		target, err := p.symlinkTarget(path)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return p.file(tw, name, target)
	default:
		return fmt.Errorf("%w: %s is a %s, not a regular file or directory", ErrUnsafe, name, t.Type())
	}
}

// symlinkTarget resolves a symlink to a regular file inside the root.
func (p *packer) symlinkTarget(path string) (string, error) {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("%w: symlink: %v", ErrUnsafe, err)
	}
	realRoot, err := filepath.EvalSymlinks(p.root)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(realRoot, target)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("%w: symlink escapes the skill directory", ErrUnsafe)
	}
	fi, err := os.Stat(target)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%w: symlink to a %s; only links to regular files are packed", ErrUnsafe, fi.Mode().Type())
	}
	return target, nil
}

// file writes a regular file's header and exactly the bytes it had when
// stat'ed; a file that changes size while being packed is an error.
func (p *packer) file(tw *tar.Writer, name, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", ErrUnsafe, name)
	}
	size := fi.Size()
	if size > p.lim.MaxFileBytes {
		return fmt.Errorf("%w: %s is %d bytes, over %d", ErrTooLarge, name, size, p.lim.MaxFileBytes)
	}
	if p.bytes += size; p.bytes > p.lim.MaxBytes {
		return fmt.Errorf("%w: more than %d bytes in total", ErrTooLarge, p.lim.MaxBytes)
	}
	if err := tw.WriteHeader(header(name, tar.TypeReg, normalMode(false, uint32(fi.Mode().Perm())), size)); err != nil {
		return err
	}
	n, err := io.Copy(tw, io.LimitReader(f, size))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if n != size {
		return fmt.Errorf("%s changed while being packed", name)
	}
	return nil
}

func header(name string, typ byte, mode uint32, size int64) *tar.Header {
	return &tar.Header{
		Typeflag: typ, Name: name, Mode: int64(mode), Size: size,
		ModTime: epoch, // Format left to archive/tar: USTAR, or PAX for a long name
	}
}

// packName refuses names Unpack would refuse, so a packed archive always
// unpacks.
func packName(name string) error {
	if !utf8.ValidString(name) || strings.ContainsAny(name, "\\\x00") {
		return fmt.Errorf("%w: name %q is not portable (UTF-8, no backslash or NUL)", ErrUnsafe, name)
	}
	return nil
}

// countingWriter hashes and counts what passes to w.
type countingWriter struct {
	w io.Writer
	h hash.Hash
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.h.Write(b[:n])
	c.n += int64(n)
	return n, err
}
