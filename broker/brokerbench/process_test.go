package brokerbench

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// serveEnv makes the test binary a broker process (ServeBroker) of the
// kind it names, so StartProcess is tested against a real child.
const serveEnv = "CHORUS_BROKERBENCH_SERVE"

func TestMain(m *testing.M) {
	if kind := os.Getenv(serveEnv); kind != "" {
		if err := ServeBroker(context.Background(), kind, os.Getenv(serveEnv+"_DIR"), os.Stdin, os.Stdout); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// childProcess is Config.Process for the test binary.
func childProcess() func(kind, dataDir string) *exec.Cmd {
	return func(kind, dataDir string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), serveEnv+"="+kind, serveEnv+"_DIR="+dataDir)
		cmd.Stderr = os.Stderr
		return cmd
	}
}

// Run with Process: Chorus's broker (with its store), bare mochi and Chorus
// without its store each run in a child process; the logins cross the
// process boundary (a Chorus broker refuses a wrong one), every message is
// delivered, and Chorus's counters come back from its process.
func TestRunInProcessesOfTheirOwn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a bound, not the expected time
	defer cancel()
	var kinds []string
	proc := childProcess()
	rep, err := Run(ctx, Config{NoStore: true, Loads: []Load{{QoS: 1, FanOut: 2, Messages: 20}},
		Process: func(kind, dataDir string) *exec.Cmd { kinds = append(kinds, kind); return proc(kind, dataDir) }})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{KindChorus, KindBareMochi, KindChorusNoStore}; !slices.Equal(kinds, want) {
		t.Errorf("processes started %v, want %v", kinds, want)
	}
	for _, r := range rep.Results {
		if r.Delivered != 40 {
			t.Errorf("%s delivered %d of 40 at QoS 1", r.Broker, r.Delivered)
		}
	}
	if !strings.Contains(rep.Notes[0], "process of its own") {
		t.Errorf("first note %q, want the brokers' placement", rep.Notes[0])
	}
	if last := rep.Notes[len(rep.Notes)-1]; !strings.HasPrefix(last, "chorus broker counters: ") || strings.HasPrefix(last, "chorus broker counters: 0 received") {
		t.Errorf("last note %q, want Chorus's broker counters from its process", last)
	}
}

// A broker process that cannot start its broker says why, and StartProcess
// returns that; one that exits before writing its address is an error that
// points at its stderr; Close stops a running one.
func TestStartProcessErrors(t *testing.T) {
	proc := childProcess()
	if _, err := StartProcess(proc("no-such-broker", "")); err == nil || !strings.Contains(err.Error(), `unknown broker "no-such-broker"`) {
		t.Errorf("unknown kind: %v, want the child's refusal", err)
	}
	if _, err := StartProcess(exec.Command("true")); err == nil || !strings.Contains(err.Error(), "exited first") {
		t.Errorf("a child that exits at once: %v, want an error naming that", err)
	}
	b, err := StartProcess(proc(KindBareMochi, ""))
	if err != nil {
		t.Fatal(err)
	}
	if b.Name != KindBareMochi || b.Login != nil || b.Addr == "" {
		t.Errorf("bare mochi's process served %+v, want its name, an address and no login", b.Target)
	}
	if err := b.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}
