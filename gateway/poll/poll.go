// Package poll is the test suite's one way to wait for an effect a test
// cannot be told about: a bounded poll whose failure says what was still
// false and for how long (STYLE.md 17, docs/testing.md).
//
// Wait with a channel, a callback or testing/synctest where the code under
// test offers one; poll where it does not (a process's state in /proc, a
// file on disk, a row in the store, a count in Stats).
package poll

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// The pause between two checks starts at firstPause and doubles up to
// maxPause, and is never shorter than the last check took: a quick effect
// is seen within a millisecond or two, and a cond that runs a process or an
// HTTP request keeps the machine at most half busy.
const (
	firstPause = time.Millisecond
	maxPause   = 20 * time.Millisecond
)

// Until calls cond on the caller's goroutine until it returns true. Once
// within has passed with cond still false it fails t (t.Fatal), naming what
// and how long it waited. cond is checked once more at the bound, so an
// effect that lands during the last pause still counts.
func Until(t testing.TB, what string, within time.Duration, cond func() bool) {
	t.Helper()
	if err := Wait(context.Background(), what, within, cond); err != nil {
		t.Fatal(err)
	}
}

// Wait is Until for code that must not call t.Fatal (a goroutine other
// than the test's, a TestMain) or that has a context: it returns nil once
// cond holds, or an error naming what was still false when within passed or
// ctx ended.
func Wait(ctx context.Context, what string, within time.Duration, cond func() bool) error {
	start := time.Now()
	deadline := start.Add(within)
	pause := firstPause
	for checks := 1; ; checks++ {
		began := time.Now()
		if cond() {
			return nil
		}
		took := time.Since(began)
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("%s: still false after %s (%d checks)", what, time.Since(start).Round(time.Millisecond), checks)
		}
		if err := sleep(ctx, min(max(pause, took), left)); err != nil {
			return fmt.Errorf("%s: still false after %s (%d checks): %w", what, time.Since(start).Round(time.Millisecond), checks, err)
		}
		pause = min(2*pause, maxPause)
	}
}

// sleep pauses for d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
