package process_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/device/process"
	"github.com/chorus-edge/chorus/gateway/skillcred"
)

func TestStartPassesEnvironment(t *testing.T) {
	t.Setenv("CHORUS_TEST_LEAK", "agent-secret")
	cfg, pub := testConfig(t)
	cfg.ExtraEnv = []string{"EXTRA=1", "CHORUS_DEVICE=spoofed"}
	p, s := startSkill(t, cfg, "env > env.txt\npwd > pwd.txt\n")
	waitDone(t, p, 5*time.Second)
	if err := p.ExitErr(); err != nil {
		t.Fatalf("ExitErr = %v, want nil", err)
	}
	env := readEnv(t, filepath.Join(s.Dir, "env.txt"))
	want := map[string]string{
		"CHORUS_MQTT_URL":   cfg.MQTTURL,
		"CHORUS_USERNAME":   skillcred.Username(testDevice, s.ID),
		"CHORUS_DEVICE":     testDevice,
		"CHORUS_SKILL_ID":   s.ID,
		"CHORUS_BUS_PREFIX": "chorus/v1/" + testDevice + "/bus/",
		"CHORUS_SETTINGS":   filepath.Join(cfg.SettingsRoot, s.ID, "settings.json"),
		"CHORUS_BIN":        cfg.Bin,
		"EXTRA":             "1",
		"PATH":              os.Getenv("PATH"),
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if err := skillcred.Verify(pub, 1, testDevice, s.ID, env["CHORUS_PASSWORD"]); err != nil {
		t.Errorf("CHORUS_PASSWORD does not verify: %v", err)
	}
	if v, ok := env["CHORUS_TEST_LEAK"]; ok {
		t.Errorf("agent variable leaked into the skill: CHORUS_TEST_LEAK=%q", v)
	}
	pwd, err := os.ReadFile(filepath.Join(s.Dir, "pwd.txt"))
	if err != nil || strings.TrimSpace(string(pwd)) != s.Dir {
		t.Errorf("working directory = %q (%v), want %q", pwd, err, s.Dir)
	}
}

// TestStartDerivedCredentials: with skills.credentials "derived" the skill's
// password is the form the controller can reproduce from the stored hash of
// the device secret (docs/security.md, "Skill credential forms").
func TestStartDerivedCredentials(t *testing.T) {
	cfg, _ := testConfig(t)
	cfg.Credentials, cfg.DeviceSecret = process.CredentialsDerived, "device-secret"
	p, s := startSkill(t, cfg, "env > env.txt\n")
	waitDone(t, p, 5*time.Second)
	env := readEnv(t, filepath.Join(s.Dir, "env.txt"))
	stored := "sha256:" + hex.EncodeToString(skillcred.DeriveKey("device-secret"))
	if err := skillcred.VerifyDerived(stored, 1, testDevice, s.ID, env["CHORUS_PASSWORD"]); err != nil {
		t.Errorf("CHORUS_PASSWORD %q is not the derived form: %v", env["CHORUS_PASSWORD"], err)
	}
}

func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read env: %v", err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env
}

func TestExitStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		script   string
		wantCode int
		wantSig  syscall.Signal
		wantNil  bool
	}{
		{name: "status 0", script: "exit 0\n", wantNil: true},
		{name: "status 3", script: "exit 3\n", wantCode: 3},
		{name: "killed by signal", script: "kill -9 $$\n", wantCode: -1, wantSig: syscall.SIGKILL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, _ := testConfig(t)
			p, _ := startSkill(t, cfg, tt.script)
			waitDone(t, p, 5*time.Second)
			err := p.ExitErr()
			if tt.wantNil {
				if err != nil {
					t.Fatalf("ExitErr = %v, want nil", err)
				}
				return
			}
			var ee *process.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("ExitErr = %v, want *process.ExitError", err)
			}
			if ee.Code != tt.wantCode || ee.Signal != tt.wantSig || ee.Skill != "test.skill" {
				t.Errorf("ExitErr = %+v, want code %d signal %v", ee, tt.wantCode, tt.wantSig)
			}
		})
	}
}

