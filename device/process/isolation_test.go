package process_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/device/process"
	"github.com/chorus-edge/chorus/device/skilluser/skillusertest"
	"github.com/chorus-edge/chorus/gateway/poll"
	"golang.org/x/sys/unix"
)

// probeScript prints who the skill is and what it holds, then tries what a
// malicious skill would against its agent: read a file only the agent may
// read, read the agent's environment, signal it.
const probeScript = `echo "uid=$(id -u) gid=$(id -g) groups=$(id -G)"
grep -E '^(CapInh|CapPrm|CapEff|CapAmb|NoNewPrivs):' /proc/self/status | tr -d '\t'
echo "home=$HOME user=$USER"
if cat "$SECRET" >/dev/null 2>&1; then echo read-secret=yes; else echo read-secret=no; fi
if cat /proc/$PPID/environ >/dev/null 2>&1; then echo read-environ=yes; else echo read-environ=no; fi
if kill -0 $PPID 2>/dev/null; then echo signal-agent=yes; else echo signal-agent=no; fi
`

// wantProbe checks probeScript's output for a skill running as uid with no
// privilege left.
func wantProbe(t *testing.T, tail []string, uid uint32, home string) {
	t.Helper()
	id := strconv.FormatUint(uint64(uid), 10)
	want := []string{
		"uid=" + id + " gid=" + id + " groups=" + id,
		"CapInh:0000000000000000", "CapPrm:0000000000000000", "CapEff:0000000000000000",
		"CapAmb:0000000000000000", "NoNewPrivs:1",
		"home=" + home + " user=",
		"read-secret=no", "read-environ=no", "signal-agent=no",
	}
	got := strings.Join(tail, "\n")
	for _, w := range want {
		if !contains(tail, w) {
			t.Errorf("skill output lacks %q:\n%s", w, got)
		}
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

// secretFile writes a file only its owner (root here, the agent) may read,
// as docs/install.md prescribes for the agent's credentials.
func secretFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(openDir(t), "agent.json")
	if err := os.WriteFile(path, []byte(`{"password":"device-secret"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// skillHome makes a home owned by uid, as skilluser.Accounts does.
func skillHome(t *testing.T, uid uint32) string {
	t.Helper()
	home := filepath.Join(openDir(t), "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, int(uid), int(uid)); err != nil {
		t.Fatal(err)
	}
	return home
}

// A skill with an identity runs under that uid and gid only, with no
// capability and no_new_privs, and cannot read the agent's secrets or signal
// it (issue 14, finding 1).
func TestIsolatedSkillAsRootAgent(t *testing.T) {
	skillusertest.RequireRoot(t)
	uid := skillusertest.Range(t).First
	cfg, _ := testConfig(t)
	home := skillHome(t, uid)
	cfg.Identity = func(string) (process.Identity, error) { return process.Identity{UID: uid, GID: uid, Home: home}, nil }
	cfg.ExtraEnv = []string{"SECRET=" + secretFile(t)}
	s := writeSkill(t, openDir(t), "test.skill", probeScript)
	p, err := process.NewLauncher(cfg).Start(s)
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, p, 10*time.Second)
	if err := p.ExitErr(); err != nil {
		t.Fatalf("skill: %v; tail %q", err, p.Tail())
	}
	wantProbe(t, p.Tail(), uid, home)
}

// An agent that is not root but holds CAP_SETUID, CAP_SETGID, CAP_CHOWN and
// CAP_KILL as ambient capabilities (systemd's AmbientCapabilities=, here
// set up by setpriv) passes none of them to the skill: the ambient set
// survives execve and a setuid between two non-root uids keeps them, so the
// trampoline clears them.
func TestIsolatedSkillAsNonRootAgentWithAmbientCaps(t *testing.T) {
	skillusertest.RequireRoot(t)
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) not installed")
	}
	r := skillusertest.Range(t)
	agentUID, skillUID := r.First, r.First+1
	bin := skillusertest.Executable(t)
	c := childSkill(t, bin, probeScript+"grep -E '^CapEff:' /proc/$PPID/status | tr -d '\\t' | sed 's/^/agent-/'\n")
	c.UID, c.Home, c.WaitExit = skillUID, skillHome(t, skillUID), true
	caps := "+setuid,+setgid,+chown,+kill"
	_, lr, _ := startChild(t, c, setpriv,
		fmt.Sprintf("--reuid=%d", agentUID), fmt.Sprintf("--regid=%d", agentUID), "--clear-groups",
		"--inh-caps="+caps, "--ambient-caps="+caps)
	tail := tailOf(t, lr)
	wantProbe(t, tail, skillUID, c.Home)
	if contains(tail, "agent-CapEff:0000000000000000") || !hasPrefix(tail, "agent-CapEff:") {
		t.Errorf("the agent itself held no capability; the test proves nothing:\n%s", strings.Join(tail, "\n"))
	}
}

// Without an identity (isolation none) an agent holding capabilities still
// passes none on: DropCaps runs the skill through the trampoline, which
// clears them, under the agent's own uid.
func TestDropCapsWithoutIdentity(t *testing.T) {
	skillusertest.RequireRoot(t)
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) not installed")
	}
	agentUID := skillusertest.Range(t).First
	bin := skillusertest.Executable(t)
	c := childSkill(t, bin, "echo \"uid=$(id -u)\"\ngrep -E '^(CapInh|CapPrm|CapEff|CapAmb|NoNewPrivs):' /proc/self/status | tr -d '\\t'\n")
	c.DropCaps, c.WaitExit = true, true
	caps := "+setuid,+setgid,+chown,+kill"
	_, lr, _ := startChild(t, c, setpriv,
		fmt.Sprintf("--reuid=%d", agentUID), fmt.Sprintf("--regid=%d", agentUID), "--clear-groups",
		"--inh-caps="+caps, "--ambient-caps="+caps)
	tail := tailOf(t, lr)
	for _, w := range []string{fmt.Sprintf("uid=%d", agentUID), "CapInh:0000000000000000", "CapPrm:0000000000000000",
		"CapEff:0000000000000000", "CapAmb:0000000000000000", "NoNewPrivs:1"} {
		if !contains(tail, w) {
			t.Errorf("skill output lacks %q:\n%s", w, strings.Join(tail, "\n"))
		}
	}
}

func hasPrefix(lines []string, p string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// A skill dies with its agent: kill -9 of the agent kills the skill through
// the parent-death signal, whether or not it runs under its own uid (issue
// 14, finding 4).
func TestSkillDiesWithAgent(t *testing.T) {
	skillusertest.RequireRoot(t)
	for _, isolated := range []bool{false, true} {
		t.Run(fmt.Sprintf("isolated=%v", isolated), func(t *testing.T) {
			bin := skillusertest.Executable(t)
			c := childSkill(t, bin, "trap '' TERM\nwhile :; do sleep 0.05; done\n")
			if isolated {
				c.UID = skillusertest.Range(t).First
				c.Home = skillHome(t, c.UID)
			}
			agent, _, pid := startChild(t, c)
			poll.Until(t, "the skill to run", 5*time.Second, func() bool { return alive(pid) })
			if err := agent.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			poll.Until(t, fmt.Sprintf("skill %d to die with its agent", pid), 5*time.Second, func() bool { return !alive(pid) })
		})
	}
}

// What a skill started outlives a SIGKILLed agent (only the skill's own
// process gets the parent-death signal); the next agent's ReapOrphans kills
// it from the records file (issue 14, finding 4).
func TestReapOrphans(t *testing.T) {
	skillusertest.RequireRoot(t)
	bin := skillusertest.Executable(t)
	c := childSkill(t, bin, "sleep 300 &\necho $! > sleeper.pid\nwhile :; do sleep 0.05; done\n")
	c.Records = filepath.Join(t.TempDir(), "running.json")
	agent, _, pid := startChild(t, c)
	pidFile := filepath.Join(c.Root, c.ID, "sleeper.pid")
	poll.Until(t, "the sleeper's pid file", 5*time.Second, func() bool {
		b, err := os.ReadFile(pidFile)
		return err == nil && strings.HasSuffix(string(b), "\n")
	})
	sleeper := readPID(t, pidFile)
	// Killed through a pidfd: once reaped, its bare pid may be another
	// test's process (pid_max can be 32768, and the suite wraps it).
	pidfd, err := unix.PidfdOpen(sleeper, 0)
	if err != nil {
		t.Fatalf("pidfd of the sleeper %d: %v", sleeper, err)
	}
	t.Cleanup(func() {
		_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
		_ = unix.Close(pidfd)
	})
	if err := agent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the skill to die with its agent", 5*time.Second, func() bool { return !alive(pid) })
	if !alive(sleeper) {
		t.Fatal("the skill's child died too; no orphan to reap")
	}

	cfg, _ := testConfig(t)
	cfg.Records = c.Records
	n, err := process.NewLauncher(cfg).ReapOrphans()
	if err != nil || n != 1 {
		t.Fatalf("ReapOrphans = %d, %v; want 1 group", n, err)
	}
	poll.Until(t, "the orphan to be reaped", 5*time.Second, func() bool { return !alive(sleeper) })
	if n, err := process.NewLauncher(cfg).ReapOrphans(); n != 0 || err != nil {
		t.Errorf("second ReapOrphans = %d, %v; want nothing left", n, err)
	}
}

// A record whose leader pid now belongs to another process (recycled) is
// never signalled.
func TestReapOrphansSkipsRecycledPID(t *testing.T) {
	skillusertest.RequireRoot(t)
	other := exec.Command("sleep", "300")
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	records := filepath.Join(t.TempDir(), "running.json")
	rec := fmt.Sprintf(`[{"pid":%d,"start":1,"boot_id":%q,"skill":"x"}]`, other.Process.Pid, strings.TrimSpace(string(boot)))
	if err := os.WriteFile(records, []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _ := testConfig(t)
	cfg.Records = records
	if n, err := process.NewLauncher(cfg).ReapOrphans(); n != 0 || err != nil {
		t.Fatalf("ReapOrphans = %d, %v; want the recycled pid left alone", n, err)
	}
	if !alive(other.Process.Pid) {
		t.Fatal("a process that merely reuses a recorded pid was killed")
	}
}
