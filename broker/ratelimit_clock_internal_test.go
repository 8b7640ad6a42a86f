package broker

import (
	"testing"
	"time"
)

// TestBucketClockJumps promises that a publish rate bucket neither locks a
// client out nor hands it more than its burst when the wall clock steps:
// after a step back it refills from the new time on (not an hour later),
// and a step forward of a day refills at most the burst.
func TestBucketClockJumps(t *testing.T) {
	const rate, burst = 1.0, 5
	t0 := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC) // no monotonic reading: the wall clock is all there is
	steps := []struct {
		name string
		at   time.Time
		want int // publishes allowed at this time
	}{
		{"full burst at start", t0, burst},
		{"empty a moment later", t0.Add(100 * time.Millisecond), 0},
		{"stepped back an hour: no refill", t0.Add(-time.Hour), 0},
		{"two seconds after the step back: two tokens, no lockout", t0.Add(-time.Hour + 2*time.Second), 2},
		{"stepped forward a day: the burst, no more", t0.Add(24 * time.Hour), burst},
		{"stepped back to the start: nothing", t0, 0},
		{"a second later: one", t0.Add(time.Second), 1},
	}
	b := newBucket(rate, burst, t0)
	for _, s := range steps {
		if got := drain(b, s.at); got != s.want {
			t.Fatalf("%s: %d publishes allowed, want %d", s.name, got, s.want)
		}
	}
}

// drain counts the publishes b allows at now until the first refusal.
func drain(b *bucket, now time.Time) int {
	n := 0
	for n < 1000 && b.allow(now) {
		n++
	}
	return n
}
