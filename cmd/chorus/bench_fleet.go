//go:build !chorus_agent

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime/pprof"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/device/agentbench"
	"github.com/chorus-edge/chorus/fleet/fleetbench"
)

// ---- fleet ----

type benchFleetFlags struct {
	cfg             fleetbench.Config
	deadline        time.Duration
	jsonOut, inProc bool
	cpuProfile      string
	installProfile  string
	memoryLimit     string
	devCPUProfile   string
}

func (a *app) newBenchFleetCmd() *cobra.Command {
	var f benchFleetFlags
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Roll a skill out to N simulated devices and back; time the convergence",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.cfg.Devices <= 0 {
				return errors.New("--devices must be at least 1")
			}
			a.benchLogger(cmd)
			if f.memoryLimit != "" {
				if f.cfg.Server != "" {
					return errors.New("--memory-limit applies to the in-process gateway, and --server targets another one")
				}
				// This process only: the simulated devices' child keeps
				// the runtime's default (GOMEMLIMIT in the environment
				// would reach both, and the child needs gigabytes).
				if err := applyMemoryLimit(f.memoryLimit, a.log); err != nil {
					return err
				}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), f.deadline)
			defer cancel()
			if f.devCPUProfile != "" && (f.inProc || f.cfg.Server != "") {
				return errors.New("--devices-cpuprofile needs the simulated devices in their own process (no --in-process-devices)")
			}
			if f.installProfile != "" && (f.cpuProfile != "" || f.cfg.Server != "") {
				return errors.New("--install-cpuprofile profiles the in-process gateway, and not together with --cpuprofile")
			}
			stop, err := startCPUProfile(f.cpuProfile)
			if err != nil {
				return err
			}
			defer stop()
			cfg := a.benchFleetConfig(f)
			if f.installProfile != "" {
				stopInstall := func() {}
				defer func() { stopInstall() }()
				cfg.Phase = func(name string) {
					switch name {
					case "install:start":
						s, err := startCPUProfile(f.installProfile)
						if err != nil {
							a.log.Warn("install cpu profile", "error", err)
							return
						}
						stopInstall = s
					case "install:end":
						stopInstall()
						stopInstall = func() {}
					}
				}
			}
			rep, err := fleetbench.Run(ctx, cfg)
			if rep != nil {
				if perr := a.printFleet(rep, f.jsonOut); perr != nil {
					return perr
				}
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.cfg.Devices, "devices", 100, "simulated devices")
	fl.IntVar(&f.cfg.LocalSkills, "skills", 5, "local (not fleet-managed) skills each device reports")
	fl.IntVar(&f.cfg.APIEnrol, "api-enrol", 20, "devices enrolled through the HTTP API (timed); the rest are registered in the store before the controller starts")
	fl.IntVar(&f.cfg.ArtifactKiB, "artifact-kib", 16, "size of the published skill's padding, KiB")
	fl.IntVar(&f.cfg.Workers, "workers", 32, "simulated-device appliers (bounds concurrent artifact downloads)")
	fl.Int32Var(&f.cfg.MaxWritesPending, "max-writes-pending", 0, "broker.max_writes_pending for the in-process gateway (0 = the default)")
	fl.StringVar(&f.memoryLimit, "memory-limit", "", "Go soft memory limit of the in-process gateway (this process, not the devices' child), as the gateway's --memory-limit; GOMEMLIMIT wins")
	fl.DurationVar(&f.deadline, "deadline", 5*time.Minute, "bound on the whole run")
	fl.BoolVar(&f.jsonOut, "json", false, "print the report as JSON")
	fl.BoolVar(&f.inProc, "in-process-devices", false, "run the simulated devices in this process (default: a child `chorus bench fleet-devices`, so the gateway's CPU and RSS are its own)")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the gateway process (go tool pprof)")
	fl.StringVar(&f.installProfile, "install-cpuprofile", "", "write a CPU profile of the gateway process during the install rollout only, from its creation to its end (not with --cpuprofile)")
	fl.StringVar(&f.devCPUProfile, "devices-cpuprofile", "", "write a CPU profile of the simulated devices' child process (go tool pprof)")
	fl.StringVar(&f.cfg.HeapProfile, "heapprofile", "", "write heap profiles of the gateway process to PREFIX.<phase>.pb.gz at every phase boundary (go tool pprof)")
	fl.StringVar(&f.cfg.PeakHeapProfile, "peak-heapprofile", "", "write PREFIX.peak.pb.gz, a heap profile of the gateway after the run's highest heap (written during the rollouts, so it adds to their CPU and times)")
	fl.StringVar(&f.cfg.Server, "server", "", "target a running gateway's HTTP URL instead of starting one (needs --token and --mqtt-url)")
	fl.StringVar(&f.cfg.Token, "token", "", "operator token of --server")
	fl.StringVar(&f.cfg.MQTTURL, "mqtt-url", "", "broker of --server, mqtt://host:port")
	return cmd
}

