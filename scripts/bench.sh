#!/usr/bin/env bash
# The measurements of docs/benchmarks.md: the Go benchmarks of the hot paths
# and the three `chorus bench` commands at the issue's sizes, each bounded in
# time. Writes bench-results/*.json and bench-results/summary.txt.
#
#   scripts/bench.sh                 # everything (10-20 minutes on 2 cores; every step has a timeout)
#   FLEET_SIZES="1000" scripts/bench.sh
#   MOSQUITTO_URL=mqtt://127.0.0.1:1884 scripts/bench.sh   # also load Mosquitto
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench-results
mkdir -p "$out"
FLEET_SIZES=${FLEET_SIZES:-"1000 10000"}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
BIN=${BIN:-$tmp/chorus}

# 10,000 devices need about 10,000 sockets on each side; the simulated
# devices run in a child process, so each process needs its own 10k.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

{
  echo "# chorus bench, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -m | awk '/Mem:/ {print $2}') MiB RAM, $(go version | cut -d' ' -f3)"
  echo "open files: $(ulimit -n)"
} > "$out/summary.txt"
load() { echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"; }

echo "== build"
# As scripts/build.sh ships it (static, stripped): the agent's resident size
# includes the pages of its binary, and a cgo build also maps libc.
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$BIN" ./cmd/chorus

echo "== go test -bench (hot paths)"
load >> "$out/summary.txt"
# A failing step is noted in the summary and the next one runs.
fail() { echo "$1: FAILED or timed out (see its output above)" | tee -a "$out/summary.txt"; }
timeout 900 go test -run '^$' -bench . -benchmem -benchtime 1s \
  ./gateway/envelope ./gateway/topic ./broker ./fleet/catalog ./fleet/sqlite ./fleet/controller ./fleet/dashboard ./device/discovery \
  | tee "$out/gobench.txt" || fail "go test -bench"
grep -E '^(Benchmark|ok|FAIL)' "$out/gobench.txt" >> "$out/summary.txt" || true

echo "== chorus bench broker"
load >> "$out/summary.txt"
args=()
if [ -n "${MOSQUITTO_URL:-}" ]; then args+=(--mqtt-url "$MOSQUITTO_URL"); fi
timeout 900 "$BIN" bench broker --json "${args[@]}" > "$out/broker.json" || fail "bench broker"
python3 - "$out/broker.json" >> "$out/summary.txt" <<'PY' || true
import json, sys
r = json.load(open(sys.argv[1]))
print("broker (deliveries/s, p99 ms):")
for x in r["results"]:
    print(f"  {x['broker']:15s} qos {x['qos']} fan-out {x['fan_out']:3d} rate {x.get('target_rate',0):6.0f}: {x['deliver_per_s']:9.0f}/s  p50 {x['p50_ms']:.2f}  p99 {x['p99_ms']:.2f}  loss {x['loss_pct']:.1f}%")
for x in r["chorus_vs_bare_mochi"]:
    print(f"  chorus/mochi-bare qos {x['qos']} fan-out {x['fan_out']} rate {x['target_rate']}: {x['throughput_ratio']:.2f}x")
PY

echo "== chorus bench attack"
load >> "$out/summary.txt"
timeout 300 "$BIN" bench attack --json > "$out/attack.json" || fail "bench attack"
python3 - "$out/attack.json" >> "$out/summary.txt" <<'PY' || true
import json, sys
r = json.load(open(sys.argv[1]))
print("a device's round trip under attack (target: within 2x of idle):")
for p in r["phases"]:
    print(f"  {p['name']:17s} p50 {p['p50_ms']:.3f} ms ({p['ratio_p50_to_idle']:.2f}x)  p99 {p['p99_ms']:.2f} ms ({p['ratio_p99_to_idle']:.2f}x)")
PY

echo "== chorus bench agent"
load >> "$out/summary.txt"
for n in 20 100; do
  timeout 180 "$BIN" bench agent --skills "$n" --discover 1000 --json > "$out/agent-$n.json" || { fail "bench agent --skills $n"; continue; }
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(f\"agent {r['skills']} skills: ready {r['start_to_ready_ms']:.0f} ms, idle VmRSS {r['agent_idle_vm_rss_mib']:.1f} MiB (HWM {r['agent_vm_hwm_mib']:.1f}; anonymous {r['agent_idle_rss_anon_mib']:.1f}, binary {r['agent_idle_rss_file_mib']:.1f}), {r['skill_processes']} skill processes {r['skill_processes_vm_rss_mib']:.1f} MiB, discovery of {r['discovery_dirs']} dirs {r['discovery_ms']:.0f} ms (rescan {r['rescan_discovery_ms']:.0f} ms), bus rescan {r['rescan_bus_round_trip_ms']:.1f} ms\")" "$out/agent-$n.json" >> "$out/summary.txt"
done

for n in $FLEET_SIZES; do
  echo "== chorus bench fleet --devices $n"
  load >> "$out/summary.txt"
  deadline=$(( n < 2000 ? 180 : 300 ))
  if timeout $((deadline + 60)) "$BIN" bench fleet --devices "$n" --deadline "${deadline}s" --json \
      --heapprofile "$out/fleet-$n-heap" > "$out/fleet-$n.json"; then :; else
    fail "bench fleet --devices $n"
  fi
  python3 - "$out/fleet-$n.json" >> "$out/summary.txt" <<'PY' || true
import json, sys
r = json.load(open(sys.argv[1]))
print(f"fleet {r['devices']} devices: connect {r['connect_ms']:.0f} ms, settle {r['settle_ms']:.0f} ms")
for p in r["phases"]:
    d = p["device_convergence"]
    print(f"  {p['action']:9s} per device p50 {d['p50_ms']:.0f} ms p95 {d['p95_ms']:.0f} ms max {d['max_ms']:.0f} ms ({d['converged']}/{d['devices']}); total {p['total_ms']:.0f} ms, {p['state']} {p.get('error','')}")
g, b = r.get("gateway_process", {}), r.get("broker", {})
for ph, m in r.get("gateway_go_memory", {}).items():
    print(f"  go memory at {ph}: heap in use {m['heap_inuse_mib']:.0f} MiB, stacks {m['stack_inuse_mib']:.0f} MiB, runtime total {m['sys_mib']:.0f} MiB, {m['goroutines']} goroutines")
print(f"  gateway VmHWM {g.get('vm_hwm_mib', 0):.0f} MiB, CPU {g.get('cpu_s_both_rollouts', 0):.1f} s (both rollouts); broker {b.get('messages_received')} msgs in / {b.get('messages_sent')} out, {b.get('bytes_received')} B in / {b.get('bytes_sent')} B out, writes pending {b.get('max_client_writes_pending')}")
print(f"  enrol: {r['enrol']}; device errors {r['device_errors']}")
PY
done
load >> "$out/summary.txt"
echo
cat "$out/summary.txt"
