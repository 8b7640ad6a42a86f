package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokerbench"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/device/agentbench"
	"github.com/chorus-edge/chorus/fleet/fleetbench"
	"github.com/chorus-edge/chorus/fleet/fleetclient"
	"github.com/chorus-edge/chorus/fleet/sqlite"
)

// `chorus bench`: the measurements of docs/benchmarks.md. Each command is
// bounded in time, cleans up what it started, shows progress on stderr and
// prints a table, or JSON with --json.
func (a *app) newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Measure fleet convergence, broker overhead and agent footprint"}
	cmd.AddCommand(a.newBenchFleetCmd(), a.newBenchBrokerCmd(), a.newBenchAgentCmd(), a.newBenchDevicesCmd())
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

// ---- fleet ----

type benchFleetFlags struct {
	devices, skills, apiSample, artifactKiB, workers int
	writesPending                                    int32
	deadline                                         time.Duration
	jsonOut, inProcessDevices                        bool
	server, token, mqttURL, cpuProfile               string
}

// fleetReport is `chorus bench fleet --json`.
type fleetReport struct {
	Devices       int                       `json:"devices"`
	LocalSkills   int                       `json:"local_skills_per_device"`
	Mode          string                    `json:"mode"` // in-process gateway, or --server
	DeviceProcess string                    `json:"simulated_devices"`
	Enrol         map[string]float64        `json:"enrol"`
	ConnectMs     float64                   `json:"connect_ms"`
	SettleMs      float64                   `json:"settle_ms"`
	Phases        []fleetbench.PhaseResult  `json:"phases"`
	Broker        map[string]any            `json:"broker,omitempty"`
	Gateway       map[string]any            `json:"gateway_process,omitempty"`
	DeviceSide    map[string]any            `json:"device_side"`
	SQLite        map[string]any            `json:"sqlite,omitempty"`
	Errors        fleetbench.Errors         `json:"device_errors"`
	Load          string                    `json:"machine_load"`
	Notes         []string                  `json:"notes"`
	statsByPhase  map[string]broker.Stats   // Phase → broker counters
	rusageByPhase map[string]syscall.Rusage // Phase → this process's rusage
}

func (a *app) newBenchFleetCmd() *cobra.Command {
	var f benchFleetFlags
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Roll a skill out to N simulated devices and back; time the convergence",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.devices <= 0 {
				return errors.New("--devices must be at least 1")
			}
			a.benchLogger(cmd)
			ctx, cancel := context.WithTimeout(cmd.Context(), f.deadline)
			defer cancel()
			if f.cpuProfile != "" {
				pf, err := os.Create(f.cpuProfile)
				if err != nil {
					return err
				}
				defer pf.Close()
				if err := pprof.StartCPUProfile(pf); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			rep, err := a.benchFleet(ctx, f)
			if rep != nil {
				if perr := a.printFleet(rep, f.jsonOut); perr != nil {
					return perr
				}
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.devices, "devices", 100, "simulated devices")
	fl.IntVar(&f.skills, "skills", 5, "local (not fleet-managed) skills each device reports")
	fl.IntVar(&f.apiSample, "api-enrol", 20, "devices enrolled through the HTTP API (timed); the rest are registered in the store before the controller starts")
	fl.IntVar(&f.artifactKiB, "artifact-kib", 16, "size of the published skill's padding, KiB")
	fl.IntVar(&f.workers, "workers", 32, "simulated-device appliers (bounds concurrent artifact downloads)")
	fl.Int32Var(&f.writesPending, "max-writes-pending", 0, "broker.max_writes_pending for the in-process gateway (0 = the default)")
	fl.DurationVar(&f.deadline, "deadline", 5*time.Minute, "bound on the whole run")
	fl.BoolVar(&f.jsonOut, "json", false, "print the report as JSON")
	fl.BoolVar(&f.inProcessDevices, "in-process-devices", false, "run the simulated devices in this process (default: a child `chorus bench fleet-devices`, so the gateway's CPU and RSS are its own)")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the gateway process (go tool pprof)")
	fl.StringVar(&f.server, "server", "", "target a running gateway's HTTP URL instead of starting one (needs --token and --mqtt-url)")
	fl.StringVar(&f.token, "token", "", "operator token of --server")
	fl.StringVar(&f.mqttURL, "mqtt-url", "", "broker of --server, mqtt://host:port")
	return cmd
}

