package artifact

import (
	"archive/tar"
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzUnpack checks Unpack on arbitrary bytes: it never panics, never
// writes outside dst, never creates anything but 0644/0755 files and 0755
// directories, and on error leaves nothing behind.
func FuzzUnpack(f *testing.F) {
	src := f.TempDir()
	writeTree(f, src, skillTree())
	good, _ := pack(f, src)
	f.Add(good)
	f.Add(buildTar(f, reg("../x", "evil")))
	f.Add(buildTar(f, reg("a", "x"), entry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: "l", Linkname: "/"}}))
	f.Add(buildTar(f, entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "d/", Mode: 0o777}}, reg("d/f", "y")))
	f.Add([]byte{0x1f, 0x8b})
	lim := Limits{MaxBytes: 1 << 20, MaxFiles: 64, MaxFileBytes: 1 << 18}
	f.Fuzz(func(t *testing.T, data []byte) {
		parent := t.TempDir()
		dst := filepath.Join(parent, "dst")
		err := Unpack(bytes.NewReader(data), dst, lim)
		tree := listTree(t, parent)
		if err != nil && len(tree) != 0 {
			t.Fatalf("error %v, but left behind: %v", err, tree)
		}
		for name, mode := range tree {
			switch {
			case name == "dst":
			case !strings.HasPrefix(name, "dst/"):
				t.Fatalf("wrote outside dst: %s", name)
			case mode.IsDir() && mode.Perm() == 0o755:
			case mode.IsRegular() && (mode.Perm() == 0o644 || mode.Perm() == 0o755):
			default:
				t.Fatalf("%s has mode %v", name, mode)
			}
		}
	})
}
