package fleetbench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokerbench"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/fleet/fleetclient"
	"github.com/chorus-edge/chorus/fleet/gatewayd"
	"github.com/chorus-edge/chorus/fleet/sqlite"
)

// Config configures Run, `chorus bench fleet`: roll a skill out to Devices
// simulated devices and back, and time the convergence. The zero value runs
// 100 devices against a gateway in this process.
type Config struct {
	Devices     int // simulated devices (100)
	LocalSkills int // local (not fleet-managed) skills each device reports
	// APIEnrol devices are enrolled through the HTTP API (timed); the rest
	// are registered in the store before the controller starts.
	APIEnrol    int
	ArtifactKiB int // padding of the published skill
	Workers     int // simulated-device appliers, which bound concurrent downloads (32)
	// MaxWritesPending is the in-process broker's max_writes_pending; 0 = its default.
	MaxWritesPending int32

	// DeviceProcess, when set, returns the child that runs the simulated
	// devices (`chorus bench fleet-devices`, which runs Serve), so the
	// gateway's CPU and memory are its own; nil runs them in this process.
	DeviceProcess func() *exec.Cmd

	// Server, Token and MQTTURL target a running gateway instead of one in
	// this process: devices are enrolled under a run tag, the rollouts target
	// that tag, and the devices are removed at the end.
	Server, Token, MQTTURL string

	// HeapProfile, when set, is the prefix of the heap profiles written at
	// every phase boundary (PREFIX.<phase>.pb.gz).
	HeapProfile string
	// PeakHeapProfile, when set, is the prefix of PREFIX.peak.pb.gz, the heap
	// profile after the highest heap of the run. Its own option, off in
	// scripts/bench.sh: each rise of 8 MiB writes a profile during the
	// rollouts (a dozen at 10,000 devices), and their CPU lands in the timed
	// window the install figure measures.
	PeakHeapProfile string
	// Phase, when set, is called at every phase boundary of the in-process
	// gateway's run ("settled", "install:start", "install:end", ...), after
	// the figures of that boundary are read (cmd/chorus starts and stops
	// --rollouts-cpuprofile there).
	Phase func(name string)
	// ValidateSkill is the in-process gateway's (cmd/chorus wires
	// device/discovery).
	ValidateSkill func(dir string) (controller.SkillInfo, error)
	// Process reads CPU time and memory from /proc; nil fields leave those
	// figures out (cmd/chorus wires device/agentbench).
	Process ProcessStats
	// MachineLoad reads the machine's load before the run (cmd/chorus wires
	// agentbench.LoadAvg); nil reports "n/a".
	MachineLoad func() string
	// Progress prints a line (stderr).
	Progress func(format string, args ...any)
	Logger   *slog.Logger
}

// ProcessStats reads a process's figures; pid 0 is this process.
type ProcessStats struct {
	Memory func(pid int) (hwmKiB, rssKiB int64, err error)
	CPU    func(pid int) (time.Duration, error)
}