func (a *app) benchFleet(ctx context.Context, f benchFleetFlags) (*fleetReport, error) {
	dir, err := fleetbench.TempDir()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	rep := &fleetReport{Devices: f.devices, LocalSkills: f.skills, Enrol: map[string]float64{}, Load: loadAvg(), DeviceSide: map[string]any{},
		statsByPhase: map[string]broker.Stats{}, rusageByPhase: map[string]syscall.Rusage{}}
	rep.DeviceProcess = "a child process (chorus bench fleet-devices)"
	if f.inProcessDevices {
		rep.DeviceProcess = "in this process"
	}
	if f.server != "" {
		return rep, a.benchFleetRemote(ctx, f, dir, rep)
	}
	return rep, a.benchFleetInProcess(ctx, f, dir, rep)
}

func (a *app) benchFleetInProcess(ctx context.Context, f benchFleetFlags, dir string, rep *fleetReport) error {
	rep.Mode = "in-process gateway (broker + SQLite store + controller + HTTP API) on 127.0.0.1"
	ids, err := fleetbench.DeviceIDs("sim", f.devices)
	if err != nil {
		return err
	}
	sample := min(f.apiSample, f.devices)
	seeded := ids[:f.devices-sample]
	t0 := time.Now()
	creds, err := seedStore(ctx, filepath.Join(dir, "fleet.db"), seeded)
	if err != nil {
		return err
	}
	rep.Enrol["store_seeded"] = float64(len(seeded))
	rep.Enrol["store_seed_ms"] = ms(time.Since(t0))
	cfg := configs.Default()
	cfg.DataDir, cfg.Broker.MQTTListen, cfg.HTTP.Listen = dir, "127.0.0.1:0", "127.0.0.1:0"
	if f.writesPending > 0 {
		cfg.Broker.MaxWritesPending = int64(f.writesPending)
	}
	a.progress("starting the gateway in %s (%d devices registered in %s)", dir, len(seeded), time.Since(t0).Round(time.Millisecond))
	g, err := a.startGateway(cfg, "")
	if err != nil {
		return err
	}
	defer g.close()
	client, err := fleetclient.New(fleetclient.Config{BaseURL: g.up.HTTPURL, Token: g.token})
	if err != nil {
		return err
	}
	t1 := time.Now()
	for _, id := range ids[len(seeded):] {
		en, err := client.AddDevice(ctx, id, []string{"bench"})
		if err != nil {
			return fmt.Errorf("enrol %s: %w", id, err)
		}
		creds = append(creds, fleetbench.Credential{Device: id, Password: en.Credentials.Password})
	}
	if sample > 0 {
		rep.Enrol["api_enrolled"] = float64(sample)
		rep.Enrol["api_ms_per_device"] = ms(time.Since(t1)) / float64(sample)
	}
	rep.Broker = map[string]any{"max_client_writes_pending": cfg.Broker.MaxWritesPending, "max_inflight": cfg.Broker.MaxInflight}
	phase := func(name string) {
		rep.statsByPhase[name] = g.broker.Stats()
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		rep.rusageByPhase[name] = ru
	}
	err = a.runFleetScenario(ctx, f, rep, dir, client, g.broker.Addr(), g.up.HTTPURL, creds,
		fleetclient.Target{Kind: fleetclient.TargetAll}, phase)
	a.fillGateway(rep, f, dir)
	return err
}

