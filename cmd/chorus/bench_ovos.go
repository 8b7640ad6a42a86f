//go:build !chorus_agent

package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/device/agentbench"
)

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

// runOVOSBench is `chorus bench agent --ovos-skills N` (agentbench.RunOVOS).
func (a *app) runOVOSBench(ctx context.Context, f ovosBenchFlags, idle time.Duration, agent agentbench.AgentCommand, jsonOut bool) error {
	if f.launcher == "" {
		return errors.New("--ovos-skills needs --ovos-launcher: the satellite's ovos-skill-launcher, or device/ovosrt/standin/ovos-skill-launcher")
	}
	launcher, err := filepath.Abs(f.launcher)
	if err != nil {
		return fmt.Errorf("--ovos-launcher: %w", err)
	}
	rep, err := agentbench.RunOVOS(ctx, agentbench.OVOSConfig{Skills: f.skills, Shared: f.shared, Launcher: launcher,
		Idle: idle, Agent: agent, Progress: a.progress, Logger: a.log})
	if err != nil {
		return err
	}
	return a.printOVOSBench(rep, jsonOut)
}

func (a *app) printOVOSBench(rep agentbench.OVOSReport, jsonOut bool) error {
	if jsonOut {
		return a.printJSON(rep)
	}
	w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "OVOS skills\t%d (%s)\nstart to loaded\t%.0f ms\npython processes\t%d, %.1f MiB VmRSS in all\nVmRSS per skill\t%.1f MiB\nagent VmRSS\t%.1f MiB\nmachine load\t%s\n",
		rep.Skills, rep.Mode, rep.StartToLoaded, rep.PythonProcs, rep.PythonRSSMiB, rep.RSSPerSkillMiB, rep.AgentRSSMiB, rep.Load)
	return w.Flush()
}
