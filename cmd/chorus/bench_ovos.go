//go:build !chorus_agent

package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/device/agentbench"
	"github.com/chorus-edge/chorus/fleet/fleetbench"
)

// ovosBenchReport is `chorus bench agent --ovos-skills N`: N runtime ovos
// skills under a launcher, one process each or in the shared host.
type ovosBenchReport struct {
	Mode           string  `json:"mode"` // process or shared
	Launcher       string  `json:"launcher"`
	Skills         int     `json:"skills"`
	StartToLoaded  float64 `json:"start_to_loaded_ms"`
	PythonProcs    int     `json:"python_processes"`
	PythonRSSMiB   float64 `json:"python_vm_rss_mib"`
	RSSPerSkillMiB float64 `json:"vm_rss_per_skill_mib"`
	AgentRSSMiB    float64 `json:"agent_vm_rss_mib"`
	Load           string  `json:"machine_load"`
	Notes          []string
}

// benchOVOS runs `chorus agent` with n runtime ovos skills (agentbench's
// hello skill) under launcher, and measures the time from the agent's exec
// to every skill reported loaded (by its launcher's own
// mycroft.skills.loaded) and the launchers' memory after idle.
func (a *app) benchOVOS(ctx context.Context, n int, shared bool, launcher string, idle time.Duration, bin string) (*ovosBenchReport, error) {
	if launcher == "" {
		return nil, fmt.Errorf("--ovos-skills needs --ovos-launcher: the satellite's ovos-skill-launcher, or device/ovosrt/standin/ovos-skill-launcher")
	}
	dir, err := fleetbench.TempDir()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil { // skills under their own uids reach their code
		return nil, err
	}
	root := filepath.Join(dir, "skills")
	if _, err := agentbench.MakeOVOSSkills(root, n); err != nil {
		return nil, err
	}
	original := launcher
	// A copy every skill uid can reach (the launcher's own interpreter,
	// named by its #! line, must be reachable too).
	code, err := os.ReadFile(launcher)
	if err != nil {
		return nil, fmt.Errorf("--ovos-launcher: %w", err)
	}
	launcher = filepath.Join(dir, "ovos-skill-launcher")
	if err := os.WriteFile(launcher, code, 0o755); err != nil {
		return nil, err
	}
	rep := &ovosBenchReport{Mode: "process", Launcher: original, Skills: n, Load: loadAvg()}
	sharedList := []string{}
	if shared {
		rep.Mode, sharedList = "shared", []string{"*"}
	}
	const dev = "bench-ovos"
	secret, _ := broker.NewSecret()
	opSecret, _ := broker.NewSecret()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	table, err := broker.NewTable(broker.DeviceAccount(dev, broker.HashSecret(secret), pub, 1),
		broker.OperatorAccount("bench", broker.HashSecret(opSecret)))
	if err != nil {
		return nil, err
	}
	b, err := broker.Start(broker.Config{MQTTListen: "127.0.0.1:0", Logger: a.log}, table)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	creds := configs.AgentCredentials{Device: dev, MQTTURL: b.URL(), Username: dev, Password: secret,
		SkillKey: configs.EncodeSkillKey(priv), KeyVersion: 1}
	credPath, cfgPath := filepath.Join(dir, "agent.json"), filepath.Join(dir, "config.json")
	if err := configs.WriteAgentCredentials(credPath, creds); err != nil {
		return nil, err
	}
	cfg := map[string]any{
		"connectivity": map[string]any{"phal_timeout": 0},
		"skills":       map[string]any{"ovos": map[string]any{"launcher": launcher, "shared": sharedList}},
	}
	cb, _ := json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, cb, 0o600); err != nil {
		return nil, err
	}
	obs, err := newObserver(ctx, b.Addr(), "operator:bench", opSecret, dev, n)
	if err != nil {
		return nil, err
	}
	defer obs.close()
	child := exec.Command(bin, "agent", "--credentials", credPath, "--config", cfgPath, "--skills", root,
		"--data-dir", filepath.Join(dir, "data"), "--ws-listen", "127.0.0.1:0", "--log-level", "warn")
	child.Stderr, child.Stdout = a.stderr, io.Discard
	start := time.Now()
	if err := child.Start(); err != nil {
		return nil, fmt.Errorf("start the agent: %w", err)
	}
	defer stopChild(child)
	select {
	case at := <-obs.ready:
		rep.StartToLoaded = ms(at.Sub(start))
	case <-ctx.Done():
		return nil, fmt.Errorf("the agent did not report %d OVOS skills loaded: %w", n, ctx.Err())
	}
	a.progress("%d OVOS skills loaded (%s) after %.0f ms", n, rep.Mode, rep.StartToLoaded)
	time.Sleep(idle) // let the launchers settle before the memory reading
	procs, kib := agentbench.ChildrenMemory(child.Process.Pid)
	rep.PythonProcs, rep.PythonRSSMiB = procs, float64(kib)/1024
	if n > 0 {
		rep.RSSPerSkillMiB = rep.PythonRSSMiB / float64(n)
	}
	if m, err := agentbench.ProcMemory(child.Process.Pid); err == nil {
		rep.AgentRSSMiB = float64(m.RSSKiB) / 1024
	}
	rep.Notes = append(rep.Notes,
		"start_to_loaded: exec of `chorus agent` → the retained skills report lists every skill loaded, each by its launcher's own mycroft.skills.loaded (after mycroft.ready; phal_timeout 0)",
		"python_vm_rss: VmRSS summed over the agent's child processes (the launchers, or the one shared host); shared pages (the interpreter, libraries) count once per process")
	return rep, nil
}

func (a *app) printOVOSBench(rep *ovosBenchReport, jsonOut bool) error {
	if jsonOut {
		return a.printJSON(rep)
	}
	w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "OVOS skills\t%d (%s)\nstart to loaded\t%.0f ms\npython processes\t%d, %.1f MiB VmRSS in all\nVmRSS per skill\t%.1f MiB\nagent VmRSS\t%.1f MiB\nmachine load\t%s\n",
		rep.Skills, rep.Mode, rep.StartToLoaded, rep.PythonProcs, rep.PythonRSSMiB, rep.RSSPerSkillMiB, rep.AgentRSSMiB, rep.Load)
	return w.Flush()
}

// ovosBenchFlags are bench agent's OVOS flags.
type ovosBenchFlags struct {
	skills   int
	shared   bool
	launcher string
}

func (f *ovosBenchFlags) register(cmd *cobra.Command) {
	cmd.Flags().IntVar(&f.skills, "ovos-skills", 0, "instead: measure N runtime ovos skills under --ovos-launcher (RSS per skill, start to loaded)")
	cmd.Flags().BoolVar(&f.shared, "ovos-shared", false, "run the OVOS skills in one shared host process (skills.ovos.shared)")
	cmd.Flags().StringVar(&f.launcher, "ovos-launcher", "", "ovos-skill-launcher to run them with (the satellite's, or device/ovosrt/standin/ovos-skill-launcher)")
}

func (a *app) runOVOSBench(ctx context.Context, f ovosBenchFlags, idle time.Duration, bin string, jsonOut bool) error {
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return err
		}
	}
	launcher, err := filepath.Abs(f.launcher)
	if err != nil || f.launcher == "" {
		launcher = ""
	}
	rep, err := a.benchOVOS(ctx, f.skills, f.shared, launcher, idle, bin)
	if err != nil {
		return err
	}
	return a.printOVOSBench(rep, jsonOut)
}