// fillGateway computes the broker and gateway-process figures from the
// phase samples.
func (a *app) fillGateway(rep *fleetReport, f benchFleetFlags, dir string) {
	first, last := rep.statsByPhase["install:start"], rep.statsByPhase["uninstall:end"]
	if _, ok := rep.statsByPhase["uninstall:end"]; ok {
		rep.Broker["messages_received"] = last.MessagesReceived - first.MessagesReceived
		rep.Broker["messages_sent"] = last.MessagesSent - first.MessagesSent
		rep.Broker["bytes_received"] = last.BytesReceived - first.BytesReceived
		rep.Broker["bytes_sent"] = last.BytesSent - first.BytesSent
		rep.Broker["messages_dropped"] = last.MessagesDropped - first.MessagesDropped
		rep.Broker["publishes_throttled"] = last.PublishesThrottled - first.PublishesThrottled
		rep.Broker["window"] = "from the install rollout's creation to the uninstall's end"
		r0, r1 := rep.rusageByPhase["install:start"], rep.rusageByPhase["uninstall:end"]
		cpu := tv(r1.Utime) + tv(r1.Stime) - tv(r0.Utime) - tv(r0.Stime)
		rep.Gateway = map[string]any{"cpu_s_both_rollouts": cpu.Seconds()}
	}
	if rep.Gateway == nil {
		rep.Gateway = map[string]any{}
	}
	if m, err := agentbench.ProcMemory(0); err == nil {
		rep.Gateway["vm_hwm_mib"] = float64(m.HWMKiB) / 1024
		rep.Gateway["vm_rss_mib_end"] = float64(m.RSSKiB) / 1024
	}
	who := "broker + controller + store + HTTP API + the bench driver; simulated devices run in a child process and are not included"
	if f.inProcessDevices {
		who = "broker + controller + store + HTTP API + the bench driver AND the simulated devices (--in-process-devices)"
	}
	rep.Gateway["measured"] = "getrusage(RUSAGE_SELF) and /proc/self/status VmHWM of the bench process: " + who
	var size int64
	for _, n := range []string{"fleet.db", "fleet.db-wal"} {
		if fi, err := os.Stat(filepath.Join(dir, n)); err == nil {
			size += fi.Size()
		}
	}
	rep.SQLite = map[string]any{"writes": "n/a (the store exposes no write counter)", "fleet_db_and_wal_bytes_end": size}
}

func tv(t syscall.Timeval) time.Duration {
	return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// seedStore registers ids in a fresh fleet store before the controller runs.
func seedStore(ctx context.Context, path string, ids []string) ([]fleetbench.Credential, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	st, err := sqlite.Open(path, nil)
	if err != nil {
		return nil, err
	}
	creds, err := fleetbench.Seed(ctx, st, ids, []string{"bench"})
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	return creds, err
}

// runFleetScenario connects the simulated devices and runs both rollouts.
func (a *app) runFleetScenario(ctx context.Context, f benchFleetFlags, rep *fleetReport, dir string, client *fleetclient.Client,
	mqttAddr, serverURL string, creds []fleetbench.Credential, target fleetclient.Target, phase func(string)) error {
	spec := fleetbench.Spec{MQTTAddr: mqttAddr, ServerURL: serverURL, Devices: creds, LocalSkills: f.skills, Workers: f.workers}
	t0 := time.Now()
	sim, child, err := a.startSim(ctx, f, spec)
	if err != nil {
		return err
	}
	rep.ConnectMs = ms(time.Since(t0))
	a.progress("%d devices connected in %s", len(creds), time.Since(t0).Round(time.Millisecond))
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if child != nil {
			if u, s, err := agentbench.CPUTime(child.Process.Pid); err == nil {
				rep.DeviceSide["cpu_s"] = (u + s).Seconds()
			}
			if m, err := agentbench.ProcMemory(child.Process.Pid); err == nil {
				rep.DeviceSide["vm_hwm_mib"] = float64(m.HWMKiB) / 1024
			}
		}
		errs, n, b, err := sim.Close(cctx)
		if err != nil && child != nil {
			_ = child.Process.Kill()
		}
		rep.Errors = errs
		rep.DeviceSide["artifact_downloads"], rep.DeviceSide["artifact_bytes"] = n, b
		if err != nil {
			rep.Notes = append(rep.Notes, "closing the simulated devices: "+err.Error())
		}
		if child != nil {
			_ = child.Wait()
		}
	}()
	sc := &fleetbench.Scenario{Client: client, Sim: sim, Devices: len(creds), Target: target, SkillID: "bench.rollout",
		ArtifactBytes: f.artifactKiB << 10, WorkDir: dir, Progress: a.progress, Phase: phase}
	settle, err := sc.Settle(ctx)
	if err != nil {
		return err
	}
	rep.SettleMs = ms(settle)
	sv, err := sc.Publish(ctx)
	if err != nil {
		return fmt.Errorf("publish the bench skill: %w", err)
	}
	for _, action := range []string{fleetclient.ActionInstall, fleetclient.ActionUninstall} {
		r := sc.Rollout(ctx, action)
		if action == fleetclient.ActionInstall {
			r.ArtifactSize = sv.Size
		}
		rep.Phases = append(rep.Phases, r)
		a.progress("%s: %d/%d devices converged, p50 %.0f ms, p95 %.0f ms, max %.0f ms; rollout %s after %.0f ms",
			action, r.Device.Converged, r.Device.Devices, r.Device.P50Ms, r.Device.P95Ms, r.Device.MaxMs, r.State, r.TotalMs)
		if r.Error != "" {
			return fmt.Errorf("%s rollout: %s", action, r.Error)
		}
	}
	return nil
}