func (c *Config) setDefaults() {
	if c.Devices <= 0 {
		c.Devices = 100
	}
	if c.Workers <= 0 {
		c.Workers = 32
	}
	if c.Progress == nil {
		c.Progress = func(string, ...any) {}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MachineLoad == nil {
		c.MachineLoad = func() string { return "n/a" }
	}
}

// Report is `chorus bench fleet --json`.
type Report struct {
	Devices       int                       `json:"devices"`
	LocalSkills   int                       `json:"local_skills_per_device"`
	Mode          string                    `json:"mode"` // in-process gateway, or --server
	DeviceProcess string                    `json:"simulated_devices"`
	Enrol         map[string]float64        `json:"enrol"`
	ConnectMs     float64                   `json:"connect_ms"`
	SettleMs      float64                   `json:"settle_ms"`
	Phases        []PhaseResult             `json:"phases"`
	Broker        map[string]any            `json:"broker,omitempty"`
	Gateway       map[string]any            `json:"gateway_process,omitempty"`
	GoMemory      map[string]GoMem          `json:"gateway_go_memory,omitempty"`      // phase → runtime.MemStats summary
	GoMemoryPeak  *GoMemPeak                `json:"gateway_go_memory_peak,omitempty"` // maxima sampled between the phases
	DeviceSide    map[string]any            `json:"device_side"`
	SQLite        map[string]any            `json:"sqlite,omitempty"`
	Errors        Errors                    `json:"device_errors"`
	Load          string                    `json:"machine_load"`
	Notes         []string                  `json:"notes"`
	statsByPhase  map[string]broker.Stats   // Phase → broker counters
	rusageByPhase map[string]syscall.Rusage // Phase → this process's rusage
}

// Run runs the benchmark within ctx. The report is returned with what was
// measured even when err is not nil.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.setDefaults()
	load := cfg.MachineLoad() // before the run, as the other benchmarks read it
	dir, err := TempDir()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	rep := &Report{Devices: cfg.Devices, LocalSkills: cfg.LocalSkills, Enrol: map[string]float64{}, DeviceSide: map[string]any{},
		statsByPhase: map[string]broker.Stats{}, rusageByPhase: map[string]syscall.Rusage{}, GoMemory: map[string]GoMem{}, Load: load}
	rep.DeviceProcess = "a child process (chorus bench fleet-devices)"
	if cfg.DeviceProcess == nil {
		rep.DeviceProcess = "in this process"
	}
	b := &bench{cfg: cfg, dir: dir, rep: rep}
	if cfg.Server != "" {
		return rep, b.remote(ctx)
	}
	return rep, b.inProcess(ctx)
}

// bench is one run.
type bench struct {
	cfg Config
	dir string
	rep *Report
}

func (b *bench) inProcess(ctx context.Context) error {
	cfg, rep := b.cfg, b.rep
	rep.Mode = "in-process gateway (broker + SQLite store + controller + HTTP API) on 127.0.0.1"
	ids, err := DeviceIDs("sim", cfg.Devices)
	if err != nil {
		return err
	}
	sample := min(cfg.APIEnrol, cfg.Devices)
	seeded := ids[:cfg.Devices-sample]
	t0 := time.Now()
	creds, err := seedStore(ctx, filepath.Join(b.dir, "fleet.db"), seeded)
	if err != nil {
		return err
	}
	rep.Enrol["store_seeded"] = float64(len(seeded))
	rep.Enrol["store_seed_ms"] = ms(time.Since(t0))
	gc := configs.Default()
	gc.DataDir, gc.Broker.MQTTListen, gc.HTTP.Listen = b.dir, "127.0.0.1:0", "127.0.0.1:0"
	if cfg.MaxWritesPending > 0 {
		gc.Broker.MaxWritesPending = int64(cfg.MaxWritesPending)
	}
	cfg.Progress("starting the gateway in %s (%d devices registered in %s)", b.dir, len(seeded), time.Since(t0).Round(time.Millisecond))
	g := gatewayd.New(gatewayd.Config{Config: &gc, ValidateSkill: cfg.ValidateSkill, Logger: cfg.Logger})
	if err := g.Run(ctx); err != nil {
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
		creds = append(creds, Credential{Device: id, Password: en.Credentials.Password})
	}
	if sample > 0 {
		rep.Enrol["api_enrolled"] = float64(sample)
		rep.Enrol["api_ms_per_device"] = ms(time.Since(t1)) / float64(sample)
	}
	rep.Broker = map[string]any{"max_client_writes_pending": gc.Broker.MaxWritesPending, "max_inflight": gc.Broker.MaxInflight}
	// The peak sampler runs from here to the end of the run: the rollouts'
	// peak falls between the phase boundaries below.
	peak := startPeakSampler(cfg.PeakHeapProfile)
	defer func() {
		pk, errs := peak.stop()
		rep.GoMemoryPeak = &pk
		rep.Notes = append(rep.Notes, errs...)
	}()
	phase := func(name string) {
		peak.setPhase(name)
		rep.statsByPhase[name] = g.Broker().Stats()
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		rep.rusageByPhase[name] = ru
		rep.GoMemory[name] = ReadGoMem()
		if cfg.HeapProfile != "" {
			if err := writeHeapProfile(cfg.HeapProfile, name); err != nil {
				rep.Notes = append(rep.Notes, "heap profile: "+err.Error())
			}
		}
		if cfg.Phase != nil {
			cfg.Phase(name)
		}
	}
	err = b.scenario(ctx, client, g.Broker().Addr(), g.Up().HTTPURL, creds, fleet.AllTarget(), phase)
	b.fillGateway()
	return err
}

