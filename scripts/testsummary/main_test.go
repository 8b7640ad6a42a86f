package main

import (
	"io"
	"strings"
	"testing"
)

func streams(texts ...string) []io.Reader {
	var rs []io.Reader
	for _, t := range texts {
		rs = append(rs, strings.NewReader(t))
	}
	return rs
}

const stream = `{"Time":"2026-12-02T10:00:00Z","Action":"run","Package":"a","Test":"TestOK"}
{"Time":"2026-12-02T10:00:00Z","Action":"output","Package":"a","Test":"TestOK","Output":"quiet on pass\n"}
{"Time":"2026-12-02T10:00:01Z","Action":"pass","Package":"a","Test":"TestOK","Elapsed":1}
{"Time":"2026-12-02T10:00:01Z","Action":"output","Package":"a","Test":"TestBad","Output":"    bad_test.go:9: boom\n"}
{"Time":"2026-12-02T10:00:01Z","Action":"fail","Package":"a","Test":"TestBad","Elapsed":0}
{"Time":"2026-12-02T10:00:01Z","Action":"skip","Package":"a","Test":"TestSkip","Elapsed":0}
{"Time":"2026-12-02T10:00:02Z","Action":"output","Package":"a","Output":"FAIL\ta\t2.0s\n"}
{"Time":"2026-12-02T10:00:02Z","Action":"fail","Package":"a","Elapsed":2}
{"Time":"2026-12-02T10:00:02Z","Action":"output","Package":"b","Output":"ok  \tb\t0.5s\n"}
{"Time":"2026-12-02T10:00:03Z","Action":"pass","Package":"b","Elapsed":0.5}
`

// A failing test's output and the package lines are printed; a passing
// test's output is not; the summary counts each and the run fails.
func TestSummary(t *testing.T) {
	var out strings.Builder
	if run(streams(stream), &out, nil) {
		t.Fatal("a failed package reported as success")
	}
	got := out.String()
	for _, want := range []string{"bad_test.go:9: boom", "FAIL\ta\t2.0s", "ok  \tb\t0.5s", "1 passed, 1 failed, 1 skipped; packages failed: 1; wall time 3s"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "quiet on pass") {
		t.Errorf("a passing test's output was printed:\n%s", got)
	}
}

// All passing is success; an empty stream (go test never ran) is not.
func TestSummaryResult(t *testing.T) {
	var out strings.Builder
	if !run(streams(stream[strings.Index(stream, `{"Time":"2026-12-02T10:00:02Z","Action":"output","Package":"b"`):]), &out, nil) {
		t.Fatalf("all passing reported as failure:\n%s", out.String())
	}
	if run(streams(""), &out, nil) {
		t.Fatal("an empty stream reported as success")
	}
	if run(streams("# a\nbuild failed\n"), &out, nil) {
		t.Fatal("a stream with no package result reported as success")
	}
}

// A test still running when its package fails (a panic elsewhere, the
// timeout) has its output printed; build errors are printed as they come.
func TestSummaryUnfinishedAndBuildErrors(t *testing.T) {
	in := `{"Time":"2026-12-02T10:00:00Z","Action":"output","Package":"c","Test":"TestHang","Output":"waiting...\n"}
{"Time":"2026-12-02T10:00:09Z","Action":"output","Package":"c","Output":"panic: test timed out after 9s\n"}
{"Time":"2026-12-02T10:00:09Z","Action":"fail","Package":"c","Elapsed":9}
{"ImportPath":"d","Action":"build-output","Output":"d/x.go:3:1: syntax error\n"}
{"Time":"2026-12-02T10:00:09Z","Action":"output","Package":"d","Output":"FAIL\td [build failed]\n"}
{"Time":"2026-12-02T10:00:09Z","Action":"fail","Package":"d","Elapsed":0}
`
	var out strings.Builder
	if run(streams(in), &out, nil) {
		t.Fatal("failures reported as success")
	}
	for _, want := range []string{"--- UNFINISHED: TestHang", "waiting...", "panic: test timed out", "d/x.go:3:1: syntax error", "packages failed: 2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// Two streams are one suite: their packages are counted together, every
// line is kept whole in the raw copy, and a stream that reports no package
// (its go test died before running any) fails the run even when the other
// passed.
func TestSummaryStreams(t *testing.T) {
	a := `{"Time":"2026-12-02T10:00:00Z","Action":"pass","Package":"a","Test":"TestA","Elapsed":1}
{"Time":"2026-12-02T10:00:01Z","Action":"pass","Package":"a","Elapsed":1}
`
	b := `{"Time":"2026-12-02T10:00:00Z","Action":"pass","Package":"b","Test":"TestB","Elapsed":1}
{"Time":"2026-12-02T10:00:04Z","Action":"pass","Package":"b","Elapsed":4}
`
	var out, raw strings.Builder
	if !run(streams(a, b), &out, &raw) {
		t.Fatalf("two passing streams reported as failure:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "2 passed, 0 failed, 0 skipped; packages failed: 0; wall time 4s") {
		t.Errorf("the streams were not summarised as one suite:\n%s", out.String())
	}
	got := strings.Split(strings.TrimSpace(raw.String()), "\n")
	want := strings.Split(strings.TrimSpace(a+b), "\n")
	if len(got) != len(want) {
		t.Fatalf("raw copy has %d lines, want %d:\n%s", len(got), len(want), raw.String())
	}
	for _, w := range want {
		if !strings.Contains(raw.String(), w+"\n") {
			t.Errorf("raw copy lacks the whole line %s", w)
		}
	}
	out.Reset()
	if run(streams(a, "go: no such flag -x\n"), &out, nil) {
		t.Fatal("a stream with no package result reported as success")
	}
	if !strings.Contains(out.String(), "stream 2 holds no package result") || !strings.Contains(out.String(), "go: no such flag -x") {
		t.Errorf("the dead stream is not named, or its text is lost:\n%s", out.String())
	}
}

// A package run by test2json directly has no "ok" line of its own; the
// summary prints one as go test would.
func TestSummaryOKLineForADirectRun(t *testing.T) {
	in := `{"Time":"2026-12-02T10:00:00Z","Action":"output","Package":"e","Output":"PASS\n"}
{"Time":"2026-12-02T10:00:02Z","Action":"pass","Package":"e","Elapsed":2.5}
`
	var out strings.Builder
	if !run(streams(in), &out, nil) {
		t.Fatalf("a passing direct run reported as failure:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "ok  \te\t2.500s\n") {
		t.Errorf("no ok line for the direct run:\n%s", out.String())
	}
}