// startSim runs the simulated devices in a child process (default) or here.
func (a *app) startSim(ctx context.Context, f benchFleetFlags, spec fleetbench.Spec) (fleetbench.Sim, *exec.Cmd, error) {
	onConn := func(n, total int) { a.progress("connecting devices: %d/%d", n, total) }
	if f.inProcessDevices {
		fl, err := fleetbench.Start(ctx, fleetbench.Config{MQTTAddr: spec.MQTTAddr, ServerURL: spec.ServerURL, Devices: spec.Devices,
			LocalSkills: spec.LocalSkills, Workers: spec.Workers, Progress: onConn, Logger: a.log.With("component", "sim")})
		if err != nil {
			return nil, nil, err
		}
		return fleetbench.Local{F: fl}, nil, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	child := exec.Command(exe, "bench", "fleet-devices")
	child.Stderr = a.stderr
	stdin, err := child.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := child.Start(); err != nil {
		return nil, nil, fmt.Errorf("start the simulated devices: %w", err)
	}
	r, err := fleetbench.NewRemote(ctx, stdin, stdout, spec, onConn)
	if err != nil {
		_ = child.Process.Kill()
		_ = child.Wait()
		return nil, nil, err
	}
	return r, child, nil
}

// benchFleetRemote targets a running gateway: devices are enrolled through
// its API under a run tag, the rollouts target that tag (never --all), and
// the devices are removed at the end.
func (a *app) benchFleetRemote(ctx context.Context, f benchFleetFlags, dir string, rep *fleetReport) error {
	rep.Mode = "remote gateway " + f.server
	if f.token == "" || f.mqttURL == "" {
		return errors.New("--server needs --token and --mqtt-url")
	}
	t, err := brokerbench.ParseURL("gateway", f.mqttURL)
	if err != nil {
		return err
	}
	client, err := fleetclient.New(fleetclient.Config{BaseURL: f.server, Token: f.token})
	if err != nil {
		return err
	}
	run := fmt.Sprintf("bench%d", time.Now().Unix()%1e6)
	ids, err := fleetbench.DeviceIDs(run, f.devices)
	if err != nil {
		return err
	}
	var creds []fleetbench.Credential
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for _, c := range creds {
			_ = client.RemoveDevice(cctx, c.Device)
		}
	}()
	t0 := time.Now()
	for _, id := range ids {
		en, err := client.AddDevice(ctx, id, []string{run})
		if err != nil {
			return fmt.Errorf("enrol %s: %w", id, err)
		}
		creds = append(creds, fleetbench.Credential{Device: id, Password: en.Credentials.Password})
	}
	rep.Enrol["api_enrolled"] = float64(len(ids))
	rep.Enrol["api_ms_per_device"] = ms(time.Since(t0)) / float64(len(ids))
	rep.Notes = append(rep.Notes, "broker counters, gateway CPU and RSS are not visible from outside the gateway; read them on its host")
	return a.runFleetScenario(ctx, f, rep, dir, client, t.Addr, f.server, creds, fleetclient.Target{Kind: fleetclient.TargetTag, Value: run}, nil)
}

