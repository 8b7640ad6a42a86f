package artifact

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"unicode/utf8"
)

// maxTrailing caps what Unpack reads after the tar end marker to check the
// gzip trailer (tar pads archives to 10 KiB records; more is not ours).
const maxTrailing = 1 << 20

// Unpack extracts a tar.gz written by Pack (or any archive within the same
// rules) into dst, safely:
//
//   - Only regular files and directories. Symlinks, hard links, devices,
//     fifos, sparse files and global headers are refused (ErrUnsafe): links
//     are never needed by a skill and are the classic way out of dst.
//   - Names must be relative, slash-separated, clean UTF-8: no absolute
//     path, no ".." element, no empty element, no backslash or NUL. A
//     leading "./" is accepted (tar -C dir .). A name twice is refused.
//   - At most lim.MaxFiles entries, lim.MaxFileBytes per file and
//     lim.MaxBytes in total (ErrTooLarge); zero fields take DefaultLimits.
//   - Files are created 0644 or 0755 (any executable bit), directories
//     0755, whatever the archive says; owners and times are not restored.
//   - Every write goes through an os.Root opened on dst, so even a bug here
//     cannot write outside it.
//
// dst must be an empty directory or not exist; it should be a fresh
// temporary directory on the filesystem of the final location, which the
// caller renames into place once Unpack (and any validation) succeeds: the
// rename is what makes an install atomic. On any error Unpack removes what
// it wrote, leaving dst empty (or absent, if Unpack created it).
func Unpack(r io.Reader, dst string, lim Limits) (err error) {
	created, err := prepareDst(dst)
	if err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	defer func() {
		root.Close()
		if err != nil {
			cleanDst(dst, created)
			err = fmt.Errorf("unpack: %w", err)
		}
	}()
	u := &unpacker{root: root, lim: lim.withDefaults(), seen: map[string]bool{}}
	return u.run(r)
}

// prepareDst makes sure dst is an empty directory; created says Unpack made
// it (and so removes it on error).
func prepareDst(dst string) (created bool, err error) {
	entries, err := os.ReadDir(dst)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.Mkdir(dst, dirMode); err != nil {
			return false, err
		}
		return true, nil
	case err != nil:
		return false, err
	case len(entries) > 0:
		return false, fmt.Errorf("destination %s is not empty", dst)
	}
	return false, nil
}

func cleanDst(dst string, created bool) {
	if created {
		os.RemoveAll(dst)
		return
	}
	entries, _ := os.ReadDir(dst)
	for _, e := range entries {
		os.RemoveAll(dst + string(os.PathSeparator) + e.Name())
	}
}

type unpacker struct {
	root  *os.Root
	lim   Limits
	files int
	bytes int64
	seen  map[string]bool // names extracted, to refuse duplicates
}

func (u *unpacker) run(r io.Reader) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("gzip: %w", err)
	}
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("tar: %w", err)
		}
		if err := u.entry(tr, hdr); err != nil {
			return err
		}
	}
	// Read to the gzip trailer so a corrupted or truncated stream is an
	// error even when the tar part ended cleanly.
	n, err := io.Copy(io.Discard, io.LimitReader(zr, maxTrailing+1))
	if err != nil {
		return fmt.Errorf("gzip: %w", err)
	}
	if n > maxTrailing {
		return fmt.Errorf("%w: more than %d bytes after the tar end", ErrTooLarge, maxTrailing)
	}
	return nil
}

func (u *unpacker) entry(tr *tar.Reader, hdr *tar.Header) error {
	name, skip, err := entryName(hdr.Name)
	if err != nil {
		return err
	}
	if u.files++; u.files > u.lim.MaxFiles {
		return fmt.Errorf("%w: more than %d entries", ErrTooLarge, u.lim.MaxFiles)
	}
	if skip {
		return nil
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return u.dir(name)
	case tar.TypeReg:
		return u.file(tr, name, hdr)
	default:
		return fmt.Errorf("%w: %s is a %s; only regular files and directories are allowed", ErrUnsafe, name, typeName(hdr.Typeflag))
	}
}

// entryName checks and cleans an entry name; skip is for "." itself.
func entryName(raw string) (name string, skip bool, err error) {
	bad := func(why string) (string, bool, error) {
		return "", false, fmt.Errorf("%w: name %q: %s", ErrUnsafe, raw, why)
	}
	switch {
	case raw == "":
		return bad("empty")
	case !utf8.ValidString(raw) || strings.ContainsAny(raw, "\\\x00"):
		return bad("not clean UTF-8 (backslash, NUL or invalid bytes)")
	case strings.HasPrefix(raw, "/"):
		return bad("absolute path")
	}
	name = strings.TrimSuffix(raw, "/")
	for strings.HasPrefix(name, "./") {
		name = name[2:]
	}
	if name == "." || name == "" {
		return "", true, nil
	}
	for _, el := range strings.Split(name, "/") {
		switch el {
		case "..":
			return bad("parent directory element")
		case "", ".":
			return bad("empty or '.' element")
		}
	}
	if path.Clean(name) != name {
		return bad("not a clean path")
	}
	return name, false, nil
}

func (u *unpacker) dir(name string) error {
	if err := u.root.MkdirAll(name, dirMode); err != nil {
		return fmt.Errorf("create directory %s: %w", name, err)
	}
	// MkdirAll leaves an existing directory's mode; and umask narrows a
	// new one. Either way the archive's directories end up 0755.
	if err := u.root.Chmod(name, dirMode); err != nil {
		return fmt.Errorf("create directory %s: %w", name, err)
	}
	u.seen[name] = true
	return nil
}

func (u *unpacker) file(tr *tar.Reader, name string, hdr *tar.Header) error {
	if u.seen[name] {
		return fmt.Errorf("%w: %s appears twice", ErrUnsafe, name)
	}
	u.seen[name] = true
	if hdr.Size < 0 || hdr.Size > u.lim.MaxFileBytes {
		return fmt.Errorf("%w: %s is %d bytes, over %d", ErrTooLarge, name, hdr.Size, u.lim.MaxFileBytes)
	}
	if u.bytes += hdr.Size; u.bytes > u.lim.MaxBytes {
		return fmt.Errorf("%w: more than %d bytes in total", ErrTooLarge, u.lim.MaxBytes)
	}
	if dir := path.Dir(name); dir != "." {
		if err := u.root.MkdirAll(dir, dirMode); err != nil {
			return fmt.Errorf("create directory %s: %w", dir, err)
		}
	}
	mode := fs.FileMode(normalMode(false, uint32(hdr.Mode)))
	f, err := u.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	_, err = io.Copy(f, tr) // tar.Reader yields exactly hdr.Size bytes
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := u.root.Chmod(name, mode); err != nil { // umask may have narrowed it
		return fmt.Errorf("chmod %s: %w", name, err)
	}
	return nil
}

func typeName(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "symlink"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	case tar.TypeFifo:
		return "fifo"
	case tar.TypeGNUSparse:
		return "sparse file"
	case tar.TypeXGlobalHeader:
		return "global header"
	}
	return fmt.Sprintf("entry of type %q", t)
}