func TestStopEscalatesToSIGKILL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		script  string
		grace   time.Duration
		ctx     func() (context.Context, context.CancelFunc)
		wantSig syscall.Signal
	}{
		{
			name:    "exits on SIGTERM",
			script:  "trap 'exit 0' TERM\necho ready\nwhile :; do sleep 0.05; done\n",
			grace:   10 * time.Second,
			wantSig: 0,
		},
		{
			name:    "ignores SIGTERM, killed after grace",
			script:  "trap '' TERM\necho ready\nwhile :; do sleep 0.05; done\n",
			grace:   300 * time.Millisecond,
			wantSig: syscall.SIGKILL,
		},
		{
			name:   "ignores SIGTERM, killed when ctx ends",
			script: "trap '' TERM\necho ready\nwhile :; do sleep 0.05; done\n",
			grace:  time.Hour,
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 300*time.Millisecond)
			},
			wantSig: syscall.SIGKILL,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, _ := testConfig(t)
			cfg.StopGrace = tt.grace
			p, _ := startSkill(t, cfg, tt.script)
			waitTail(t, p, "ready")
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()
			if err := p.Stop(ctx); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			select {
			case <-p.Done():
			default:
				t.Fatal("Stop returned before Done was closed")
			}
			var ee *process.ExitError
			gotSig := syscall.Signal(0)
			if errors.As(p.ExitErr(), &ee) {
				gotSig = ee.Signal
			}
			if gotSig != tt.wantSig {
				t.Errorf("ExitErr = %v, want signal %v", p.ExitErr(), tt.wantSig)
			}
		})
	}
}

func TestStopIsIdempotentAndConcurrent(t *testing.T) {
	t.Parallel()
	cfg, _ := testConfig(t)
	p, _ := startSkill(t, cfg, "echo ready\nwhile :; do sleep 0.05; done\n")
	waitTail(t, p, "ready")
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.Stop(context.Background()); err != nil {
				t.Errorf("Stop: %v", err)
			}
		}()
	}
	wg.Wait()
	if err := p.Stop(context.Background()); err != nil {
		t.Errorf("Stop after exit: %v", err)
	}
}

func TestStopAfterExit(t *testing.T) {
	t.Parallel()
	cfg, _ := testConfig(t)
	p, _ := startSkill(t, cfg, "exit 7\n")
	waitDone(t, p, 5*time.Second)
	if err := p.Stop(context.Background()); err != nil {
		t.Errorf("Stop after exit: %v", err)
	}
	var ee *process.ExitError
	if !errors.As(p.ExitErr(), &ee) || ee.Code != 7 {
		t.Errorf("ExitErr after Stop = %v, want status 7", p.ExitErr())
	}
}

func TestTailKeepsLastLines(t *testing.T) {
	t.Parallel()
	count := "i=1\nwhile [ $i -le 50 ]; do echo line$i%s; i=$((i+1)); done\n"
	tests := []struct {
		name   string
		script string
		stream string
	}{
		{name: "stdout", script: fmt.Sprintf(count, ""), stream: "stdout"},
		{name: "stderr", script: fmt.Sprintf(count, " >&2"), stream: "stderr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs logBuffer
			cfg, _ := testConfig(t)
			cfg.TailLines = 5
			cfg.Logger = logs.logger()
			p, _ := startSkill(t, cfg, tt.script)
			waitDone(t, p, 5*time.Second)
			got := p.Tail()
			want := []string{"line46", "line47", "line48", "line49", "line50"}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("Tail = %q, want %q", got, want)
			}
			for _, frag := range []string{`"skill_id":"test.skill"`, `"stream":"` + tt.stream + `"`, `"line":"line1"`} {
				if !strings.Contains(logs.String(), frag) {
					t.Errorf("log lacks %s:\n%s", frag, logs.String())
				}
			}
		})
	}
}

