// Package leakcheck fails a test binary that leaves goroutines of this
// module running after its tests: a hand-written goleak for TestMain.
//
// Every goroutine has an owner, a stop signal and a wait (STYLE.md 4), so
// once every test and its cleanups have run, no goroutine whose stack shows
// a function of github.com/chorus-edge/chorus, or that such a function
// started ("created by"), may remain. Packages whose
// tests run in parallel cannot count goroutines per test; the check runs
// once per package, after m.Run (docs/testing.md).
package leakcheck

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/gateway/poll"
)

// Module is the import-path prefix whose functions mark a goroutine as ours.
const Module = "github.com/chorus-edge/chorus/"

// Within bounds how long Main waits for goroutines to finish stopping after
// the last test (a Close that returned may leave a goroutine on its way out).
const Within = 10 * time.Second

// Main is a package's TestMain: it runs the tests, then the check, and
// exits non-zero if a test failed or a goroutine of this module leaked.
//
//	func TestMain(m *testing.M) { leakcheck.Main(m) }
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main for a TestMain that does more (a re-exec'd child, a binary to
// build): it returns m.Run's exit code, or 1 when the tests passed but the
// check failed, after printing the leaked stacks to stderr.
func Run(m interface{ Run() int }) int { return run(m, Within, os.Stderr) }

func run(m interface{ Run() int }, within time.Duration, w io.Writer) int {
	code := m.Run()
	if code != 0 {
		return code // the failing tests say more than their leftovers
	}
	if err := Check(within); err != nil {
		fmt.Fprintf(w, "leakcheck: %v\n", err)
		return 1
	}
	return code
}

// Check waits up to within until no goroutine other than the caller's
// shows a function of this module in its stack (its "created by" line
// included), and returns an error that
// holds the stacks of those still running if some remain.
func Check(within time.Duration) error {
	var left []string
	err := poll.Wait(context.Background(), "goroutines of "+Module+" to exit", within, func() bool {
		left = ours()
		return len(left) == 0
	})
	if err != nil {
		return fmt.Errorf("%v: %d left\n\n%s", err, len(left), strings.Join(left, "\n\n"))
	}
	return nil
}

// ours returns the stacks of the goroutines, other than the caller's, that
// show a function of this module.
func ours() []string {
	self := header(stacks(false))
	var out []string
	for _, g := range strings.Split(stacks(true), "\n\n") {
		if header(g) == self || !strings.Contains(g, Module) {
			continue
		}
		out = append(out, g)
	}
	return out
}

// header is a goroutine dump's first line up to its state: "goroutine 7".
func header(g string) string {
	h, _, _ := strings.Cut(g, " [")
	return h
}

// stacks is runtime.Stack with a buffer grown until the dump fits.
func stacks(all bool) string {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, all)
		if n < len(buf) {
			return string(bytes.TrimSpace(buf[:n]))
		}
		buf = make([]byte, 2*len(buf))
	}
}
