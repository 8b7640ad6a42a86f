// Command testsummary reads `go test -json` events and prints what `go test`
// would (each package's ok/FAIL line, and the whole output of a failing
// test or package), then a summary: passed, failed and skipped tests per
// package and the total time. It exits 1 when any package failed or any
// stream holds no package result.
//
//	testsummary [-json FILE] [STREAM...]
//
// With no STREAM it reads stdin. Several streams (scripts/test.sh gives two
// `go test` runs as process substitutions) are read at once and summarised
// as one suite; -json FILE keeps every line read, whole lines only, so two
// streams' events never interleave within a line.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// pkgResult is what the summary says of one package.
type pkgResult struct {
	pass, fail, skip int
	status           string // ok, FAIL, skip (no test files)
	elapsed          float64
	output           []string            // package-level output lines
	tests            map[string][]string // output of each running test, dropped when it passes
}

type summary struct {
	pkgs  map[string]*pkgResult
	start time.Time
	end   time.Time
	out   io.Writer
}

func newSummary(out io.Writer) *summary {
	return &summary{pkgs: map[string]*pkgResult{}, out: out}
}

func (s *summary) pkg(name string) *pkgResult {
	p := s.pkgs[name]
	if p == nil {
		p = &pkgResult{tests: map[string][]string{}}
		s.pkgs[name] = p
	}
	return p
}

// add takes one event, printing what go test would print at that point.
func (s *summary) add(e event) {
	if s.start.IsZero() || e.Time.Before(s.start) {
		s.start = e.Time
	}
	if e.Time.After(s.end) {
		s.end = e.Time
	}
	if e.Action == "build-output" {
		fmt.Fprint(s.out, e.Output) // compile errors (Go 1.24+)
		return
	}
	if e.Package == "" {
		return
	}
	p := s.pkg(e.Package)
	if e.Test != "" {
		s.testEvent(p, e)
		return
	}
	switch e.Action {
	case "output":
		p.output = append(p.output, e.Output)
	case "pass", "fail", "skip":
		p.elapsed = e.Elapsed
		p.status = map[string]string{"pass": "ok", "fail": "FAIL", "skip": "skip"}[e.Action]
		if e.Action == "fail" {
			s.printUnfinished(p) // tests that never ended: a panic or a timeout
			for _, l := range p.output {
				fmt.Fprint(s.out, l)
			}
		} else if line := lastResultLine(p.output); line != "" {
			fmt.Fprint(s.out, line)
		} else if e.Action == "pass" {
			// A test binary run under test2json directly (scripts/test.sh's
			// end-to-end package) ends with PASS, not go test's ok line.
			fmt.Fprintf(s.out, "ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
		}
	}
}

func (s *summary) printUnfinished(p *pkgResult) {
	for _, name := range slices.Sorted(maps.Keys(p.tests)) {
		fmt.Fprintf(s.out, "--- UNFINISHED: %s\n", name)
		for _, l := range p.tests[name] {
			fmt.Fprint(s.out, l)
		}
	}
}

func (s *summary) testEvent(p *pkgResult, e event) {
	switch e.Action {
	case "output":
		p.tests[e.Test] = append(p.tests[e.Test], e.Output)
	case "pass":
		p.pass++
		delete(p.tests, e.Test)
	case "skip":
		p.skip++
		delete(p.tests, e.Test)
	case "fail":
		p.fail++
		for _, l := range p.tests[e.Test] {
			fmt.Fprint(s.out, l)
		}
		delete(p.tests, e.Test)
	}
}

// lastResultLine is the "ok  pkg 1.2s" line among a package's output.
func lastResultLine(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "ok ") || strings.HasPrefix(lines[i], "?  ") {
			return lines[i]
		}
	}
	return ""
}

// report prints the summary table and says whether everything passed.
func (s *summary) report() bool {
	names := slices.Sorted(maps.Keys(s.pkgs))
	fmt.Fprintln(s.out, "\n== summary")
	w := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "package\tresult\tpassed\tfailed\tskipped\ttime\t")
	var pass, fail, skip, failedPkgs, results int
	for _, n := range names {
		p := s.pkgs[n]
		if p.status == "" {
			p.status = "no result"
			failedPkgs++
		} else {
			results++
		}
		if p.status == "FAIL" {
			failedPkgs++
		}
		pass, fail, skip = pass+p.pass, fail+p.fail, skip+p.skip
		if p.status == "skip" {
			continue // no test files
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%.1fs\t\n", strings.TrimPrefix(n, "github.com/chorus-edge/chorus/"), p.status, p.pass, p.fail, p.skip, p.elapsed)
	}
	w.Flush()
	fmt.Fprintf(s.out, "tests: %d passed, %d failed, %d skipped; packages failed: %d; wall time %s\n",
		pass, fail, skip, failedPkgs, s.end.Sub(s.start).Round(time.Second))
	return failedPkgs == 0 && results > 0
}

// line is one line of one stream; err ends the stream (io.EOF when it
// ended cleanly).
type line struct {
	stream int
	text   []byte
	err    error
}

// scan sends each line of in to lines, then the reason it ended.
func scan(stream int, in io.Reader, lines chan<- line) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		lines <- line{stream: stream, text: slices.Clone(sc.Bytes())}
	}
	err := sc.Err()
	if err == nil {
		err = io.EOF
	}
	lines <- line{stream: stream, err: err}
}

// run summarises the streams as one suite, copying every line to raw when
// it is not nil. It is the only owner of the summary: the streams' readers
// hand it lines over a channel.
func run(ins []io.Reader, out, raw io.Writer) bool {
	s := newSummary(out)
	lines := make(chan line)
	for i, in := range ins {
		go scan(i, in, lines)
	}
	results := make([]int, len(ins)) // package results per stream
	ok := true
	for open := len(ins); open > 0; {
		l := <-lines
		if l.err != nil {
			open--
			if l.err != io.EOF {
				fmt.Fprintf(out, "testsummary: reading go test -json (stream %d): %v\n", l.stream+1, l.err)
				ok = false
			}
			continue
		}
		if raw != nil {
			raw.Write(append(l.text, '\n'))
		}
		var e event
		if err := json.Unmarshal(l.text, &e); err != nil {
			fmt.Fprintln(out, string(l.text)) // build errors and the like come as plain text
			continue
		}
		if e.Package != "" && e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip") {
			results[l.stream]++
		}
		s.add(e)
	}
	for i, n := range results {
		if n == 0 && len(ins) > 1 {
			fmt.Fprintf(out, "testsummary: stream %d holds no package result (its go test never ran)\n", i+1)
			ok = false
		}
	}
	return s.report() && ok
}

func main() { os.Exit(summarise()) }

// summarise runs the command and returns its exit code, after the raw copy
// is flushed and the files are closed.
func summarise() int {
	rawPath := flag.String("json", "", "also write every line read to `FILE`")
	flag.Parse()
	var raw io.Writer
	if *rawPath != "" {
		f, err := os.Create(*rawPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testsummary: keeping the stream:", err)
			return 2
		}
		defer f.Close()
		w := bufio.NewWriter(f)
		defer w.Flush()
		raw = w
	}
	ins := []io.Reader{os.Stdin}
	if flag.NArg() > 0 {
		ins = ins[:0]
		for _, name := range flag.Args() {
			f, err := os.Open(name)
			if err != nil {
				fmt.Fprintln(os.Stderr, "testsummary: opening a stream:", err)
				return 2
			}
			defer f.Close()
			ins = append(ins, f)
		}
	}
	if !run(ins, os.Stdout, raw) {
		return 1
	}
	return 0
}