func (a *app) printFleet(rep *fleetReport, jsonOut bool) error {
	if rep.DeviceSide == nil {
		rep.DeviceSide = map[string]any{}
	}
	if jsonOut {
		return a.printJSON(rep)
	}
	w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "devices\t%d (%s)\n", rep.Devices, rep.Mode)
	fmt.Fprintf(w, "connect / settle\t%.0f ms / %.0f ms\n", rep.ConnectMs, rep.SettleMs)
	for _, p := range rep.Phases {
		fmt.Fprintf(w, "%s\tper device p50 %.0f ms, p95 %.0f ms, max %.0f ms (%d/%d); total %.0f ms, rollout %s\n",
			p.Action, p.Device.P50Ms, p.Device.P95Ms, p.Device.MaxMs, p.Device.Converged, p.Device.Devices, p.TotalMs, p.State)
	}
	for k, v := range rep.Broker {
		fmt.Fprintf(w, "broker %s\t%v\n", k, v)
	}
	for k, v := range rep.Gateway {
		fmt.Fprintf(w, "gateway %s\t%v\n", k, v)
	}
	for k, v := range rep.Enrol {
		fmt.Fprintf(w, "enrol %s\t%v\n", k, v)
	}
	fmt.Fprintf(w, "machine load\t%s\n", rep.Load)
	return w.Flush()
}

// loadAvg is /proc/loadavg's first three fields, to print next to figures.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "n/a"
	}
	return strings.Join(f[:3], " ")
}

// newBenchDevicesCmd is the child side of `bench fleet` (hidden).
func (a *app) newBenchDevicesCmd() *cobra.Command {
	return &cobra.Command{
		Use: "fleet-devices", Hidden: true, Args: cobra.NoArgs,
		Short: "Run simulated devices for `chorus bench fleet` (JSON lines on stdin/stdout)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fleetbench.Serve(cmd.Context(), os.Stdin, a.stdout)
		},
	}
}

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

// ---- agent ----

type agentReport struct {
	Skills          int     `json:"skills"`
	DiscoverDirs    int     `json:"discovery_dirs"`
	DiscoverMs      float64 `json:"discovery_ms"`
	RescanMs        float64 `json:"rescan_discovery_ms"`
	BusRescanMs     float64 `json:"rescan_bus_round_trip_ms"`
	StartToReadyMs  float64 `json:"start_to_ready_ms"`
	AgentRSSMiB     float64 `json:"agent_idle_vm_rss_mib"`
	AgentHWMMiB     float64 `json:"agent_vm_hwm_mib"`
	SkillProcs      int     `json:"skill_processes"`
	SkillProcsRSSMi float64 `json:"skill_processes_vm_rss_mib"`
	Load            string  `json:"machine_load"`
	Notes           []string
}

