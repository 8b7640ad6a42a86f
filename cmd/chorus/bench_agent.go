//go:build !chorus_agent

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/device/agentbench"
)

// ---- agent ----

func (a *app) newBenchAgentCmd() *cobra.Command {
	var (
		cfg     agentbench.Config
		jsonOut bool
		bin     string
		ovos    ovosBenchFlags
	)
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Agent start-to-ready, discovery and rescan time, idle RSS with N trivial skills",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.benchLogger(cmd)
			ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
			defer cancel()
			agent, err := a.benchAgentCommand(bin)
			if err != nil {
				return err
			}
			if ovos.skills > 0 {
				return a.runOVOSBench(ctx, ovos, cfg.Idle, agent, jsonOut)
			}
			cfg.Agent, cfg.Progress, cfg.Logger = agent, a.progress, a.log
			rep, err := agentbench.Run(ctx, cfg)
			if err != nil {
				return err
			}
			return a.printAgentBench(rep, jsonOut)
		},
	}
	cmd.Flags().IntVar(&cfg.Skills, "skills", 20, "trivial skills the agent runs")
	cmd.Flags().IntVar(&cfg.DiscoverDirs, "discover", 1000, "skill directories (1 KiB execs) to time discovery over")
	cmd.Flags().DurationVar(&cfg.Idle, "idle", 3*time.Second, "wait after ready before reading the idle RSS")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the report as JSON")
	cmd.Flags().StringVar(&bin, "bin", "", "the chorus binary to run as the agent (default: this one)")
	ovos.register(cmd)
	return cmd
}

// benchAgentCommand starts bin (default: this binary) as `chorus agent`,
// its stderr on ours.
func (a *app) benchAgentCommand(bin string) (agentbench.AgentCommand, error) {
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find this binary to run as the agent: %w", err)
		}
	}
	return func(args ...string) *exec.Cmd {
		child := exec.Command(bin, append([]string{"agent"}, args...)...)
		child.Stderr, child.Stdout = a.stderr, io.Discard
		return child
	}, nil
}

func (a *app) printAgentBench(rep agentbench.Report, jsonOut bool) error {
	if jsonOut {
		return a.printJSON(rep)
	}
	w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "skills\t%d\nstart to ready\t%.0f ms\ndiscovery of %d dirs\t%.1f ms (rescan %.1f ms)\nbus rescan round trip\t%.1f ms\n",
		rep.Skills, rep.StartToReadyMs, rep.DiscoverDirs, rep.DiscoverMs, rep.RescanMs, rep.BusRescanMs)
	fmt.Fprintf(w, "agent idle VmRSS\t%.1f MiB (VmHWM %.1f MiB; anonymous %.1f MiB, binary and other files %.1f MiB)\nskill processes\t%d, %.1f MiB RSS in all\nmachine load\t%s\n",
		rep.AgentRSSMiB, rep.AgentHWMMiB, rep.AgentAnonMiB, rep.AgentFileMiB, rep.SkillProcs, rep.SkillProcsRSSMi, rep.Load)
	return w.Flush()
}
