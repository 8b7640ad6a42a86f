//go:build !chorus_agent

package main

import (
	"bytes"
	"testing"
	"time"
)

// The progress line is written when it changes, and an unchanged one again
// once per heartbeat with how long the wait has lasted (an injected clock).
func TestFleetProgressHeartbeat(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &fleetProgress{w: &buf, heartbeat: 10 * time.Second, now: func() time.Time { return at }}
	steps := []struct {
		after time.Duration
		line  string
	}{
		{0, "rollout 1 in_progress: 0/3"},
		{5 * time.Second, "rollout 1 in_progress: 0/3"}, // unchanged, before the heartbeat
		{6 * time.Second, "rollout 1 in_progress: 0/3"}, // heartbeat
		{1 * time.Second, "rollout 1 in_progress: 1/3"}, // changed
		{9 * time.Second, "rollout 1 in_progress: 1/3"}, // 9 s since the last line
		{1 * time.Second, "rollout 1 in_progress: 1/3"}, // heartbeat
	}
	for _, s := range steps {
		at = at.Add(s.after)
		p.show(s.line)
	}
	want := "rollout 1 in_progress: 0/3\n" +
		"rollout 1 in_progress: 0/3 (waiting 11s)\n" +
		"rollout 1 in_progress: 1/3\n" +
		"rollout 1 in_progress: 1/3 (waiting 22s)\n"
	if got := buf.String(); got != want {
		t.Errorf("progress =\n%s\nwant\n%s", got, want)
	}
}
