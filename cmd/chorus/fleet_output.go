//go:build !chorus_agent

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// The output helpers of `chorus fleet`: --output json prints the API's
// envelope ({"devices": [...]}) indented; text prints aligned tables.

func fleetJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// fleetTable collects rows and aligns them on flush.
type fleetTable struct{ tw *tabwriter.Writer }

func newFleetTable(w io.Writer, header ...string) *fleetTable {
	t := &fleetTable{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.row(header...)
	return t
}

// row writes one line; cells are cleaned of tabs and newlines, which would
// break the alignment, and empty cells shown as "-".
func (t *fleetTable) row(cells ...string) {
	for i, c := range cells {
		c = strings.Join(strings.Fields(c), " ")
		if c == "" {
			c = "-"
		}
		cells[i] = c
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *fleetTable) flush() error { return t.tw.Flush() }

// fleetTime is a timestamp in UTC to the second, "-" when unset.
func fleetTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func fleetYesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// fleetYN is a compact tri-state: y, n or ? when unknown.
func fleetYN(b *bool) string {
	switch {
	case b == nil:
		return "?"
	case *b:
		return "y"
	}
	return "n"
}

// fleetClip shortens s to n runes for a fleetTable cell.
func fleetClip(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n-3]) + "..."
}

// fleetKV prints "key: value" lines aligned on the colon.
func fleetKV(w io.Writer, kv ...string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		if v == "" {
			v = "-"
		}
		fmt.Fprintf(tw, "%s:\t%s\n", kv[i], v)
	}
	return tw.Flush()
}

// compactJSON is raw on one line, "" when absent or null.
func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// fleetProgress prints a changing status line: rewritten in place on a
// terminal, else one line per change (a log stays readable). With a
// heartbeat, an unchanged line is repeated that often, with how long it has
// been waiting, so a quiet wait is visibly alive.
type fleetProgress struct {
	w         io.Writer
	tty       bool
	last      string
	heartbeat time.Duration
	now       func() time.Time // time.Now unless a test sets it
	start     time.Time        // of the wait
	shownAt   time.Time        // when a line was last written
}

func newFleetProgress(w io.Writer) *fleetProgress {
	p := &fleetProgress{w: w}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *fleetProgress) show(line string) {
	if p.now == nil {
		p.now = time.Now
	}
	now := p.now()
	if p.start.IsZero() {
		p.start = now
	}
	if line == p.last {
		if p.heartbeat <= 0 || now.Sub(p.shownAt) < p.heartbeat {
			return
		}
		p.write(fmt.Sprintf("%s (waiting %s)", line, now.Sub(p.start).Round(time.Second)), now)
		return
	}
	p.last = line
	p.write(line, now)
}

func (p *fleetProgress) write(line string, now time.Time) {
	p.shownAt = now
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K"+line)
		return
	}
	fmt.Fprintln(p.w, line)
}

// done ends the line on a terminal.
func (p *fleetProgress) done() {
	if p.tty && p.last != "" {
		fmt.Fprintln(p.w)
	}
}
