package atomicfile_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/chorus-edge/chorus/gateway/atomicfile"
)

func TestWriteFileReplacesWithModeAndLeavesNoTemporary(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.WriteFile(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	assertFile(t, path, "new", 0o600)
	assertOnly(t, dir, "agent.json")
}

func TestFailedFillLeavesDestinationUntouched(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk said no")
	err := atomicfile.WriteFunc(path, 0o600, func(w io.Writer) error {
		if _, err := w.Write([]byte("half")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the fill's error", err)
	}
	assertFile(t, path, "old", 0o600)
	assertOnly(t, dir, "state.json")
}

func TestMissingDirectoryIsAnErrorNamingThePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent", "x.json")
	err := atomicfile.WriteFile(path, []byte("x"), 0o600)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want not-exist", err)
	}
	if want := "replace " + path; !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %q, want it to name %q", err, want)
	}
}

func TestConcurrentWritersNeverMixContents(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "session")
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			body := fmt.Appendf(nil, "%d-%0512d", i, i)
			if err := atomicfile.WriteFile(path, body, 0o600); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var i int
	if _, err := fmt.Sscanf(string(b), "%d-", &i); err != nil || string(b) != string(fmt.Appendf(nil, "%d-%0512d", i, i)) {
		t.Fatalf("file holds a mix of writes: %q", b)
	}
	assertOnly(t, dir, "session")
}

func TestCommitTakesAWrittenFile(t *testing.T) {
	dir := t.TempDir()
	tmp, dst := filepath.Join(dir, "backup.partial"), filepath.Join(dir, "backup.db")
	if err := os.WriteFile(tmp, []byte("db"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Commit(tmp, dst, 0o600); err != nil {
		t.Fatal(err)
	}
	assertFile(t, dst, "db", 0o600)
	assertOnly(t, dir, "backup.db")

	if err := atomicfile.Commit(filepath.Join(dir, "gone"), dst, 0o600); err == nil {
		t.Fatal("committing a missing file succeeded")
	}
	assertFile(t, dst, "db", 0o600)
}

func TestWriteFileOwned(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a file's owner needs root (CI runs as root)")
	}
	path := filepath.Join(t.TempDir(), "settings.json")
	if err := atomicfile.WriteFileOwned(path, []byte("{}"), 0o600, atomicfile.Owner{UID: 65534, GID: 65534}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != 65534 || st.Gid != 65534 {
		t.Fatalf("owner %d:%d, want 65534:65534", st.Uid, st.Gid)
	}
	assertFile(t, path, "{}", 0o600)
}

func assertFile(t *testing.T, path, body string, perm os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != body {
		t.Fatalf("%s holds %q, want %q", path, b, body)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != perm {
		t.Fatalf("%s mode %v, want %v", path, fi.Mode().Perm(), perm)
	}
}

func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if fmt.Sprint(got) != fmt.Sprint(names) {
		t.Fatalf("%s holds %v, want only %v (a temporary file was left behind)", dir, got, names)
	}
}
