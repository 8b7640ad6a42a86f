// Package chorusbin provides the chorus binary to tests that run it as a
// user would (cmd/chorus's end-to-end tests, the agent bench, the skill
// manager's example skills).
//
// scripts/test.sh builds the binary once, as scripts/build.sh ships it, and
// names it in $CHORUS_TEST_BIN; each test package then copies that file
// instead of compiling and linking chorus again (three builds of the whole
// module in one run, docs/testing.md). Without the variable (go test run by
// hand) Build compiles the module's current source.
package chorusbin

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Env names a chorus binary already built for this machine.
const Env = "CHORUS_TEST_BIN"

// Package is the import path Build compiles when Env is unset.
const Package = "github.com/chorus-edge/chorus/cmd/chorus"

// Build puts an executable chorus at dir/chorus and returns its path: a
// copy of $CHORUS_TEST_BIN when that is set (mode 0755, so skills under
// uids of their own can run it when dir is reachable), else `go build`'s.
// An unset variable means build; a set one that names no executable is an
// error, never a silent fallback to building.
func Build(dir string) (string, error) {
	out := filepath.Join(dir, "chorus")
	if src := os.Getenv(Env); src != "" {
		if err := copyExecutable(src, out); err != nil {
			return "", fmt.Errorf("copy $%s: %w (unset it to build chorus instead)", Env, err)
		}
		return out, nil
	}
	build := exec.Command("go", "build", "-o", out, Package)
	if msg, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", Package, err, msg)
	}
	return out, nil
}

// Main is a test package's TestMain around Build: it makes a directory
// every user can reach (0755: skills under uids of their own run the
// binary), puts chorus in it, sets *bin, runs the tests with run (m.Run, or
// leakcheck.Run), removes the directory and exits with run's code; it exits
// 1 before any test when chorus cannot be provided.
func Main(m *testing.M, bin *string, run func(*testing.M) int) {
	dir, err := os.MkdirTemp("", "chorus-test-")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err == nil {
		*bin, err = Build(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chorusbin: provide chorus for the tests:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := run(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if st, err := in.Stat(); err != nil {
		return err
	} else if !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", src)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst) // no half a binary for the next test to run
	}
	return err
}