// fillGateway computes the broker and gateway-process figures from the
// phase samples.
func (b *bench) fillGateway() {
	rep := b.rep
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
	if mem := b.cfg.Process.Memory; mem != nil {
		if hwm, rss, err := mem(0); err == nil {
			rep.Gateway["vm_hwm_mib"] = float64(hwm) / 1024
			rep.Gateway["vm_rss_mib_end"] = float64(rss) / 1024
		}
	}
	who := "broker + controller + store + HTTP API + the bench driver; simulated devices run in a child process and are not included"
	if b.cfg.DeviceProcess == nil {
		who = "broker + controller + store + HTTP API + the bench driver AND the simulated devices (in this process)"
	}
	rep.Gateway["measured"] = "getrusage(RUSAGE_SELF) and /proc/self/status VmHWM of the bench process: " + who
	var size int64
	for _, n := range []string{"fleet.db", "fleet.db-wal"} {
		if fi, err := os.Stat(filepath.Join(b.dir, n)); err == nil {
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
func seedStore(ctx context.Context, path string, ids []string) ([]Credential, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	st, err := sqlite.Open(path, nil)
	if err != nil {
		return nil, err
	}
	creds, err := Seed(ctx, st, ids, []string{"bench"})
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	return creds, err
}

// scenario connects the simulated devices and runs both rollouts.
func (b *bench) scenario(ctx context.Context, client *fleetclient.Client, mqttAddr, serverURL string,
	creds []Credential, target fleet.Target, phase func(string)) error {
	cfg, rep := b.cfg, b.rep
	spec := Spec{MQTTAddr: mqttAddr, ServerURL: serverURL, Devices: creds, LocalSkills: cfg.LocalSkills, Workers: cfg.Workers}
	t0 := time.Now()
	sim, child, err := b.startSim(ctx, spec)
	if err != nil {
		return err
	}
	rep.ConnectMs = ms(time.Since(t0))
	cfg.Progress("%d devices connected in %s", len(creds), time.Since(t0).Round(time.Millisecond))
	defer b.closeSim(sim, child)
	sc := &Scenario{Client: client, Sim: sim, Devices: len(creds), Target: target, SkillID: "bench.rollout",
		ArtifactBytes: cfg.ArtifactKiB << 10, WorkDir: b.dir, Progress: cfg.Progress, Phase: phase}
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
		cpu0, cpuErr := b.childCPU(child)
		r := sc.Rollout(ctx, action)
		if cpu1, err := b.childCPU(child); err == nil && cpuErr == nil {
			// The simulated devices' CPU during this rollout: it shares
			// the machine with the gateway, so it delays the convergence.
			rep.DeviceSide["cpu_s_"+string(action)] = (cpu1 - cpu0).Seconds()
		}
		if action == fleet.RolloutInstall {
			r.ArtifactSize = sv.Size
		}
		rep.Phases = append(rep.Phases, r)
		cfg.Progress("%s: %d/%d devices converged, p50 %.0f ms, p95 %.0f ms, max %.0f ms; rollout %s after %.0f ms",
			action, r.Device.Converged, r.Device.Devices, r.Device.P50Ms, r.Device.P95Ms, r.Device.MaxMs, r.State, r.TotalMs)
		if r.Error != "" {
			return fmt.Errorf("%s rollout: %s", action, r.Error)
		}
	}
	return nil
}

// childCPU reads the simulated devices' child's CPU time (user +
// system) so far; an error when there is no child or no reader.
func (b *bench) childCPU(child *exec.Cmd) (time.Duration, error) {
	if child == nil || b.cfg.Process.CPU == nil {
		return 0, errors.New("no simulated-devices child process to measure")
	}
	return b.cfg.Process.CPU(child.Process.Pid)
}

// closeSim stops the simulated devices and records their side's figures.
func (b *bench) closeSim(sim Sim, child *exec.Cmd) {
	rep, ps := b.rep, b.cfg.Process
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if child != nil {
		if ps.CPU != nil {
			if cpu, err := ps.CPU(child.Process.Pid); err == nil {
				rep.DeviceSide["cpu_s"] = cpu.Seconds()
			}
		}
		if ps.Memory != nil {
			if hwm, _, err := ps.Memory(child.Process.Pid); err == nil {
				rep.DeviceSide["vm_hwm_mib"] = float64(hwm) / 1024
			}
		}
	}
	errs, n, bytes, err := sim.Close(cctx)
	if err != nil && child != nil {
		_ = child.Process.Kill()
	}
	rep.Errors = errs
	rep.DeviceSide["artifact_downloads"], rep.DeviceSide["artifact_bytes"] = n, bytes
	if err != nil {
		rep.Notes = append(rep.Notes, "closing the simulated devices: "+err.Error())
	}
	if child != nil {
		_ = child.Wait()
	}
}

// startSim runs the simulated devices in a child process (DeviceProcess)
// or here.
func (b *bench) startSim(ctx context.Context, spec Spec) (Sim, *exec.Cmd, error) {
	onConn := func(n, total int) { b.cfg.Progress("connecting devices: %d/%d", n, total) }
	if b.cfg.DeviceProcess == nil {
		fl, err := Start(ctx, SimConfig{MQTTAddr: spec.MQTTAddr, ServerURL: spec.ServerURL, Devices: spec.Devices,
			LocalSkills: spec.LocalSkills, Workers: spec.Workers, Progress: onConn, Logger: b.cfg.Logger.With("component", "sim")})
		if err != nil {
			return nil, nil, err
		}
		return Local{F: fl}, nil, nil
	}
	child := b.cfg.DeviceProcess()
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
	r, err := NewRemote(ctx, stdin, stdout, spec, onConn)
	if err != nil {
		_ = child.Process.Kill()
		_ = child.Wait()
		return nil, nil, err
	}
	return r, child, nil
}

// remote targets a running gateway: devices are enrolled through its API
// under a run tag, the rollouts target that tag (never all devices), and
// the devices are removed at the end.
func (b *bench) remote(ctx context.Context) error {
	cfg, rep := b.cfg, b.rep
	rep.Mode = "remote gateway " + cfg.Server
	if cfg.Token == "" || cfg.MQTTURL == "" {
		return errors.New("--server needs --token and --mqtt-url")
	}
	t, err := brokerbench.ParseURL("gateway", cfg.MQTTURL)
	if err != nil {
		return err
	}
	client, err := fleetclient.New(fleetclient.Config{BaseURL: cfg.Server, Token: cfg.Token})
	if err != nil {
		return err
	}
	run := fmt.Sprintf("bench%d", time.Now().Unix()%1e6)
	ids, err := DeviceIDs(run, cfg.Devices)
	if err != nil {
		return err
	}
	var creds []Credential
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
		creds = append(creds, Credential{Device: id, Password: en.Credentials.Password})
	}
	rep.Enrol["api_enrolled"] = float64(len(ids))
	rep.Enrol["api_ms_per_device"] = ms(time.Since(t0)) / float64(len(ids))
	rep.Notes = append(rep.Notes, "broker counters, gateway CPU and RSS are not visible from outside the gateway; read them on its host")
	return b.scenario(ctx, client, t.Addr, cfg.Server, creds, fleet.TagTarget(run), nil)
}
