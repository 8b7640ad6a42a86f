package artifact

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPackReproducible(t *testing.T) {
	a := t.TempDir()
	writeTree(t, a, skillTree())
	first, info := pack(t, a)
	second, _ := pack(t, a)
	if !bytes.Equal(first, second) {
		t.Fatal("packing the same directory twice gave different bytes")
	}
	sum := sha256.Sum256(first)
	if info.SHA256 != hex.EncodeToString(sum[:]) || info.Size != int64(len(first)) {
		t.Fatalf("Info %+v does not describe the %d bytes written", info, len(first))
	}

	// A copy written in another order, with other mtimes and a wider
	// umask-style mode on plain files, packs to the same bytes.
	b := t.TempDir()
	writeTree(t, b, skillTree())
	old := time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC)
	filepath.WalkDir(b, func(p string, d fs.DirEntry, err error) error {
		os.Chtimes(p, old, old)
		return nil
	})
	os.Chmod(filepath.Join(b, "data", "greet.txt"), 0o600)
	os.Chmod(filepath.Join(b, "run.sh"), 0o700)
	os.Chmod(filepath.Join(b, "data"), 0o700)
	_, infoB := pack(t, b)
	if infoB.SHA256 != info.SHA256 {
		t.Fatalf("copy with other mtimes and modes: sha %s, want %s", infoB.SHA256, info.SHA256)
	}

	// Content matters: changing one byte or the executable bit changes the sha.
	os.WriteFile(filepath.Join(b, "data", "greet.txt"), []byte("ho\n"), 0o644)
	if _, infoC := pack(t, b); infoC.SHA256 == info.SHA256 {
		t.Fatal("changed content, same sha")
	}
}

func TestPackHeaders(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, skillTree())
	b, _ := pack(t, dir)
	var names []string
	forEachHeader(t, b, func(h *tar.Header) {
		names = append(names, h.Name)
		if !h.ModTime.Equal(epoch) || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: header carries owner or time: %+v", h.Name, h)
		}
	})
	want := []string{"SKILL.md", "data/", "data/deep/", "data/deep/x.bin", "data/greet.txt", "run.sh"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("entries %v, want %v", names, want)
	}
}

func TestRoundTrip(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, skillTree())
	os.Chmod(filepath.Join(src, "data", "greet.txt"), 0o600)
	b, _ := pack(t, src)
	dst := filepath.Join(t.TempDir(), "out")
	if err := Unpack(bytes.NewReader(b), dst, Limits{}); err != nil {
		t.Fatalf("Unpack: %v", err)
	}
	got := listTree(t, dst)
	want := map[string]fs.FileMode{
		"SKILL.md": 0o644, "run.sh": 0o755, "data": fs.ModeDir | 0o755, "data/greet.txt": 0o644,
		"data/deep": fs.ModeDir | 0o755, "data/deep/x.bin": 0o644,
	}
	if len(got) != len(want) {
		t.Fatalf("tree %v, want %v", got, want)
	}
	for name, mode := range want {
		if got[name] != mode {
			t.Errorf("%s: mode %v, want %v", name, got[name], mode)
		}
	}
	for name, content := range skillTree() {
		name = strings.TrimSuffix(name, "*")
		b, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil || string(b) != content {
			t.Errorf("%s: content differs (%v)", name, err)
		}
	}
}

func TestPackSymlinks(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(outside, []byte("secret"), 0o644)
	tests := []struct {
		name, target string
		wantErr      bool
	}{
		{"inside to file is stored as the file", "SKILL.md", false},
		{"escaping absolute", outside, true},
		{"escaping relative", "../../etc/passwd", true},
		{"to a directory", "data", true},
		{"dangling", "nope", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, skillTree())
			if err := os.Symlink(tt.target, filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			_, err := Pack(dir, &buf)
			if tt.wantErr {
				if !errors.Is(err, ErrUnsafe) {
					t.Fatalf("Pack: got %v, want ErrUnsafe", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			forEachHeader(t, buf.Bytes(), func(h *tar.Header) {
				if h.Name == "link" && h.Typeflag != tar.TypeReg {
					t.Errorf("link stored as type %q", h.Typeflag)
				}
			})
		})
	}
}

func TestPackRefusesFifo(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, skillTree())
	if err := mkfifo(filepath.Join(dir, "pipe")); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if _, err := Pack(dir, &bytes.Buffer{}); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("Pack: got %v, want ErrUnsafe", err)
	}
}

func TestPackThroughSymlinkedDir(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, skillTree())
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	_, direct := pack(t, dir)
	_, viaLink := pack(t, link)
	if direct.SHA256 != viaLink.SHA256 {
		t.Fatal("packing through a symlinked directory differs")
	}
}

func TestPackRefusesMissing(t *testing.T) {
	if _, err := Pack(filepath.Join(t.TempDir(), "nope"), &bytes.Buffer{}); err == nil {
		t.Fatal("Pack of a missing directory: no error")
	}
}