func (a *app) newBenchAgentCmd() *cobra.Command {
	var (
		skills, dirs int
		idle         time.Duration
		jsonOut      bool
		bin          string
	)
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Agent start-to-ready, discovery and rescan time, idle RSS with N trivial skills",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.benchLogger(cmd)
			ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
			defer cancel()
			rep, err := a.benchAgent(ctx, skills, dirs, idle, bin)
			if err != nil {
				return err
			}
			if jsonOut {
				return a.printJSON(rep)
			}
			w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintf(w, "skills\t%d\nstart to ready\t%.0f ms\ndiscovery of %d dirs\t%.1f ms (rescan %.1f ms)\nbus rescan round trip\t%.1f ms\n",
				rep.Skills, rep.StartToReadyMs, rep.DiscoverDirs, rep.DiscoverMs, rep.RescanMs, rep.BusRescanMs)
			fmt.Fprintf(w, "agent idle VmRSS\t%.1f MiB (VmHWM %.1f MiB)\nskill processes\t%d, %.1f MiB RSS in all\nmachine load\t%s\n",
				rep.AgentRSSMiB, rep.AgentHWMMiB, rep.SkillProcs, rep.SkillProcsRSSMi, rep.Load)
			return w.Flush()
		},
	}
	cmd.Flags().IntVar(&skills, "skills", 20, "trivial skills the agent runs")
	cmd.Flags().IntVar(&dirs, "discover", 1000, "skill directories (1 KiB execs) to time discovery over")
	cmd.Flags().DurationVar(&idle, "idle", 3*time.Second, "wait after ready before reading the idle RSS")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the report as JSON")
	cmd.Flags().StringVar(&bin, "bin", "", "the chorus binary to run as the agent (default: this one)")
	return cmd
}

func (a *app) benchAgent(ctx context.Context, n, dirs int, idle time.Duration, bin string) (*agentReport, error) {
	dir, err := fleetbench.TempDir()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	rep := &agentReport{Skills: n, DiscoverDirs: dirs, Load: loadAvg()}
	if err := timeDiscovery(filepath.Join(dir, "discover"), dirs, rep); err != nil {
		return nil, err
	}
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	return rep, a.runBenchAgent(ctx, dir, n, idle, bin, rep)
}

func timeDiscovery(root string, n int, rep *agentReport) error {
	if _, err := agentbench.MakeSkills(root, n, 1024); err != nil {
		return err
	}
	cold, found, err := agentbench.TimeDiscovery(root)
	if err != nil {
		return err
	}
	if found != n {
		return fmt.Errorf("discovery found %d of %d skills", found, n)
	}
	best := time.Hour
	for range 3 {
		d, _, _ := agentbench.TimeDiscovery(root)
		best = min(best, d)
	}
	rep.DiscoverMs, rep.RescanMs = ms(cold), ms(best)
	rep.Notes = append(rep.Notes, "discovery_ms is the first scan after the tree was written (page cache warm, as on a running device); rescan is the best of 3 more")
	return nil
}

// runBenchAgent runs `chorus agent` as a child against an in-process broker
// and watches its retained skills report.
func (a *app) runBenchAgent(ctx context.Context, dir string, n int, idle time.Duration, bin string, rep *agentReport) error {
	root := filepath.Join(dir, "skills")
	if _, err := agentbench.MakeSkills(root, n, 1024); err != nil {
		return err
	}
	const dev = "bench-agent"
	secret, _ := broker.NewSecret()
	opSecret, _ := broker.NewSecret()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	table, err := broker.NewTable(broker.DeviceAccount(dev, broker.HashSecret(secret), pub, 1),
		broker.OperatorAccount("bench", broker.HashSecret(opSecret)))
	if err != nil {
		return err
	}
	b, err := broker.Start(broker.Config{MQTTListen: "127.0.0.1:0", Logger: a.log}, table)
	if err != nil {
		return err
	}
	defer b.Close()
	creds := configs.AgentCredentials{Device: dev, MQTTURL: b.URL(), Username: dev, Password: secret,
		SkillKey: configs.EncodeSkillKey(priv), KeyVersion: 1}
	credPath, cfgPath := filepath.Join(dir, "agent.json"), filepath.Join(dir, "config.json")
	if err := configs.WriteAgentCredentials(credPath, creds); err != nil {
		return err
	}
	if err := os.WriteFile(cfgPath, []byte(`{"connectivity":{"phal_timeout":0}}`), 0o600); err != nil {
		return err
	}
	obs, err := newObserver(ctx, b.Addr(), "operator:bench", opSecret, dev, n)
	if err != nil {
		return err
	}
	defer obs.close()
	child := exec.Command(bin, "agent", "--credentials", credPath, "--config", cfgPath, "--skills", root,
		"--data-dir", filepath.Join(dir, "data"), "--ws-listen", "off", "--log-level", "warn")
	child.Stderr, child.Stdout = a.stderr, io.Discard
	start := time.Now()
	if err := child.Start(); err != nil {
		return fmt.Errorf("start the agent: %w", err)
	}
	defer stopChild(child)
	select {
	case at := <-obs.ready:
		rep.StartToReadyMs = ms(at.Sub(start))
	case <-ctx.Done():
		return fmt.Errorf("the agent did not report %d skills loaded: %w", n, ctx.Err())
	}
	a.progress("agent ready with %d skills after %.0f ms", n, rep.StartToReadyMs)
	if rep.BusRescanMs, err = obs.rescan(ctx); err != nil {
		return err
	}
	time.Sleep(idle) // let start-up garbage go before the idle reading
	m, err := agentbench.ProcMemory(child.Process.Pid)
	if err != nil {
		return err
	}
	rep.AgentRSSMiB, rep.AgentHWMMiB = float64(m.RSSKiB)/1024, float64(m.HWMKiB)/1024
	procs, kib := agentbench.ChildrenMemory(child.Process.Pid)
	rep.SkillProcs, rep.SkillProcsRSSMi = procs, float64(kib)/1024
	rep.Notes = append(rep.Notes, "start_to_ready: exec of `chorus agent` → the retained skills report lists every skill loaded (phal_timeout 0, ready: on-start)")
	return nil
}

