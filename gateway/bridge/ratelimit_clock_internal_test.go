package bridge

import (
	"testing"
	"time"
)

// TestBucketClockJumps promises that a satellite's relay rate bucket
// neither stops relaying nor lets a burst beyond its size through when the
// wall clock steps back an hour or forward a day.
func TestBucketClockJumps(t *testing.T) {
	const rate, burst = 1.0, 5
	t0 := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)
	steps := []struct {
		name string
		at   time.Time
		want int // messages relayed at this time
	}{
		{"full burst at start", t0, burst},
		{"stepped back an hour: no refill", t0.Add(-time.Hour), 0},
		{"two seconds after the step back: two tokens, no lockout", t0.Add(-time.Hour + 2*time.Second), 2},
		{"stepped forward a day: the burst, no more", t0.Add(24 * time.Hour), burst},
		{"stepped back to the start: nothing", t0, 0},
		{"a second later: one", t0.Add(time.Second), 1},
	}
	b := newBucket(rate, burst, t0)
	for _, s := range steps {
		n := 0
		for n < 1000 && b.take(s.at) {
			n++
		}
		if n != s.want {
			t.Fatalf("%s: %d messages relayed, want %d", s.name, n, s.want)
		}
	}
}
