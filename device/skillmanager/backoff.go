package skillmanager

import (
	"strings"
	"time"

	"github.com/chorus-edge/chorus/gateway/state"
)

// Retry backoff of SKILL_MANAGER §4 step 3 (seeds/000; ovos-behaviour §1.8):
// after the n-th consecutive failed load of a skill, of any kind, the next
// attempt waits min(30 s · 2^(n-1), 900 s).
const (
	backoffBase = 30 * time.Second
	backoffMax  = 900 * time.Second
)

// backoff is the delay after n consecutive failures (n ≥ 1).
func backoff(n int) time.Duration {
	if n < 1 {
		return 0
	}
	d := backoffBase
	for i := 1; i < n; i++ {
		d *= 2
		if d >= backoffMax {
			return backoffMax
		}
	}
	return d
}

// failure is the retry record of one skill id. A success, an uninstall or a
// new version (a discovered Version different from the failed one) clears
// it.
type failure struct {
	attempts int
	last     time.Time
	err      string
	output   []string // the process's last lines (state.MaxOutputLines)
	version  string
}

// nextRetry is the earliest time a pass may try again.
func (f *failure) nextRetry() time.Time { return f.last.Add(backoff(f.attempts)) }

// recordFailureLocked counts one more failed load of id.
// proc, when the attempt started one, gives its last output lines.
func (m *Manager) recordFailureLocked(id, version string, err error, proc Process) *failure {
	f := m.failures[id]
	if f == nil || f.version != version {
		f = &failure{version: version}
		m.failures[id] = f
	}
	f.attempts++
	f.last = m.now()
	f.err = err.Error()
	f.output = nil
	if proc != nil {
		f.output = lastOutput(proc.Tail())
	}
	return f
}

// lastOutput keeps the last state.MaxOutputLines lines, each cut to
// state.MaxOutputLine bytes at a rune boundary.
func lastOutput(tail []string) []string {
	if n := len(tail); n > state.MaxOutputLines {
		tail = tail[n-state.MaxOutputLines:]
	}
	out := make([]string, 0, len(tail))
	for _, l := range tail {
		if len(l) > state.MaxOutputLine {
			l = strings.ToValidUTF8(l[:state.MaxOutputLine], "")
		}
		out = append(out, l)
	}
	return out
}

// retryDueLocked reports whether a pass may load s now, clearing a failure
// recorded against another version.
func (m *Manager) retryDueLocked(id, version string) bool {
	f := m.failures[id]
	if f == nil {
		return true
	}
	if f.version != version {
		delete(m.failures, id) // a new version clears the backoff
		return true
	}
	return !m.now().Before(f.nextRetry())
}