func stopChild(c *exec.Cmd) {
	_ = c.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = c.Process.Kill()
		<-done
	}
}

// observer watches one device's skills report and answers bus requests.
type observer struct {
	c      *paho.Client
	dev    string
	ready  chan time.Time
	rescnd chan time.Time
}

func newObserver(ctx context.Context, addr, user, pass, dev string, want int) (*observer, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	o := &observer{dev: dev, ready: make(chan time.Time, 1), rescnd: make(chan time.Time, 1)}
	sent := false
	o.c = paho.NewClient(paho.ClientConfig{Conn: conn, ClientID: "bench-observer", OnPublishReceived: []func(paho.PublishReceived) (bool, error){
		func(pr paho.PublishReceived) (bool, error) {
			now := time.Now()
			if strings.HasSuffix(pr.Packet.Topic, "/bus/skillmanager.rescan.response") {
				select {
				case o.rescnd <- now:
				default:
				}
				return true, nil
			}
			var r struct {
				Skills []struct {
					State string `json:"state"`
				} `json:"skills"`
			}
			if !sent && json.Unmarshal(pr.Packet.Payload, &r) == nil {
				loaded := 0
				for _, s := range r.Skills {
					if s.State == "loaded" {
						loaded++
					}
				}
				if loaded >= want {
					sent = true
					o.ready <- now
				}
			}
			return true, nil
		}}})
	cp := &paho.Connect{KeepAlive: 60, ClientID: "bench-observer", CleanStart: true, Username: user, UsernameFlag: true, Password: []byte(pass), PasswordFlag: true}
	if _, err := o.c.Connect(ctx, cp); err != nil {
		return nil, err
	}
	prefix := "chorus/v1/" + dev
	if _, err := o.c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{
		{Topic: prefix + "/skills", QoS: 1}, {Topic: prefix + "/bus/skillmanager.rescan.response", QoS: 1}}}); err != nil {
		return nil, err
	}
	return o, nil
}

// rescan asks the agent for skillmanager.rescan and times the answer.
func (o *observer) rescan(ctx context.Context) (float64, error) {
	start := time.Now()
	body := []byte(`{"type":"skillmanager.rescan","data":{},"context":{"source":"bench"}}`)
	if _, err := o.c.Publish(ctx, &paho.Publish{Topic: "chorus/v1/" + o.dev + "/bus/skillmanager.rescan", QoS: 1, Payload: body}); err != nil {
		return 0, err
	}
	select {
	case at := <-o.rescnd:
		return ms(at.Sub(start)), nil
	case <-time.After(30 * time.Second):
		return 0, errors.New("no answer to skillmanager.rescan within 30 s")
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (o *observer) close() { _ = o.c.Disconnect(&paho.Disconnect{}) }
