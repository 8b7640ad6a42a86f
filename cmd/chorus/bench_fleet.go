package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokerbench"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/device/agentbench"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/fleetbench"
	"github.com/chorus-edge/chorus/fleet/fleetclient"
	"github.com/chorus-edge/chorus/fleet/sqlite"
)

// ---- fleet ----

type benchFleetFlags struct {
	devices, skills, apiSample, artifactKiB, workers int
	writesPending                                    int32
	deadline                                         time.Duration
	jsonOut, inProcessDevices                        bool
	server, token, mqttURL, cpuProfile, heapProfile  string
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
	GoMemory      map[string]goMem          `json:"gateway_go_memory,omitempty"` // phase → runtime.MemStats summary
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
	fl.StringVar(&f.heapProfile, "heapprofile", "", "write heap profiles of the gateway process to PREFIX.<phase>.pb.gz at every phase boundary (go tool pprof)")
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
		statsByPhase: map[string]broker.Stats{}, rusageByPhase: map[string]syscall.Rusage{}, GoMemory: map[string]goMem{}}
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
	g, err := a.startGateway(ctx, cfg, "", nil)
	if err != nil {
		return err
	}
	defer g.Close()
	client, err := fleetclient.New(fleetclient.Config{BaseURL: g.Up().HTTPURL, Token: g.Token()})
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
		rep.statsByPhase[name] = g.Broker().Stats()
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		rep.rusageByPhase[name] = ru
		rep.GoMemory[name] = readGoMem()
		if f.heapProfile != "" {
			if err := writeHeapProfile(f.heapProfile, name); err != nil {
				rep.Notes = append(rep.Notes, "heap profile: "+err.Error())
			}
		}
	}
	err = a.runFleetScenario(ctx, f, rep, dir, client, g.Broker().Addr(), g.Up().HTTPURL, creds,
		fleet.Target{Kind: fleet.TargetAll}, phase)
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
	mqttAddr, serverURL string, creds []fleetbench.Credential, target fleet.Target, phase func(string)) error {
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
	if phase != nil {
		phase("settled")
	}
	sv, err := sc.Publish(ctx)
	if err != nil {
		return fmt.Errorf("publish the bench skill: %w", err)
	}
	for _, action := range []fleet.RolloutAction{fleet.RolloutInstall, fleet.RolloutUninstall} {
		r := sc.Rollout(ctx, action)
		if action == fleet.RolloutInstall {
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
	return a.runFleetScenario(ctx, f, rep, dir, client, t.Addr, f.server, creds, fleet.Target{Kind: fleet.TargetTag, Value: run}, nil)
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
