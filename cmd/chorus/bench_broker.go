//go:build !chorus_agent

package main

import (
	"fmt"
	"os"
	"os/exec"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/broker/brokerbench"
	"github.com/chorus-edge/chorus/device/agentbench"
)

// ---- broker ----

func (a *app) newBenchBrokerCmd() *cobra.Command {
	var (
		jsonOut, inProc bool
		cfg             brokerbench.Config
	)
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Publish→deliver throughput and latency: Chorus's broker vs bare mochi (and --mqtt-url), alternated over rounds",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Rounds < 3 {
				return fmt.Errorf("--rounds %d: at least 3 are needed for a median with a spread", cfg.Rounds)
			}
			a.benchLogger(cmd)
			cfg.MachineLoad, cfg.Progress = agentbench.LoadAvg, a.progress
			if !inProc {
				cfg.Process = a.brokerProcess
			}
			rep, err := brokerbench.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return a.printBrokerBench(rep, jsonOut)
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the results as JSON")
	cmd.Flags().StringVar(&cfg.MQTTURL, "mqtt-url", "", "the anchor broker to compare with, mqtt://[user:pass@]host:port (e.g. Mosquitto)")
	cmd.Flags().Float64Var(&cfg.Scale, "scale", 1, "multiply every message count")
	cmd.Flags().IntVar(&cfg.Rounds, "rounds", 3, "rounds over which the brokers alternate (at least 3); ratios are the median over rounds")
	cmd.Flags().BoolVar(&cfg.NoStore, "nostore", false, "also run Chorus's broker without its store hook (chorus-nostore)")
	cmd.Flags().BoolVar(&inProc, "in-process", false, "run Chorus's broker and bare mochi in this process, beside the load generator (default: each in a child `chorus bench broker-serve`, as the --mqtt-url broker runs in its own)")
	return cmd
}

// brokerProcess is the command of a child `chorus bench broker-serve` for
// brokerbench.Config.Process; its stderr is this process's.
func (a *app) brokerProcess(kind, dataDir string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	child := exec.Command(exe, "bench", "broker-serve", "--kind", kind, "--data-dir", dataDir)
	child.Stderr = a.stderr
	return child
}

// newBenchBrokerServeCmd is the child side of `bench broker` (hidden): one
// broker in a process of its own. Chorus's brokers run with the gateway's
// garbage-collection setting, as `chorus up` runs them; bare mochi with
// Go's default.
func (a *app) newBenchBrokerServeCmd() *cobra.Command {
	var kind, dataDir string
	cmd := &cobra.Command{
		Use: "broker-serve", Hidden: true, Args: cobra.NoArgs,
		Short: "Run one broker for `chorus bench broker` (its address on stdout; stdin: stats requests, EOF stops it)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kind != brokerbench.KindBareMochi {
				tuneGatewayGC()
			}
			return brokerbench.ServeBroker(cmd.Context(), kind, dataDir, os.Stdin, a.stdout)
		},
	}
	cmd.Flags().StringVar(&kind, "kind", brokerbench.KindChorus, "the broker: chorus, chorus-nostore or mochi-bare")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "the store's directory (chorus)")
	return cmd
}

func (a *app) printBrokerBench(rep brokerbench.Report, jsonOut bool) error {
	if jsonOut {
		return a.printJSON(rep)
	}
	w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "broker\tqos\tfan-out\trate\tpublished\tdelivered\tdeliveries/s\tp50 ms\tp99 ms\tloss %")
	for _, r := range rep.Results {
		fmt.Fprintf(w, "%s\t%d\t%d\t%.0f\t%d\t%d\t%.0f\t%.2f\t%.2f\t%.1f\n", r.Broker, r.QoS, r.FanOut, r.Rate, r.Published, r.Delivered, r.DelPerSec, r.P50Ms, r.P99Ms, r.LossPct)
	}
	fmt.Fprintf(w, "\nratio (median of %d rounds)\tload\tmedian\tmin\tmax\tloss %% subject / anchor (median)\n", rep.Rounds)
	for _, x := range rep.Ratios {
		fmt.Fprintf(w, "%s / %s\tqos %d fan-out %d rate %.0f\t%.2f×\t%.2f\t%.2f\t%.1f / %.1f\n", x.Subject, x.Anchor, x.QoS, x.FanOut, x.Rate,
			x.Deliveries.Median, x.Deliveries.Min, x.Deliveries.Max, x.SubjectLoss.Median, x.AnchorLoss.Median)
	}
	fmt.Fprintf(w, "machine load\t%s → %s\n", rep.Load, rep.LoadEnd)
	return w.Flush()
}
