package skillmanager

import (
	"testing"
	"time"
)

func TestBackoffDelay(t *testing.T) {
	tests := []struct {
		n    int
		want time.Duration
	}{
		{0, 0}, {1, 30 * time.Second}, {2, 60 * time.Second}, {3, 120 * time.Second},
		{4, 240 * time.Second}, {5, 480 * time.Second}, {6, 900 * time.Second},
		{7, 900 * time.Second}, {100, 900 * time.Second},
	}
	for _, tc := range tests {
		if got := backoff(tc.n); got != tc.want {
			t.Errorf("backoff(%d) = %s, want %s", tc.n, got, tc.want)
		}
	}
}
