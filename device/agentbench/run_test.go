package agentbench_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/cmd/chorus/chorusbin"
	"github.com/chorus-edge/chorus/device/agentbench"
	"github.com/chorus-edge/chorus/device/ovosrt/ovostest"
	"github.com/chorus-edge/chorus/device/skilluser/skillusertest"
)

// chorusBin is the chorus binary TestMain builds: Run starts it as `chorus
// agent`, as `chorus bench agent` starts itself.
var chorusBin string

func TestMain(m *testing.M) { chorusbin.Main(m, &chorusBin, (*testing.M).Run) }

// agentCommand starts the built chorus as the agent, its stderr in the
// test's output. As root its skills run under a uid range of the test's own:
// other packages' agents run at once on this host, and two agents may not
// share a range (the default one included).
func agentCommand(t *testing.T) agentbench.AgentCommand {
	uids := skillusertest.Range(t)
	return func(args ...string) *exec.Cmd {
		c := exec.Command(chorusBin, append([]string{"agent"}, args...)...)
		c.Env = append(os.Environ(), "CHORUS_SKILL_UID_RANGE="+uids.String())
		c.Stderr = t.Output()
		return c
	}
}

// Run with the real agent and three skills: every figure is measured, the
// skill processes are the agent's children, and what Run made is gone.
func TestRunMeasuresTheAgent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a bound, not the expected time (a few seconds unloaded)
	defer cancel()
	privateTemp(t)
	before := benchDirs(t)
	var lines []string
	rep, err := agentbench.Run(ctx, agentbench.Config{Skills: 3, DiscoverDirs: 5, Idle: time.Second, Agent: agentCommand(t), Logger: brokertest.Logger(t),
		Progress: func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Skills != 3 || rep.DiscoverDirs != 5 || rep.SkillProcs != 3 {
		t.Errorf("skills %d, discovery dirs %d, skill processes %d; want 3, 5, 3", rep.Skills, rep.DiscoverDirs, rep.SkillProcs)
	}
	for name, v := range map[string]float64{"discovery": rep.DiscoverMs, "rescan": rep.RescanMs, "bus rescan": rep.BusRescanMs,
		"start to ready": rep.StartToReadyMs, "agent RSS": rep.AgentRSSMiB, "agent HWM": rep.AgentHWMMiB, "skills' RSS": rep.SkillProcsRSSMi} {
		if v <= 0 {
			t.Errorf("%s = %v, want > 0", name, v)
		}
	}
	if rep.AgentHWMMiB < rep.AgentRSSMiB || rep.Load == "" || len(rep.Notes) != 2 || len(lines) != 1 {
		t.Errorf("HWM %v < RSS %v, load %q, notes %q, progress %q", rep.AgentHWMMiB, rep.AgentRSSMiB, rep.Load, rep.Notes, lines)
	}
	if after := benchDirs(t); len(after) != len(before) {
		t.Errorf("bench directories before %v, after %v: Run left one behind", before, after)
	}
}

// The OVOS bench with the stand-in launcher: two skills in one shared host
// are loaded and measured.
func TestRunOVOSSharedHost(t *testing.T) {
	launcher := ovostest.Launcher(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a bound, not the expected time (a few seconds unloaded)
	defer cancel()
	rep, err := agentbench.RunOVOS(ctx, agentbench.OVOSConfig{Skills: 2, Shared: true, Launcher: launcher, Agent: agentCommand(t), Logger: brokertest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Mode != "shared" || rep.Skills != 2 || rep.Launcher != launcher || rep.PythonProcs != 1 {
		t.Errorf("mode %q, skills %d, launcher %q, python processes %d; want shared, 2, %q, 1", rep.Mode, rep.Skills, rep.Launcher, rep.PythonProcs, launcher)
	}
	if rep.StartToLoaded <= 0 || rep.PythonRSSMiB <= 0 || rep.RSSPerSkillMiB != rep.PythonRSSMiB/2 || rep.AgentRSSMiB <= 0 {
		t.Errorf("implausible figures %+v", rep)
	}
}

// A Config without what Run cannot guess is refused before anything starts.
func TestRunRefusesWhatItCannotGuess(t *testing.T) {
	ctx := context.Background()
	privateTemp(t)
	before := benchDirs(t)
	if _, err := agentbench.Run(ctx, agentbench.Config{Skills: 1}); err == nil || !strings.Contains(err.Error(), "no Agent command") {
		t.Errorf("Run without Agent: %v, want no Agent command", err)
	}
	if _, err := agentbench.RunOVOS(ctx, agentbench.OVOSConfig{Skills: 1, Agent: agentCommand(t)}); err == nil || !strings.Contains(err.Error(), "no OVOS launcher") {
		t.Errorf("RunOVOS without Launcher: %v, want no OVOS launcher", err)
	}
	if after := benchDirs(t); len(after) != len(before) {
		t.Errorf("bench directories before %v, after %v", before, after)
	}
}

// privateTemp points TMPDIR, where Run makes its directory, at one of the
// test's own (reachable by skill uids, as /tmp is), so benchDirs sees only
// this test's.
func privateTemp(t *testing.T) {
	dir, err := os.MkdirTemp("", "agentbench-tmp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", dir)
}

// benchDirs lists the bench directories in the temporary directory.
func benchDirs(t *testing.T) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(os.TempDir(), "chorus-bench-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
