package leakcheck

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

// blockedHere says it has started, then parks until release closes; its
// name marks the goroutine.
func blockedHere(started chan<- struct{}, release <-chan struct{}) {
	close(started)
	<-release
}

// Check names a goroutine of this module that is still running, and passes
// once it has exited. The goroutine waits on a channel the test holds, so the
// first Check cannot pass by luck.
func TestCheckCatchesALeak(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	go blockedHere(started, release)
	// Until it runs, the goroutine's stack holds only the go statement's
	// wrapper, not blockedHere (seen on a loaded machine).
	<-started
	err := Check(50 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "leakcheck.blockedHere") {
		close(release)
		t.Fatalf("Check with a goroutine parked in blockedHere: %v, want its stack", err)
	}
	close(release)
	if err := Check(5 * time.Second); err != nil {
		t.Fatalf("Check after the goroutine exited: %v", err)
	}
}

type fakeM struct {
	code int
	run  func()
}

func (m fakeM) Run() int {
	if m.run != nil {
		m.run()
	}
	return m.code
}

// run turns passing tests that leave a goroutine behind into exit code 1
// with the stack printed, and keeps a failing run's own code. The cases run
// in sequence on this goroutine, not as subtests: a parent test waiting on
// its subtest is itself a goroutine of this module.
func TestRun(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	tests := []struct {
		name     string
		m        fakeM
		want     int
		wantDump bool
	}{
		{name: "clean", m: fakeM{code: 0}, want: 0},
		{name: "failed tests", m: fakeM{code: 2}, want: 2},
		{name: "leak", m: fakeM{code: 0, run: func() {
			started := make(chan struct{})
			go blockedHere(started, release)
			<-started
		}}, want: 1, wantDump: true},
	}
	for _, tc := range tests {
		var out bytes.Buffer
		got := run(tc.m, 50*time.Millisecond, &out)
		if got != tc.want {
			t.Errorf("%s: exit code %d, want %d; output:\n%s", tc.name, got, tc.want, out.String())
		}
		if dumped := strings.Contains(out.String(), "leakcheck.blockedHere"); dumped != tc.wantDump {
			t.Errorf("%s: leaked stack printed = %v, want %v; output:\n%s", tc.name, dumped, tc.wantDump, out.String())
		}
	}
}

// A goroutine that runs only standard-library code is ours when this module
// started it: `go io.Copy(…)` left running is a leak like any other.
func TestCheckCountsWhatThisModuleStarted(t *testing.T) {
	pr, pw := io.Pipe()
	go io.Copy(io.Discard, pr)
	err := Check(50 * time.Millisecond)
	pw.Close()
	if err == nil || !strings.Contains(err.Error(), "io.Copy") {
		t.Fatalf("Check with an io.Copy this test started: %v, want its stack", err)
	}
	if err := Check(5 * time.Second); err != nil {
		t.Fatalf("Check after the copy ended: %v", err)
	}
}
