package chorusbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A named binary is copied, runnable by anyone, and the copy is the file.
func TestBuildCopiesTheNamedBinary(t *testing.T) {
	src := filepath.Join(t.TempDir(), "prebuilt")
	script := "#!/bin/sh\necho prebuilt chorus\n"
	if err := os.WriteFile(src, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv(Env, src)
	bin, err := Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(bin)
	if err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("copy: %v, mode %v; want 0755", err, st.Mode())
	}
	out, err := exec.Command(bin).Output()
	if err != nil || string(out) != "prebuilt chorus\n" {
		t.Fatalf("run the copy: %v, %q", err, out)
	}
}

// A variable that names nothing runnable fails with what to do, and leaves
// no file behind.
func TestBuildRefusesABadBinary(t *testing.T) {
	for name, src := range map[string]string{
		"missing":        filepath.Join(t.TempDir(), "nope"),
		"directory":      t.TempDir(),
		"not executable": writeFile(t, 0o644),
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(Env, src)
			dir := t.TempDir()
			_, err := Build(dir)
			if err == nil || !strings.Contains(err.Error(), "unset it to build chorus") {
				t.Fatalf("Build with %s: %v", src, err)
			}
			if _, err := os.Stat(filepath.Join(dir, "chorus")); !os.IsNotExist(err) {
				t.Fatalf("a refused copy left %s/chorus: %v", dir, err)
			}
		})
	}
}

func writeFile(t *testing.T, mode os.FileMode) string {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("x"), mode); err != nil {
		t.Fatal(err)
	}
	return p
}
