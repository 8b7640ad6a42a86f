//go:build !chorus_agent

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokerbench"
	"github.com/chorus-edge/chorus/fleet/fleetbench"
)

// ---- broker ----

func (a *app) newBenchBrokerCmd() *cobra.Command {
	var (
		jsonOut bool
		mqttURL string
		scale   float64
		rounds  int
		nostore bool
	)
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Publish→deliver throughput and latency: Chorus's broker vs bare mochi (and --mqtt-url), alternated over rounds",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.benchLogger(cmd)
			return a.benchBroker(cmd.Context(), brokerBenchOpts{jsonOut: jsonOut, mqttURL: mqttURL, scale: scale, rounds: rounds, nostore: nostore})
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the results as JSON")
	cmd.Flags().StringVar(&mqttURL, "mqtt-url", "", "the anchor broker to compare with, mqtt://[user:pass@]host:port (e.g. Mosquitto)")
	cmd.Flags().Float64Var(&scale, "scale", 1, "multiply every message count")
	cmd.Flags().IntVar(&rounds, "rounds", 3, "rounds over which the brokers alternate (at least 3); ratios are the median over rounds")
	cmd.Flags().BoolVar(&nostore, "nostore", false, "also run Chorus's broker without its store hook (chorus-nostore)")
	return cmd
}

type brokerBenchOpts struct {
	jsonOut bool
	mqttURL string
	scale   float64
	rounds  int
	nostore bool
}

// anchorName is the --mqtt-url broker's name in the report.
const anchorName = "anchor"

type brokerReport struct {
	Rounds  int                  `json:"rounds"`
	Results []brokerbench.Result `json:"results"`
	Ratios  []brokerbench.Ratio  `json:"ratios"`
	Load    string               `json:"machine_load"`
	LoadEnd string               `json:"machine_load_end"`
	Notes   []string             `json:"notes"`
}

func (a *app) benchBroker(ctx context.Context, o brokerBenchOpts) error {
	if o.rounds < 3 {
		return fmt.Errorf("--rounds %d: at least 3 are needed for a median with a spread", o.rounds)
	}
	dir, err := fleetbench.TempDir()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	chorus, err := brokerbench.StartChorus(filepath.Join(dir, "broker"), 100)
	if err != nil {
		return err
	}
	defer chorus.Close()
	bare, err := brokerbench.StartBareMochi()
	if err != nil {
		return err
	}
	defer bare.Close()
	targets := []brokerbench.Target{chorus.Target, bare.Target}
	pairs := [][2]string{{chorus.Name, bare.Name}}
	if o.nostore {
		nostore, err := brokerbench.StartChorus("", 100)
		if err != nil {
			return err
		}
		defer nostore.Close()
		targets = append(targets, nostore.Target)
		pairs = append(pairs, [2]string{nostore.Name, bare.Name})
	}
	if o.mqttURL != "" {
		t, err := brokerbench.ParseURL(anchorName, o.mqttURL)
		if err != nil {
			return err
		}
		targets = append(targets, t)
		pairs = append([][2]string{{chorus.Name, anchorName}}, pairs...)
	}
	rep := brokerReport{Rounds: o.rounds, Load: loadAvg(), Notes: []string{
		"load generator and the embedded brokers share one process; the --mqtt-url broker (anchor) runs in its own",
		"every load runs on every broker in each round, back to back, the brokers' order rotating from round to round; a ratio is taken within a round, the median over rounds is reported with its min and max",
		"chorus-nostore (--nostore) is Chorus's broker without its SQLite store hook: it separates the policy hooks' cost from persistence",
		fmt.Sprintf("both embedded brokers: max_client_writes_pending %d; 64-byte JSON payloads; 4 publishers, each synchronous at QoS 1", broker.DefaultWritesPending),
	}}
	var loads []brokerbench.Load
	for _, qos := range []byte{0, 1} {
		for _, fo := range []int{1, 10, 100} {
			loads = append(loads, brokerbench.Load{QoS: qos, FanOut: fo, Messages: int(o.scale * float64(min(40000, 100000/fo)))})
		}
	}
	loads = append(loads, brokerbench.Load{QoS: 1, FanOut: 1, Rate: 10000, Messages: int(o.scale * 20000)})
	cmp, err := brokerbench.Compare(ctx, brokerbench.CompareConfig{Targets: targets, Loads: loads, Rounds: o.rounds, Pairs: pairs,
		Progress: func(round int, l brokerbench.Load, r brokerbench.Result) {
			a.progress("round %d %-14s qos %d fan-out %3d rate %5.0f: %8.0f deliveries/s, p50 %.2f ms, p99 %.2f ms, loss %.1f%%",
				round+1, r.Broker, r.QoS, r.FanOut, l.Rate, r.DelPerSec, r.P50Ms, r.P99Ms, r.LossPct)
		}})
	if err != nil {
		return err
	}
	rep.Results, rep.Ratios, rep.LoadEnd = cmp.Results, cmp.Ratios, loadAvg()
	st := chorus.Stats()
	rep.Notes = append(rep.Notes, fmt.Sprintf("chorus broker counters: %d received, %d sent, %d dropped, %d throttled",
		st.MessagesReceived, st.MessagesSent, st.MessagesDropped, st.PublishesThrottled))
	if o.jsonOut {
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
