package poll_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chorus-edge/chorus/gateway/poll"
)

// recorder is a testing.TB that records a failure instead of ending the
// goroutine, so a test can check that Until fails and what it says.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Fatal(args ...any)            { r.failed = fmt.Sprint(args...) }
func (r *recorder) Fatalf(f string, args ...any) { r.failed = fmt.Sprintf(f, args...) }

// Timings run in a synctest bubble: the clock is fake and advances only
// when every goroutine waits, so the 5 s bounds below take no real time and
// the elapsed figures are exact.
func TestUntil(t *testing.T) {
	tests := []struct {
		name       string
		effectAt   time.Duration // when cond starts to hold; < 0: never
		wantFail   bool
		minElapsed time.Duration
		maxElapsed time.Duration
	}{
		{name: "holds at once", effectAt: 0, maxElapsed: 0},
		{name: "holds after 300ms", effectAt: 300 * time.Millisecond, minElapsed: 300 * time.Millisecond, maxElapsed: 300*time.Millisecond + maxPause},
		{name: "never holds", effectAt: -1, wantFail: true, minElapsed: 5 * time.Second, maxElapsed: 5 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				var held atomic.Bool
				switch {
				case tc.effectAt == 0:
					held.Store(true)
				case tc.effectAt > 0:
					time.AfterFunc(tc.effectAt, func() { held.Store(true) })
				}
				r := &recorder{TB: t}
				poll.Until(r, "the effect", 5*time.Second, held.Load)
				elapsed := time.Since(start)
				if got := r.failed != ""; got != tc.wantFail {
					t.Fatalf("failed = %v (%q), want %v", got, r.failed, tc.wantFail)
				}
				if tc.wantFail && (!strings.Contains(r.failed, "the effect") || !strings.Contains(r.failed, "5s")) {
					t.Errorf("failure %q: want what was waited for and the bound", r.failed)
				}
				if elapsed < tc.minElapsed || elapsed > tc.maxElapsed {
					t.Errorf("returned after %s, want within [%s, %s]", elapsed, tc.minElapsed, tc.maxElapsed)
				}
			})
		})
	}
}

// maxPause mirrors the package's cap on the pause between checks.
const maxPause = 20 * time.Millisecond

// A cond that takes long is not run back to back: the pause is at least as
// long as the check, so a 100 ms check runs about 5 times a second, not 10.
func TestUntilPausesAsLongAsTheCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		checks := 0
		r := &recorder{TB: t}
		poll.Until(r, "slow check", time.Second, func() bool {
			checks++
			time.Sleep(100 * time.Millisecond) // the check's own cost, on the fake clock
			return false
		})
		if r.failed == "" {
			t.Fatal("Until did not fail on a cond that never holds")
		}
		if checks < 4 || checks > 6 {
			t.Errorf("%d checks of a 100ms cond in 1s, want about 5", checks)
		}
	})
}

// Wait returns an error instead of failing a test, and stops early when its
// context ends.
func TestWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if err := poll.Wait(context.Background(), "true", time.Second, func() bool { return true }); err != nil {
			t.Fatalf("Wait on a true cond: %v", err)
		}
		err := poll.Wait(context.Background(), "the flag", time.Second, func() bool { return false })
		if err == nil || !strings.Contains(err.Error(), "the flag") {
			t.Fatalf("Wait on a false cond: %v, want an error naming the flag", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		err = poll.Wait(ctx, "the flag", time.Hour, func() bool { return false })
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 100*time.Millisecond {
			t.Fatalf("Wait with a 100ms context: %v after %s, want the context's error at 100ms", err, time.Since(start))
		}
	})
}
