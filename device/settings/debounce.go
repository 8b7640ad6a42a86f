package settings

import (
	"sort"
	"time"
)

// debouncer holds the skills whose settings changed and when each may be
// reported. It is owned by the watcher's goroutine: no locking.
type debouncer struct {
	quiet   time.Duration
	pending map[string]time.Time // skill -> report after
	timer   *time.Timer          // fires at the earliest deadline; stopped when none
}

func newDebouncer(quiet time.Duration) *debouncer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &debouncer{quiet: quiet, pending: map[string]time.Time{}, timer: t}
}

// mark (re)starts skill's quiet period.
func (d *debouncer) mark(skill string) {
	d.pending[skill] = time.Now().Add(d.quiet)
	d.rearm()
}

// due removes and returns, sorted, the skills whose quiet period is over,
// and re-arms the timer for the rest.
func (d *debouncer) due(now time.Time) []string {
	var out []string
	for skill, at := range d.pending {
		if !at.After(now) {
			out = append(out, skill)
			delete(d.pending, skill)
		}
	}
	sort.Strings(out)
	d.rearm()
	return out
}

// rearm points the timer at the earliest pending deadline. Since Go 1.23,
// Reset on a timer discards a value not yet received, so no drain is needed.
func (d *debouncer) rearm() {
	var first time.Time
	for _, at := range d.pending {
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	if first.IsZero() {
		d.timer.Stop()
		return
	}
	d.timer.Reset(time.Until(first))
}

func (d *debouncer) stop() { d.timer.Stop() }
