package process_test

import (
	"bufio"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/device/process"
	"github.com/chorus-edge/chorus/device/skilluser/skillusertest"
	"github.com/chorus-edge/chorus/gateway/leakcheck"
)

// The test binary doubles as the trampoline (chorus skill-exec) and as an
// agent process that a test can kill -9 or run as another user.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == process.TrampolineCommand {
		fmt.Fprintln(os.Stderr, process.ExecMain(os.Args[2:]))
		os.Exit(126)
	}
	if c := os.Getenv(childEnv); c != "" {
		os.Exit(runChild(c))
	}
	os.Exit(leakcheck.Run(m)) // docs/testing.md: no goroutine of ours outlives the tests
}

const childEnv = "CHORUS_PROCESS_CHILD"

// child is what a child agent process does: start the skill in Root/ID
// (with Identity when UID is set), print "PID <pid>", then either print its
// output once it exits ("TAIL <line>"), or wait to be killed.
type child struct {
	Root, ID, Records, Home string
	UID                     uint32
	DropCaps, WaitExit      bool
	Trampoline              []string
}

func runChild(spec string) int {
	var c child
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cat, err := discovery.Discover(discovery.Config{Bundled: []string{c.Root}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	s, _ := cat.Get(c.ID)
	cfg := process.Config{
		MQTTURL: "mqtt://127.0.0.1:1883", Device: testDevice, Key: ed25519.NewKeyFromSeed(make([]byte, 32)),
		KeyVersion: 1, StopGrace: time.Second, Records: c.Records, DropCaps: c.DropCaps, Trampoline: c.Trampoline,
	}
	if c.UID != 0 {
		cfg.Identity = func(string) (process.Identity, error) {
			return process.Identity{UID: c.UID, GID: c.UID, Home: c.Home}, nil
		}
	}
	p, err := process.NewLauncher(cfg).Start(s)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("PID %d\n", p.PID())
	if !c.WaitExit {
		select {} // until killed
	}
	<-p.Done()
	for _, l := range p.Tail() {
		fmt.Printf("TAIL %s\n", l)
	}
	// How the skill ended, so a test that finds its output short can say
	// whether it was killed (the skill's own lines are checked by content,
	// so this extra line changes no verdict).
	fmt.Printf("TAIL [skill ended: %s]\n", describeExit(p.ExitErr()))
	return 0
}

// startChild runs a child agent process (wrapped by prefix, e.g. setpriv,
// when given) and returns it with the pid of its skill.
func startChild(t *testing.T, c child, prefix ...string) (*exec.Cmd, *lineReader, int) {
	t.Helper()
	spec, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	bin := c.Trampoline[0]
	argv := append(append([]string(nil), prefix...), bin, "-test.run=^$")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	lr := newLineReader(out)
	go func() {
		err := cmd.Wait()
		lr.exit <- describeExit(err) // buffered: tailOf may never ask
		close(done)
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	var pid int
	line := lr.next(t, 10*time.Second)
	if _, err := fmt.Sscanf(line, "PID %d", &pid); err != nil {
		t.Fatalf("child agent said %q, want PID <pid>", line)
	}
	return cmd, lr, pid
}

// childSkill writes a skill for a child agent in a directory every uid can
// reach, and returns the child spec for it.
func childSkill(t *testing.T, bin, script string) child {
	t.Helper()
	root := openDir(t)
	writeSkill(t, root, "test.skill", script)
	return child{Root: root, ID: "test.skill", Trampoline: []string{bin, process.TrampolineCommand}}
}

func describeExit(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// tailOf reads the child's TAIL lines until it exits; the last two say how
// the skill ended and how the child agent itself did (a test that finds the
// skill's output short can tell a killed agent from a killed skill).
func tailOf(t *testing.T, lr *lineReader) []string {
	t.Helper()
	var out []string
	for {
		line, ok := lr.nextOrEOF(t, 10*time.Second)
		if !ok {
			select {
			case how := <-lr.exit:
				return append(out, "[child agent ended: "+how+"]")
			case <-time.After(10 * time.Second):
				t.Fatalf("the child agent closed its output but did not exit within 10s; its output: %q", out)
				return nil
			}
		}
		if rest, ok := strings.CutPrefix(line, "TAIL "); ok {
			out = append(out, rest)
		}
	}
}

func openDir(t *testing.T) string { return skillusertest.OpenDir(t) }

// lineReader hands out the lines of a child's stdout, and once it has
// exited, how it ended.
type lineReader struct {
	lines chan string
	exit  chan string
}

func newLineReader(r io.Reader) *lineReader {
	lr := &lineReader{lines: make(chan string, 64), exit: make(chan string, 1)}
	go func() {
		defer close(lr.lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lr.lines <- sc.Text()
		}
	}()
	return lr
}

// next returns the next line within d.
func (lr *lineReader) next(t *testing.T, d time.Duration) string {
	t.Helper()
	line, ok := lr.nextOrEOF(t, d)
	if !ok {
		t.Fatal("child agent exited before printing a line")
	}
	return line
}

// nextOrEOF returns the next line, or false at the end of the output.
func (lr *lineReader) nextOrEOF(t *testing.T, d time.Duration) (string, bool) {
	t.Helper()
	select {
	case line, ok := <-lr.lines:
		return line, ok
	case <-time.After(d):
		t.Fatalf("no line from the child agent within %s", d)
		return "", false
	}
}
