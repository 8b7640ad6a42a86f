package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/chorus-edge/chorus/device/skilluser/skillusertest"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// attackScript is a skill doing what a malicious one would against its
// device: read the agent's credentials file (the layout docs/install.md
// prescribes: 0600, the agent's), its data dir, another skill's home, the
// agent's environment; signal it; change its own code. It writes one line
// per attempt to report, then stays up.
const attackScript = `r=%[1]s
try() { if sh -c "$2" >/dev/null 2>&1; then echo "$1=yes" >> $r; else echo "$1=no" >> $r; fi; }
try read-credentials 'cat %[2]s'
try read-ws-secret 'cat %[3]s/websocket.secret'
try read-session 'cat %[3]s/session'
try read-uid-map 'cat %[3]s/skill-uids.json'
try list-data-dir 'ls %[3]s'
try other-skill-home 'ls %[3]s/home/other.skill'
try agent-environ 'cat /proc/'$PPID'/environ'
try agent-memory-map 'cat /proc/'$PPID'/maps'
try signal-agent 'kill -0 '$PPID
try write-own-code 'touch ./pwned'
try write-own-home 'touch "$HOME/mine"'
echo "uid=$(id -u)" >> $r
echo end >> $r
exec sleep 600
`

// A skill runs under a uid of its own: it cannot read the agent's
// credentials, data dir or another skill's home, cannot signal the agent or
// read its environment, cannot change its code, and can write its own home
// (issue 14, finding 1: a skill's run.sh read the credentials file and took
// over the device).
func TestSkillCannotReadAgentSecretsOrSignalIt(t *testing.T) {
	t.Parallel()
	skillusertest.RequireRoot(t)
	f := newFixture(t)
	creds := filepath.Join(skillusertest.OpenDir(t), "agent.json")
	if err := os.WriteFile(creds, []byte(`{"password":"`+f.dev.Secret+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	reportDir := skillusertest.OpenDir(t)
	if err := os.Chmod(reportDir, 0o777); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(reportDir, "report")
	root := f.cfg.Bundled[0]
	testSkill(t, root, "attacker.skill", "[]", "on-start", fmt.Sprintf(attackScript, report, creds, f.cfg.DataDir))
	testSkill(t, root, "other.skill", "[]", "on-start", "exec sleep 600\n")
	a, err := Start(context.Background(), f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	if a.Isolation() != IsolationUID {
		t.Fatalf("isolation %q as root, want %q", a.Isolation(), IsolationUID)
	}
	got := waitReport(t, report)
	want := map[string]string{
		"read-credentials": "no", "read-ws-secret": "no", "read-session": "no", "read-uid-map": "no",
		"list-data-dir": "no", "other-skill-home": "no", "agent-environ": "no", "agent-memory-map": "no", "signal-agent": "no",
		"write-own-code": "no", "write-own-home": "yes",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if got["uid"] == "0" || got["uid"] == "" {
		t.Errorf("the skill ran as uid %q", got["uid"])
	}
}

// waitReport polls the attack script's report until its last line.
func waitReport(t *testing.T, path string) map[string]string {
	t.Helper()
	var b []byte
	var err error
	if werr := poll.Wait(context.Background(), "complete report at "+path, wait, func() bool {
		b, err = os.ReadFile(path)
		return err == nil && strings.HasSuffix(string(b), "end\n")
	}); werr != nil {
		t.Fatalf("%v: %q %v", werr, b, err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			out[k] = v
		}
	}
	return out
}

// A SIGKILLed agent leaves no skill behind: the skill's own process dies
// with it (parent-death signal), and what it started, which outlives it, is
// killed by the next agent before it starts its skills; that agent's clean
// shutdown leaves nothing either (issue 14, finding 4: the orphan ran on,
// next to the duplicate the restarted agent started).
func TestNoOrphansAfterAgentKill(t *testing.T) {
	t.Parallel()
	skillusertest.RequireRoot(t)
	for _, isolation := range []string{IsolationUID, IsolationNone} {
		t.Run(isolation, func(t *testing.T) {
			f := newFixture(t)
			f.cfg.Skills.Isolation = isolation
			pids := skillusertest.OpenDir(t)
			if err := os.Chmod(pids, 0o777); err != nil {
				t.Fatal(err)
			}
			script := fmt.Sprintf("sleep 300 &\necho $! > %[1]s/child.$$\necho $$ > %[1]s/main.tmp && mv %[1]s/main.tmp %[1]s/main.$$\nexec sleep 600\n", pids)
			testSkill(t, f.cfg.Bundled[0], "orphan.skill", "[]", "on-start", script)

			child, exited := startChildAgent(t, f)
			main1, child1 := waitSkillPIDs(t, pids, nil)
			// The agent records the skill's group just after it starts it;
			// a crash before that (a window of a write) leaves nothing to
			// reap by: kill only once the record is on disk.
			poll.Until(t, "the skill's group recorded", wait, func() bool {
				var recs []struct{ PID int }
				b, err := os.ReadFile(filepath.Join(f.cfg.DataDir, "running-skills.json"))
				return err == nil && json.Unmarshal(b, &recs) == nil && slices.ContainsFunc(recs, func(r struct{ PID int }) bool { return r.PID == main1 })
			})
			if err := child.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			poll.Until(t, "the skill to die with its agent", wait, func() bool { return !alive(main1) })
			<-exited // as systemd restarts it: once the old process is gone
			if !alive(child1) {
				t.Fatal("the skill's own child died with the agent too: nothing to reap")
			}

			a, err := Start(context.Background(), f.cfg)
			if err != nil {
				t.Fatal(err)
			}
			poll.Until(t, "the orphan to be reaped", wait, func() bool { return !alive(child1) })
			main2, child2 := waitSkillPIDs(t, pids, map[int]bool{main1: true})
			if err := a.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			poll.Until(t, "the restarted agent's skill to stop", wait, func() bool { return !alive(main2) && !alive(child2) })
		})
	}
}

// startChildAgent runs f's agent in a child process that a test can kill -9;
// exited is closed once it has been reaped.
func startChildAgent(t *testing.T, f *fixture) (cmd *exec.Cmd, exited <-chan struct{}) {
	t.Helper()
	spec, err := json.Marshal(childConfig{Device: "pi-1", MQTTURL: f.cfg.MQTTURL, Password: f.dev.Secret,
		DataDir: f.cfg.DataDir, Seed: f.dev.Key.Seed(), Skills: f.cfg.Skills, Bundled: f.cfg.Bundled})
	if err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CHORUS_AGENT_CHILD="+string(spec))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	return cmd, done
}

// waitSkillPIDs waits for a run of orphan.skill not in old to record its
// pid and its child's.
func waitSkillPIDs(t *testing.T, dir string, old map[int]bool) (main, child int) {
	t.Helper()
	poll.Until(t, "the skill's pid files", wait, func() bool {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if p, ok := strings.CutPrefix(e.Name(), "main."); ok && p != "tmp" {
				n, _ := strconv.Atoi(p)
				if !old[n] {
					main = n
				}
			}
		}
		if main == 0 {
			return false
		}
		b, err := os.ReadFile(filepath.Join(dir, "child."+strconv.Itoa(main)))
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && child > 0
	})
	return main, child
}

// alive reports whether pid is a live process (a zombie counts as dead).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z'
}

// Opening the data tree to skill uids makes the agent's own readable files
// in the directories it opens private (the gateway's database under chorus
// up), and leaves directories and others' files alone.
func TestMakeSearchable(t *testing.T) {
	t.Parallel()
	skillusertest.RequireRoot(t)
	root := filepath.Join(t.TempDir(), "data")
	dir := filepath.Join(root, "agents", "pi-1")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(root, "fleet.db")
	code := filepath.Join(root, "examples")
	theirs := filepath.Join(root, "theirs")
	for _, p := range []string{db, theirs} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(theirs, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(code, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := makeSearchable(root, dir, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{root: 0o701, filepath.Join(root, "agents"): 0o701, dir: 0o711,
		db: 0o640, code: 0o755, theirs: 0o644} {
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: mode %04o (%v), want %04o", path, st.Mode().Perm(), err, want)
		}
	}
}
