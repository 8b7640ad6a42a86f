//go:build !chorus_agent

package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/broker/brokerbench"
	"github.com/chorus-edge/chorus/device/agentbench"
)

// ---- broker ----

func (a *app) newBenchBrokerCmd() *cobra.Command {
	var (
		jsonOut bool
		cfg     brokerbench.Config
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