// benchFleetConfig wires the benchmark: this binary as the simulated
// devices' child, the agent's discovery rules, /proc readers, progress on
// stderr, and the gateway's GC tuning for the gateway it runs here.
func (a *app) benchFleetConfig(f benchFleetFlags) fleetbench.Config {
	cfg := f.cfg
	if cfg.Server == "" {
		tuneGatewayGC()
	}
	if !f.inProc {
		cfg.DeviceProcess = func() *exec.Cmd {
			exe, err := os.Executable()
			if err != nil {
				exe = os.Args[0]
			}
			child := exec.Command(exe, "bench", "fleet-devices")
			if f.devCPUProfile != "" {
				child.Args = append(child.Args, "--cpuprofile", f.devCPUProfile)
			}
			child.Stderr = a.stderr
			return child
		}
	}
	cfg.ValidateSkill, cfg.Progress, cfg.Logger, cfg.MachineLoad = validateSkill, a.progress, a.log, agentbench.LoadAvg
	cfg.Process = fleetbench.ProcessStats{
		Memory: func(pid int) (int64, int64, error) {
			m, err := agentbench.ProcMemory(pid)
			return m.HWMKiB, m.RSSKiB, err
		},
		CPU: func(pid int) (time.Duration, error) {
			u, s, err := agentbench.CPUTime(pid)
			return u + s, err
		},
	}
	return cfg
}

func (a *app) printFleet(rep *fleetbench.Report, jsonOut bool) error {
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
	if pk := rep.GoMemoryPeak; pk != nil {
		for _, m := range []struct {
			name string
			at   fleetbench.PeakAt
		}{{"heap in use", pk.HeapInuse}, {"stacks", pk.Stacks}, {"runtime total", pk.Total}, {"runtime total - released", pk.Resident}} {
			fmt.Fprintf(w, "gateway go peak %s\t%.0f MiB, %.0f ms after %s (heap objects %.0f, live at last GC %.0f, unused %.0f, free %.0f, stacks %.0f MiB)\n",
				m.name, m.at.MiB, m.at.AfterPhaseMs, m.at.Phase, m.at.Breakdown.HeapObjects, m.at.Breakdown.HeapLive,
				m.at.Breakdown.HeapUnused, m.at.Breakdown.HeapFree, m.at.Breakdown.Stacks)
		}
	}
	for k, v := range rep.Enrol {
		fmt.Fprintf(w, "enrol %s\t%v\n", k, v)
	}
	fmt.Fprintf(w, "machine load\t%s\n", rep.Load)
	return w.Flush()
}

// newBenchDevicesCmd is the child side of `bench fleet` (hidden).
func (a *app) newBenchDevicesCmd() *cobra.Command {
	var cpuProfile string
	cmd := &cobra.Command{
		Use: "fleet-devices", Hidden: true, Args: cobra.NoArgs,
		Short: "Run simulated devices for `chorus bench fleet` (JSON lines on stdin/stdout)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			stop, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			defer stop()
			return fleetbench.Serve(cmd.Context(), os.Stdin, a.stdout)
		},
	}
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of this process (go tool pprof)")
	return cmd
}

// startCPUProfile starts a CPU profile of this process to path (nothing
// when path is empty); stop ends it and closes the file.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	pf, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		_ = pf.Close()
		return nil, fmt.Errorf("cpu profile %s: %w", path, err)
	}
	return func() { pprof.StopCPUProfile(); _ = pf.Close() }, nil
}
