package brokerbench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/chorus-edge/chorus/broker"
)

// AnchorName is the Config.MQTTURL broker's name in the report.
const AnchorName = "anchor"

// Config configures Run, `chorus bench broker`. The zero value compares
// Chorus's broker with bare mochi over 3 rounds of the standard loads.
type Config struct {
	// MQTTURL, mqtt://[user:pass@]host:port, is an anchor broker (e.g.
	// Mosquitto) to compare Chorus's with; "" compares the embedded ones.
	MQTTURL string
	Scale   float64 // multiplies every message count of the standard loads (1)
	Rounds  int     // at least 3 (3)
	NoStore bool    // also run Chorus's broker without its store hook (chorus-nostore)
	// Loads replaces the standard loads (DefaultLoads(Scale)) when not nil.
	Loads []Load
	// MachineLoad reads the machine's load, before and after the run
	// (cmd/chorus wires agentbench.LoadAvg); nil reports "n/a".
	MachineLoad func() string
	// Progress prints a line (stderr) after every run; nil prints nothing.
	Progress func(format string, args ...any)
	// Process, when set, returns the command of a broker process
	// (ServeBroker) for a broker of kind (Kind*) with dataDir, and every
	// broker Run starts runs in a process of its own, as the MQTTURL anchor
	// does; nil starts them in this process, beside the load generator.
	Process func(kind, dataDir string) *exec.Cmd
}

func (c *Config) setDefaults() {
	if c.Scale <= 0 {
		c.Scale = 1
	}
	if c.Rounds == 0 {
		c.Rounds = 3
	}
	if c.Loads == nil {
		c.Loads = DefaultLoads(c.Scale)
	}
	if c.MachineLoad == nil {
		c.MachineLoad = func() string { return "n/a" }
	}
	if c.Progress == nil {
		c.Progress = func(string, ...any) {}
	}
}

// Report is `chorus bench broker --json` (docs/benchmarks.md).
type Report struct {
	Rounds  int      `json:"rounds"`
	Results []Result `json:"results"`
	Ratios  []Ratio  `json:"ratios"`
	Load    string   `json:"machine_load"`
	LoadEnd string   `json:"machine_load_end"`
	Notes   []string `json:"notes"`
}

// DefaultLoads are docs/benchmarks.md's: QoS 0 and 1 at fan-out 1, 10 and
// 100 as fast as possible, and QoS 1 fan-out 1 at 10,000 msg/s; scale
// multiplies every message count.
func DefaultLoads(scale float64) []Load {
	var loads []Load
	for _, qos := range []byte{0, 1} {
		for _, fo := range []int{1, 10, 100} {
			loads = append(loads, Load{QoS: qos, FanOut: fo, Messages: int(scale * float64(min(40000, 100000/fo)))})
		}
	}
	return append(loads, Load{QoS: 1, FanOut: 1, Rate: 10000, Messages: int(scale * 20000)})
}

// Run starts Chorus's broker (with its store in a temporary directory),
// bare mochi and, with NoStore, Chorus's broker without its store, and
// compares them (Compare) with each other and with the MQTTURL anchor:
// chorus/anchor first, then chorus/mochi-bare and chorus-nostore/mochi-bare.
// What it started is stopped before it returns.
func Run(ctx context.Context, cfg Config) (Report, error) {
	cfg.setDefaults()
	if cfg.Rounds < 3 {
		return Report{}, fmt.Errorf("broker bench: %d rounds; at least 3 are needed for a median with a spread", cfg.Rounds)
	}
	dir, err := os.MkdirTemp("", "chorus-bench-")
	if err != nil {
		return Report{}, fmt.Errorf("make the bench directory: %w", err)
	}
	defer os.RemoveAll(dir)
	start := Start
	if cfg.Process != nil {
		start = func(kind, dataDir string) (*Broker, error) { return StartProcess(cfg.Process(kind, dataDir)) }
	}
	chorus, err := start(KindChorus, filepath.Join(dir, "broker"))
	if err != nil {
		return Report{}, fmt.Errorf("start Chorus's broker: %w", err)
	}
	defer chorus.Close()
	bare, err := start(KindBareMochi, "")
	if err != nil {
		return Report{}, fmt.Errorf("start bare mochi: %w", err)
	}
	defer bare.Close()
	cc := CompareConfig{Targets: []Target{chorus.Target, bare.Target}, Loads: cfg.Loads, Rounds: cfg.Rounds,
		Pairs: [][2]string{{chorus.Name, bare.Name}}, Progress: progressLine(cfg.Progress)}
	if cfg.NoStore {
		nostore, err := start(KindChorusNoStore, "")
		if err != nil {
			return Report{}, fmt.Errorf("start Chorus's broker without its store: %w", err)
		}
		defer nostore.Close()
		cc.Targets, cc.Pairs = append(cc.Targets, nostore.Target), append(cc.Pairs, [2]string{nostore.Name, bare.Name})
	}
	if cfg.MQTTURL != "" {
		t, err := ParseURL(AnchorName, cfg.MQTTURL)
		if err != nil {
			return Report{}, err
		}
		cc.Targets, cc.Pairs = append(cc.Targets, t), append([][2]string{{chorus.Name, AnchorName}}, cc.Pairs...)
	}
	return compare(ctx, cfg, cc, chorus)
}

// compare runs cc and reports it with the machine's load around it and
// Chorus's broker counters.
func compare(ctx context.Context, cfg Config, cc CompareConfig, chorus *Broker) (Report, error) {
	rep := Report{Rounds: cfg.Rounds, Load: cfg.MachineLoad(), Notes: []string{
		placement(cfg.Process != nil),
		"every load runs on every broker in each round, back to back, the brokers' order rotating from round to round; a ratio is taken within a round, the median over rounds is reported with its min and max",
		"chorus-nostore (--nostore) is Chorus's broker without its SQLite store hook: it separates the policy hooks' cost from persistence",
		fmt.Sprintf("both embedded brokers: max_client_writes_pending %d; 64-byte JSON payloads; 4 publishers, each synchronous at QoS 1", broker.DefaultWritesPending),
	}}
	cmp, err := Compare(ctx, cc)
	if err != nil {
		return Report{}, err
	}
	rep.Results, rep.Ratios, rep.LoadEnd = cmp.Results, cmp.Ratios, cfg.MachineLoad()
	st := chorus.Stats()
	rep.Notes = append(rep.Notes, fmt.Sprintf("chorus broker counters: %d received, %d sent, %d dropped, %d throttled",
		st.MessagesReceived, st.MessagesSent, st.MessagesDropped, st.PublishesThrottled))
	return rep, nil
}

// placement is the report's note on which process each broker ran in.
func placement(ownProcesses bool) string {
	if ownProcesses {
		return "every broker runs in a process of its own (Chorus's and bare mochi's in `chorus bench broker-serve` children, the --mqtt-url anchor as started), the load generator in another"
	}
	return "load generator and the embedded brokers share one process (--in-process); the --mqtt-url broker (anchor) runs in its own"
}

// progressLine is Compare's progress as one line per run.
func progressLine(printf func(format string, args ...any)) func(int, Load, Result) {
	return func(round int, l Load, r Result) {
		printf("round %d %-14s qos %d fan-out %3d rate %5.0f: %8.0f deliveries/s, p50 %.2f ms, p99 %.2f ms, loss %.1f%%",
			round+1, r.Broker, r.QoS, r.FanOut, l.Rate, r.DelPerSec, r.P50Ms, r.P99Ms, r.LossPct)
	}
}
