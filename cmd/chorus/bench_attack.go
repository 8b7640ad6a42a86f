//go:build !chorus_agent

package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/broker/brokerbench"
	"github.com/chorus-edge/chorus/device/agentbench"
)

func (a *app) newBenchAttackCmd() *cobra.Command {
	var (
		jsonOut bool
		cfg     brokerbench.AttackConfig
	)
	cmd := &cobra.Command{
		Use:   "attack",
		Short: "A well-behaved device's round trip while a skill floods, strangers flood, and a subscriber is stuck",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.benchLogger(cmd)
			cfg.MachineLoad = agentbench.LoadAvg
			rep, err := brokerbench.Attack(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if jsonOut {
				return a.printJSON(rep)
			}
			w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "phase\tp50 ms\tx idle\tp99 ms\tx idle\tattack")
			for _, p := range rep.Phases {
				fmt.Fprintf(w, "%s\t%.2f\t%.2f\t%.2f\t%.2f\t%s\n", p.Name, p.P50Ms, p.RatioP50, p.P99Ms, p.RatioP99, p.Note)
			}
			fmt.Fprintf(w, "machine load\t%s\n", rep.Load)
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the results as JSON")
	cmd.Flags().IntVar(&cfg.RoundTrips, "round-trips", 300, "round trips measured in each phase")
	cmd.Flags().IntVar(&cfg.Silent, "silent", 2000, "silent strangers in the pre-authentication flood")
	return cmd
}