func TestStartRefusesChangedExec(t *testing.T) {
	t.Parallel()
	cfg, _ := testConfig(t)
	s := writeSkill(t, t.TempDir(), "test.skill", "exit 0\n")
	if err := os.WriteFile(s.Exec, []byte("#!/bin/sh\necho tampered > tampered.txt\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := process.NewLauncher(cfg).Start(s)
	if err == nil {
		_ = p.Stop(context.Background())
		t.Fatal("Start of a changed exec succeeded")
	}
	if !errors.Is(err, discovery.ErrChanged) || !strings.Contains(err.Error(), "changed since discovery; rescan to accept") {
		t.Errorf("Start error = %v, want one wrapping discovery.ErrChanged", err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "tampered.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Error("the changed exec ran")
	}
}

func TestStartRefusesBadConfig(t *testing.T) {
	t.Parallel()
	s := writeSkill(t, t.TempDir(), "test.skill", "exit 0\n")
	tests := []struct {
		name   string
		change func(*process.Config)
		want   string
	}{
		{name: "no key", change: func(c *process.Config) { c.Key = nil }, want: "signing key"},
		{name: "bad device", change: func(c *process.Config) { c.Device = "a/b" }, want: "device"},
		{name: "reserved device", change: func(c *process.Config) { c.Device = "gateway" }, want: "device"},
		{name: "derived without secret", change: func(c *process.Config) { c.Credentials = process.CredentialsDerived }, want: "device secret"},
		{name: "unknown form", change: func(c *process.Config) { c.Credentials = "plain" }, want: "credential form"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _ := testConfig(t)
			tt.change(&cfg)
			p, err := process.NewLauncher(cfg).Start(s)
			if err == nil {
				_ = p.Stop(context.Background())
				t.Fatal("Start succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "start skill test.skill") {
				t.Errorf("Start error = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestStartRefusesInvalidSkill(t *testing.T) {
	t.Parallel()
	cfg, _ := testConfig(t)
	_, err := process.NewLauncher(cfg).Start(discovery.Skill{ID: "x", Invalid: "no exec"})
	if err == nil || !strings.Contains(err.Error(), "no exec") {
		t.Errorf("Start of an invalid skill: err = %v, want the invalid reason", err)
	}
}

func TestGroupDiesWithSkill(t *testing.T) {
	t.Parallel()
	// The child ignores SIGTERM, so only the group SIGKILL ends it.
	child := "sh -c 'trap \"\" TERM; while :; do sleep 0.05; done' &\necho $! > child.pid\necho ready\n"
	tests := []struct {
		name string
		tail string
		stop bool
	}{
		{name: "stopped", tail: "trap 'exit 0' TERM\nwhile :; do sleep 0.05; done\n", stop: true},
		{name: "exits on its own", tail: "sleep 0.2\nexit 1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, _ := testConfig(t)
			p, s := startSkill(t, cfg, child+tt.tail)
			waitTail(t, p, "ready")
			pid := readPID(t, filepath.Join(s.Dir, "child.pid"))
			if !alive(pid) {
				t.Fatalf("child %d is not running", pid)
			}
			if tt.stop {
				if err := p.Stop(context.Background()); err != nil {
					t.Fatalf("Stop: %v", err)
				}
			}
			waitDone(t, p, 5*time.Second)
			waitFor(t, 5*time.Second, "the child to die", func() bool { return !alive(pid) })
		})
	}
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %q: %v", b, err)
	}
	return pid
}

// TestNoGoroutineLeak is not parallel: it counts the goroutines of the
// whole test binary.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	cfg, _ := testConfig(t)
	cfg.StopGrace = 100 * time.Millisecond
	for _, script := range []string{"exit 1\n", "trap '' TERM\necho ready\nwhile :; do sleep 0.05; done\n"} {
		s := writeSkill(t, t.TempDir(), "test.skill", script)
		p, err := process.NewLauncher(cfg).Start(s)
		if err != nil {
			t.Fatalf("start: %v", err)
		}
		if err := p.Stop(context.Background()); err != nil {
			t.Fatalf("Stop: %v", err)
		}
	}
	waitFor(t, 5*time.Second, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= before })
}

// TestRunningSkillsHoldNoThread: a skill waiting to exit parks its waiter
// on the runtime's poller (a pidfd), not in a blocking waitid, so N running
// skills do not cost the agent N OS threads.
func TestRunningSkillsHoldNoThread(t *testing.T) {
	cfg, _ := testConfig(t)
	cfg.StopGrace = 100 * time.Millisecond
	const n = 4
	for i := range n {
		s := writeSkill(t, t.TempDir(), "test.skill"+strconv.Itoa(i), "exec sleep 60\n")
		p, err := process.NewLauncher(cfg).Start(s)
		if err != nil {
			t.Fatalf("start: %v", err)
		}
		t.Cleanup(func() { _ = p.Stop(context.Background()) })
	}
	var waiters []string
	waitFor(t, 5*time.Second, "the skills' exit waiters", func() bool {
		waiters = exitWaiters()
		return len(waiters) >= n
	})
	for _, w := range waiters {
		if strings.HasPrefix(w, "goroutine ") && strings.Contains(strings.SplitN(w, "\n", 2)[0], "[syscall") {
			t.Fatalf("an exit waiter is blocked in a system call (one thread per skill):\n%s", w)
		}
	}
}

// exitWaiters returns the stacks of the goroutines in waitExitedNoReap.
func exitWaiters() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "process.waitExitedNoReap") {
			out = append(out, g)
		}
	}
	return out
}
