//go:build !chorus_agent

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker/brokerbench"
)

// TestBenchFleetSmoke runs `chorus bench fleet --devices 20` in process so
// the harness cannot rot: the report must be complete and both rollouts
// must converge on every device.
// Serial (no t.Parallel): the bench runs a gateway in this process, whose GC
// and memory-limit settings are process-wide (gcpercent.go), and its rollouts
// must converge within a deadline that other tests' load would eat into.
func TestBenchFleetSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	a := newApp(&out, &errOut, func(string) string { return "" })
	code := a.execute(ctx, []string{"bench", "fleet", "--devices", "20", "--api-enrol", "5",
		"--in-process-devices", "--deadline", "25s", "--json"})
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, errOut.String())
	}
	var rep struct {
		Devices int `json:"devices"`
		Phases  []struct {
			Action string `json:"action"`
			State  string `json:"state"`
			Device struct {
				Devices, Converged int
				P50Ms              float64 `json:"p50_ms"`
				P95Ms              float64 `json:"p95_ms"`
				MaxMs              float64 `json:"max_ms"`
			} `json:"device_convergence"`
			TotalMs float64 `json:"total_ms"`
		} `json:"phases"`
		Broker  map[string]any     `json:"broker"`
		Gateway map[string]any     `json:"gateway_process"`
		SQLite  map[string]any     `json:"sqlite"`
		Errors  map[string]int64   `json:"device_errors"`
		Enrol   map[string]float64 `json:"enrol"`
		Load    string             `json:"machine_load"`
		Peak    *struct {
			HeapInuse struct {
				MiB   float64 `json:"mib"`
				Phase string  `json:"after_phase"`
			} `json:"heap_inuse"`
		} `json:"gateway_go_memory_peak"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out.String())
	}
	if rep.Devices != 20 || len(rep.Phases) != 2 {
		t.Fatalf("devices %d, phases %d; want 20 and 2", rep.Devices, len(rep.Phases))
	}
	for i, want := range []string{"install", "uninstall"} {
		p := rep.Phases[i]
		if p.Action != want || p.State != "succeeded" || p.Device.Converged != 20 {
			t.Errorf("phase %d = %s %s, %d/20 converged; want %s succeeded 20/20", i, p.Action, p.State, p.Device.Converged, want)
		}
		if p.Device.P50Ms <= 0 || p.Device.P95Ms < p.Device.P50Ms || p.Device.MaxMs < p.Device.P95Ms || p.TotalMs <= 0 {
			t.Errorf("phase %s: implausible timings %+v total %v", want, p.Device, p.TotalMs)
		}
	}
	for _, k := range []string{"messages_received", "messages_sent", "bytes_received", "bytes_sent", "max_client_writes_pending"} {
		if _, ok := rep.Broker[k]; !ok {
			t.Errorf("broker.%s missing", k)
		}
	}
	for _, k := range []string{"cpu_s_both_rollouts", "vm_hwm_mib", "measured"} {
		if _, ok := rep.Gateway[k]; !ok {
			t.Errorf("gateway_process.%s missing", k)
		}
	}
	if rep.SQLite["writes"] == nil || rep.Enrol["api_enrolled"] != 5 {
		t.Errorf("sqlite %v, enrol %v", rep.SQLite, rep.Enrol)
	}
	if rep.Peak == nil || rep.Peak.HeapInuse.MiB <= 0 || rep.Peak.HeapInuse.Phase == "" {
		t.Errorf("gateway_go_memory_peak %+v, want the sampled maximum of heap in use and its phase", rep.Peak)
	}
	if rep.Load == "" || rep.Load == "n/a" {
		t.Errorf("machine_load %q, want /proc/loadavg's figures", rep.Load)
	}
	if rep.Errors["apply_errors"] != 0 || rep.Errors["client_errors"] != 0 {
		t.Errorf("device errors: %v", rep.Errors)
	}
}

// TestBenchAgentSmoke runs `chorus bench agent` in process with the built
// binary as the agent: the flags reach agentbench.Run and the JSON carries
// every key scripts/bench.sh and docs/benchmarks.md read.
func TestBenchAgentSmoke(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	errOut := &lockedBuffer{} // the agent child writes its stderr there too
	a := newApp(&out, errOut, func(string) string { return "" })
	code := a.execute(ctx, []string{"bench", "agent", "--bin", chorusBin, "--skills", "2", "--discover", "3", "--idle", "0s", "--json"})
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, errOut.String())
	}
	var rep map[string]any
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out.String())
	}
	for _, k := range []string{"start_to_ready_ms", "agent_idle_vm_rss_mib", "agent_vm_hwm_mib", "agent_idle_rss_anon_mib",
		"agent_idle_rss_file_mib", "skill_processes_vm_rss_mib", "rescan_discovery_ms", "rescan_bus_round_trip_ms", "machine_load", "Notes"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("%s missing from %s", k, out.String())
		}
	}
	if rep["skills"] != 2.0 || rep["discovery_dirs"] != 3.0 || rep["skill_processes"] != 2.0 {
		// The agent's log says whether a skill process had exited, and how.
		t.Errorf("skills %v, discovery_dirs %v, skill_processes %v; want 2, 3, 2\nagent's stderr:\n%s",
			rep["skills"], rep["discovery_dirs"], rep["skill_processes"], errOut.String())
	}
}

// TestBenchFleetMemoryLimitOnlyInProcess: --memory-limit sets the limit of
// the gateway the bench runs in this process, so with --server (a gateway
// elsewhere) it is refused rather than silently applied to the driver.
func TestBenchFleetMemoryLimitOnlyInProcess(t *testing.T) {
	var out, errOut bytes.Buffer
	a := newApp(&out, &errOut, func(string) string { return "" })
	code := a.execute(context.Background(), []string{"bench", "fleet", "--server", "http://127.0.0.1:1",
		"--token", "t", "--mqtt-url", "mqtt://127.0.0.1:1", "--memory-limit", "512MiB"})
	if code == 0 || !bytes.Contains(errOut.Bytes(), []byte("--memory-limit")) {
		t.Fatalf("exit %d, stderr %q; want a refusal naming --memory-limit", code, errOut.String())
	}
}

// TestBenchBrokerSmoke runs the chorus binary's `bench broker` at a tiny
// scale, as a user does: Chorus's broker and bare mochi run in child
// `chorus bench broker-serve` processes by default, every message of every
// load arrives, and the report says where the brokers ran and carries
// Chorus's counters from its process.
func TestBenchBrokerSmoke(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second) // a bound, not the expected time (seconds)
	defer cancel()
	out, err := exec.CommandContext(ctx, chorusBin, "bench", "broker", "--rounds", "3", "--scale", "0.002", "--json").Output()
	if err != nil {
		t.Fatalf("chorus bench broker: %v\n%s", err, out)
	}
	var rep brokerbench.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	brokers := map[string]int{}
	for _, r := range rep.Results {
		brokers[r.Broker]++
		if r.QoS == 1 && (r.Delivered != int64(r.Expected) || r.Expected == 0) {
			t.Errorf("%s QoS 1: delivered %d of %d", r.Broker, r.Delivered, r.Expected)
		}
	}
	if brokers["chorus"] != 21 || brokers["mochi-bare"] != 21 {
		t.Errorf("runs per broker %v, want 21 each (7 loads × 3 rounds)", brokers)
	}
	notes := strings.Join(rep.Notes, "\n")
	if !strings.Contains(notes, "process of its own") || !strings.Contains(notes, "chorus broker counters: ") || strings.Contains(notes, "counters: 0 received") {
		t.Errorf("notes %q: want the placement and Chorus's counters from its process", notes)
	}
}
