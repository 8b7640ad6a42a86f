//go:build !chorus_agent

package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
)

// `chorus bench`: the measurements of docs/benchmarks.md. Each command is
// bounded in time, cleans up what it started, shows progress on stderr and
// prints a table, or JSON with --json.
func (a *app) newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Measure fleet convergence, broker overhead and agent footprint"}
	cmd.AddCommand(a.newBenchFleetCmd(), a.newBenchBrokerCmd(), a.newBenchBrokerServeCmd(), a.newBenchAttackCmd(), a.newBenchAgentCmd(), a.newBenchDevicesCmd())
	return cmd
}

// benchLogger keeps the gateway's own logging at warn during a run, unless
// the user asked for a level: thousands of "execution ended" lines would
// cost more than what is measured.
func (a *app) benchLogger(cmd *cobra.Command) {
	if f := cmd.Flag("log-level"); f == nil || !f.Changed {
		a.logLevel = "warn"
		_ = a.setupLogging()
	}
}

func (a *app) progress(format string, args ...any) {
	fmt.Fprintf(a.stderr, "bench: "+format+"\n", args...)
}

func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
