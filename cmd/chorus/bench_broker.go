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
	)
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Publish→deliver throughput and latency: Chorus's broker vs bare mochi (and --mqtt-url)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.benchLogger(cmd)
			return a.benchBroker(cmd.Context(), jsonOut, mqttURL, scale)
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the results as JSON")
	cmd.Flags().StringVar(&mqttURL, "mqtt-url", "", "also load this broker, mqtt://[user:pass@]host:port (e.g. Mosquitto)")
	cmd.Flags().Float64Var(&scale, "scale", 1, "multiply every message count")
	return cmd
}

type brokerReport struct {
	Results []brokerbench.Result `json:"results"`
	Ratios  []map[string]any     `json:"chorus_vs_bare_mochi"`
	Load    string               `json:"machine_load"`
	Notes   []string             `json:"notes"`
}

func (a *app) benchBroker(ctx context.Context, jsonOut bool, mqttURL string, scale float64) error {
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
	nostore, err := brokerbench.StartChorus("", 100)
	if err != nil {
		return err
	}
	defer nostore.Close()
	targets := []brokerbench.Target{chorus.Target, bare.Target, nostore.Target}
	if mqttURL != "" {
		t, err := brokerbench.ParseURL("other", mqttURL)
		if err != nil {
			return err
		}
		targets = append(targets, t)
	}
	rep := brokerReport{Load: loadAvg(), Notes: []string{
		"load generator and the embedded brokers share one process; --mqtt-url brokers run in their own",
		"chorus-nostore is Chorus's broker without its SQLite store hook (as with no data dir): the diagnostic that separates the policy hooks' cost from persistence",
		fmt.Sprintf("both embedded brokers: max_client_writes_pending %d; 64-byte JSON payloads; 4 publishers, each synchronous at QoS 1", broker.DefaultWritesPending),
	}}
	var loads []brokerbench.Load
	for _, qos := range []byte{0, 1} {
		for _, fo := range []int{1, 10, 100} {
			loads = append(loads, brokerbench.Load{QoS: qos, FanOut: fo, Messages: int(scale * float64(min(40000, 100000/fo)))})
		}
	}
	loads = append(loads, brokerbench.Load{QoS: 1, FanOut: 1, Rate: 10000, Messages: int(scale * 20000)})
	for _, l := range loads {
		byName := map[string]brokerbench.Result{}
		for _, t := range targets {
			r, err := brokerbench.Run(ctx, t, l)
			if err != nil {
				return err
			}
			a.progress("%-10s qos %d fan-out %3d rate %5.0f: %8.0f deliveries/s, p50 %.2f ms, p99 %.2f ms, loss %.1f%%",
				r.Broker, r.QoS, r.FanOut, l.Rate, r.DelPerSec, r.P50Ms, r.P99Ms, r.LossPct)
			rep.Results = append(rep.Results, r)
			byName[t.Name] = r
		}
		c, m := byName["chorus"], byName["mochi-bare"]
		if m.DelPerSec > 0 {
			rep.Ratios = append(rep.Ratios, map[string]any{"qos": l.QoS, "fan_out": l.FanOut, "target_rate": l.Rate,
				"throughput_ratio": c.DelPerSec / m.DelPerSec, "chorus_p99_ms": c.P99Ms, "mochi_p99_ms": m.P99Ms})
		}
	}
	st := chorus.Stats()
	rep.Notes = append(rep.Notes, fmt.Sprintf("chorus broker counters: %d received, %d sent, %d dropped, %d throttled",
		st.MessagesReceived, st.MessagesSent, st.MessagesDropped, st.PublishesThrottled))
	if jsonOut {
		return a.printJSON(rep)
	}
	w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "broker\tqos\tfan-out\trate\tpublished\tdelivered\tdeliveries/s\tp50 ms\tp99 ms\tloss %")
	for _, r := range rep.Results {
		fmt.Fprintf(w, "%s\t%d\t%d\t%.0f\t%d\t%d\t%.0f\t%.2f\t%.2f\t%.1f\n", r.Broker, r.QoS, r.FanOut, r.Rate, r.Published, r.Delivered, r.DelPerSec, r.P50Ms, r.P99Ms, r.LossPct)
	}
	for _, x := range rep.Ratios {
		fmt.Fprintf(w, "chorus/mochi\tqos %v fan-out %v rate %v\t%.2f×\n", x["qos"], x["fan_out"], x["target_rate"], x["throughput_ratio"])
	}
	fmt.Fprintf(w, "machine load\t%s\n", rep.Load)
	return w.Flush()
}