func TestUnpackRefuses(t *testing.T) {
	small := Limits{MaxFiles: 3, MaxFileBytes: 10, MaxBytes: 15}
	hdr := func(typ byte, name, link string) entry {
		return entry{hdr: tar.Header{Typeflag: typ, Name: name, Linkname: link, Mode: 0o644}}
	}
	tests := []struct {
		name    string
		entries []entry
		lim     Limits
		want    error
	}{
		{"traversal", []entry{reg("ok", "x"), reg("../x", "evil")}, Limits{}, ErrUnsafe},
		{"nested traversal", []entry{reg("a/../../x", "evil")}, Limits{}, ErrUnsafe},
		{"absolute", []entry{reg("/etc/x", "evil")}, Limits{}, ErrUnsafe},
		{"symlink", []entry{hdr(tar.TypeSymlink, "link", "/etc/passwd")}, Limits{}, ErrUnsafe},
		{"symlink inside", []entry{reg("a", "x"), hdr(tar.TypeSymlink, "b", "a")}, Limits{}, ErrUnsafe},
		{"hardlink", []entry{reg("a", "x"), hdr(tar.TypeLink, "b", "a")}, Limits{}, ErrUnsafe},
		{"char device", []entry{{hdr: tar.Header{Typeflag: tar.TypeChar, Name: "null", Devmajor: 1, Devminor: 3}}}, Limits{}, ErrUnsafe},
		{"block device", []entry{hdr(tar.TypeBlock, "sda", "")}, Limits{}, ErrUnsafe},
		{"fifo", []entry{hdr(tar.TypeFifo, "pipe", "")}, Limits{}, ErrUnsafe},
		{"backslash", []entry{reg(`a\..\x`, "x")}, Limits{}, ErrUnsafe},
		{"duplicate", []entry{reg("a", "x"), reg("a", "y")}, Limits{}, ErrUnsafe},
		{"empty element", []entry{reg("a//b", "x")}, Limits{}, ErrUnsafe},
		{"too many files", []entry{reg("a", ""), reg("b", ""), reg("c", ""), reg("d", "")}, small, ErrTooLarge},
		{"file too big", []entry{reg("a", strings.Repeat("x", 11))}, small, ErrTooLarge},
		{"total too big", []entry{reg("a", strings.Repeat("x", 8)), reg("b", strings.Repeat("x", 8))}, small, ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			dst := filepath.Join(parent, "dst")
			err := Unpack(bytes.NewReader(buildTar(t, tt.entries...)), dst, tt.lim)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Unpack: got %v, want %v", err, tt.want)
			}
			if got := listTree(t, parent); len(got) != 0 {
				t.Fatalf("left behind: %v", got)
			}
		})
	}
}

func TestUnpackLeavesExistingDstEmpty(t *testing.T) {
	dst := t.TempDir()
	b := buildTar(t, reg("a", "x"), reg("b/c", "y"), reg("../z", "evil"))
	if err := Unpack(bytes.NewReader(b), dst, Limits{}); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("Unpack: got %v", err)
	}
	if got := listTree(t, dst); len(got) != 0 {
		t.Fatalf("dst not emptied: %v", got)
	}
	if _, err := os.Stat(dst); err != nil {
		t.Fatalf("existing dst removed: %v", err)
	}
}

func TestUnpackRefusesNonEmptyDst(t *testing.T) {
	dst := t.TempDir()
	os.WriteFile(filepath.Join(dst, "keep"), []byte("x"), 0o644)
	b := buildTar(t, reg("a", "x"))
	if err := Unpack(bytes.NewReader(b), dst, Limits{}); err == nil {
		t.Fatal("Unpack into a non-empty dir: no error")
	}
	if _, err := os.Stat(filepath.Join(dst, "keep")); err != nil {
		t.Fatalf("existing content touched: %v", err)
	}
}

func TestUnpackCorrupt(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, skillTree())
	good, _ := pack(t, src)
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"not gzip", []byte("hello, world")},
		{"truncated", good[:len(good)/2]},
		{"bad trailer", append(append([]byte{}, good[:len(good)-8]...), 0, 0, 0, 0, 0, 0, 0, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "dst")
			if err := Unpack(bytes.NewReader(tt.data), dst, Limits{}); err == nil {
				t.Fatal("no error")
			}
			if _, err := os.Stat(dst); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("dst left behind: %v", err)
			}
		})
	}
}

func TestUnpackAcceptsDotSlash(t *testing.T) {
	b := buildTar(t,
		entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "./", Mode: 0o700}},
		reg("./SKILL.md", "x"),
		entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "./run", Mode: 0o700, Size: 1}, body: "y"},
	)
	dst := filepath.Join(t.TempDir(), "dst")
	if err := Unpack(bytes.NewReader(b), dst, Limits{}); err != nil {
		t.Fatal(err)
	}
	got := listTree(t, dst)
	if got["SKILL.md"] != 0o644 || got["run"] != 0o755 || len(got) != 2 {
		t.Fatalf("tree %v", got)
	}
}
