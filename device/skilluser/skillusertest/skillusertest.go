// Package skillusertest gives tests what skill isolation needs on a real
// host: a uid range of their own, directories a skill uid can reach, and a
// root check.
package skillusertest

import (
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/chorus-edge/chorus/device/skilluser"
)

// RequireRoot skips t unless it runs as root, which switching uids needs
// (CI runs the tests as root).
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skill isolation tests switch uids: run them as root (CI does)")
	}
}

// Range returns a 1000-uid range of its own in 1e9..2e9, far from any
// account, so tests running at once (packages run in parallel) never sweep
// or share each other's skill uids.
func Range(t testing.TB) skilluser.Range {
	t.Helper()
	first := uint32(1_000_000_000 + rand.IntN(1_000_000)*1000)
	return skilluser.Range{First: first, Last: first + 999}
}

// OpenDir returns a fresh temporary directory that any uid can search
// (0755), and makes its parents up to the system's temporary directory
// searchable too (t.TempDir makes them 0700).
func OpenDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	Open(t, dir)
	return dir
}

// Open adds search permission for others to dir and each parent below the
// system's temporary directory.
func Open(t testing.TB, dir string) {
	t.Helper()
	stop := filepath.Clean(os.TempDir())
	for p := filepath.Clean(dir); p != stop && p != "/" && p != "."; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, st.Mode().Perm()|0o011); err != nil {
			t.Fatal(err)
		}
	}
}

// Executable copies the running test binary where any uid can run it, so a
// process that dropped root can still start it.
func Executable(t testing.TB) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(OpenDir(t), filepath.Base(self))
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}
