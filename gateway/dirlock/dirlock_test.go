package dirlock_test

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/gateway/dirlock"
)

// The test binary doubles as the other process: with DIRLOCK_HOLD set it
// takes the lock, says so and holds it until its stdin closes or it is killed.
func TestMain(m *testing.M) {
	if dir := os.Getenv("DIRLOCK_HOLD"); dir != "" {
		l, err := dirlock.Acquire(dir, "holder test")
		if err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(2)
		}
		os.Stdout.WriteString("locked\n")
		buf := make([]byte, 1)
		_, _ = os.Stdin.Read(buf) // EOF when the parent closes it
		_ = l.Release()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startHolder runs a second process holding dir's lock.
func startHolder(t *testing.T, dir string) (*exec.Cmd, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DIRLOCK_HOLD="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if strings.TrimSpace(s) != "locked" {
			t.Fatalf("holder: %q", s)
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("holder did not take the lock within 30s")
	}
	stop := func() { stdin.Close(); _ = cmd.Wait() }
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, stop
}

func TestSecondProcessIsRefusedWithTheHoldersPid(t *testing.T) {
	dir := t.TempDir()
	cmd, stop := startHolder(t, dir)

	_, err := dirlock.Acquire(dir, "chorus gateway")
	var held *dirlock.HeldError
	if !errors.As(err, &held) {
		t.Fatalf("Acquire while another process holds it: %v, want a HeldError", err)
	}
	if held.PID != cmd.Process.Pid || held.What != "holder test" {
		t.Fatalf("holder = pid %d %q, want pid %d %q", held.PID, held.What, cmd.Process.Pid, "holder test")
	}
	for _, want := range []string{dir, "pid " + itoa(cmd.Process.Pid), "kill " + itoa(cmd.Process.Pid), "--data-dir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not say %q", err, want)
		}
	}

	stop() // the holder releases and exits
	l, err := dirlock.Acquire(dir, "chorus gateway")
	if err != nil {
		t.Fatalf("Acquire after the holder exited: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestLockOfAKilledProcessIsFree(t *testing.T) {
	dir := t.TempDir()
	cmd, _ := startHolder(t, dir)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	l, err := dirlock.Acquire(dir, "chorus agent")
	if err != nil {
		t.Fatalf("Acquire after kill -9 of the holder: %v", err)
	}
	b, err := os.ReadFile(dir + "/" + dirlock.FileName)
	if err != nil {
		t.Fatal(err)
	}
	if want := itoa(os.Getpid()) + " chorus agent\n"; string(b) != want {
		t.Fatalf("lock file %q, want %q", b, want)
	}
	_ = l.Release()
	_ = l.Release() // idempotent
}

func TestSameProcessTwiceIsRefused(t *testing.T) {
	dir := t.TempDir()
	l, err := dirlock.Acquire(dir, "one")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if _, err := dirlock.Acquire(dir, "two"); err == nil {
		t.Fatal("a second Acquire of a held dir succeeded")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
