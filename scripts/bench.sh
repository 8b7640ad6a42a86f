#!/usr/bin/env bash
# The measurements of docs/benchmarks.md: the Go benchmarks of the hot paths
# and the three `chorus bench` commands at the issue's sizes, each bounded in
# time. Writes bench-results/*.json and bench-results/summary.txt.
#
#   scripts/bench.sh                 # everything (15-30 minutes on 2 cores; every step has a timeout)
#   FLEET_SIZES="1000" scripts/bench.sh
#   MOSQUITTO_URL=mqtt://127.0.0.1:1884 scripts/bench.sh   # compare with a Mosquitto already running
#   GOBENCH=0 BROKER_SCALE=0.05 FLEET_SIZES=100 scripts/bench.sh   # a quick check of the script itself
#
# When mosquitto is installed (and MOSQUITTO_URL is not set) the script
# starts one itself on a free loopback port with a temporary config, loads
# it as the broker benchmark's anchor, and stops it at the end. The last
# section of the summary prints every figure of issue 19 as a ratio to its
# anchor (Mosquitto for the broker, the target for the others) next to the
# target.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench-results
# a summary shows this run's figures only, never a file an earlier run left
rm -rf "$out"
mkdir -p "$out"
FLEET_SIZES=${FLEET_SIZES:-"1000 10000"}
tmp=$(mktemp -d)
mosq_pid=
cleanup() {
  if [ -n "$mosq_pid" ]; then kill "$mosq_pid" 2>/dev/null || true; wait "$mosq_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
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
# and the agent-only build (scripts/build.sh CHORUS_AGENT_ONLY=1) for the
# agent's idle RSS figure.
CGO_ENABLED=0 go build -tags chorus_agent,nethttpomithttp2 -trimpath -ldflags="-s -w" -o "$tmp/chorus-agent" ./cmd/chorus
# Skills run under their own uids when the agent runs as root: they must be
# able to reach the binary (docs/install.md).
chmod 0711 "$tmp"

# A failing step is noted in the summary and the next one runs.
fail() { echo "$1: FAILED or timed out (see its output above)" | tee -a "$out/summary.txt"; }
if [ "${GOBENCH:-1}" = 0 ]; then echo "go test -bench: skipped (GOBENCH=0)" | tee -a "$out/summary.txt"; else
echo "== go test -bench (hot paths)"
load >> "$out/summary.txt"
timeout 900 go test -run '^$' -bench . -benchmem -benchtime 1s \
  ./gateway/envelope ./gateway/topic ./broker ./fleet/catalog ./fleet/sqlite ./fleet/controller ./fleet/dashboard ./device/discovery \
  | tee "$out/gobench.txt" || fail "go test -bench"
grep -E '^(Benchmark|ok|FAIL)' "$out/gobench.txt" >> "$out/summary.txt" || true
fi

echo "== chorus bench broker"
# The anchor: a Mosquitto of our own unless MOSQUITTO_URL names one.
if [ -z "${MOSQUITTO_URL:-}" ]; then
  if command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ]; then
    mosq=$(command -v mosquitto || echo /usr/sbin/mosquitto)
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
    printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nlog_dest none\n' "$port" > "$tmp/mosquitto.conf"
    "$mosq" -c "$tmp/mosquitto.conf" & mosq_pid=$!
    for _ in $(seq 100); do  # up to 10 s for it to listen
      if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$port),1)" 2>/dev/null; then break; fi
      sleep 0.1
    done
    MOSQUITTO_URL=mqtt://127.0.0.1:$port
    echo "mosquitto: started $("$mosq" -h 2>&1 | head -1 | sed 's/ (build.*//'), pid $mosq_pid, on 127.0.0.1:$port (temporary config; stopped at the end)" | tee -a "$out/summary.txt"
  else
    echo "mosquitto: not installed (apt-get install mosquitto), so the broker figures have no anchor; only Chorus vs bare mochi is measured" | tee -a "$out/summary.txt"
  fi
else
  echo "mosquitto: using MOSQUITTO_URL=$MOSQUITTO_URL" | tee -a "$out/summary.txt"
fi
load >> "$out/summary.txt"
args=()
if [ -n "${MOSQUITTO_URL:-}" ]; then args+=(--mqtt-url "$MOSQUITTO_URL"); fi
timeout 1800 "$BIN" bench broker --json --rounds "${BROKER_ROUNDS:-3}" --scale "${BROKER_SCALE:-1}" "${args[@]}" > "$out/broker.json" || fail "bench broker"
python3 - "$out/broker.json" >> "$out/summary.txt" <<'PY' || true
import json, sys
r = json.load(open(sys.argv[1]))
print(f"broker, {r['rounds']} rounds, brokers alternated (load {r['machine_load']} -> {r['machine_load_end']}):")
for x in r["ratios"]:
    d = x["deliveries_per_s_ratio"]
    print(f"  {x['subject']}/{x['anchor']} qos {x['qos']} fan-out {x['fan_out']:3d} rate {x.get('target_rate',0):5.0f}: "
          f"median {d['median']:.2f}x (min {d['min']:.2f}, max {d['max']:.2f}); deliveries/s {x['subject_deliveries_per_s']['median']:.0f} vs {x['anchor_deliveries_per_s']['median']:.0f}; "
          f"loss {x['subject_loss_pct']['median']:.1f}% vs {x['anchor_loss_pct']['median']:.1f}%")
PY
kill_mosquitto() { if [ -n "$mosq_pid" ]; then kill "$mosq_pid" 2>/dev/null || true; wait "$mosq_pid" 2>/dev/null || true; mosq_pid=; fi; }
kill_mosquitto

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
timeout 180 "$BIN" bench agent --bin "$tmp/chorus-agent" --skills 20 --discover 10 --json > "$out/agent-only-20.json" || fail "bench agent --bin chorus-agent --skills 20"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(f\"agent-only build, 20 skills: idle VmRSS {r['agent_idle_vm_rss_mib']:.1f} MiB (anonymous {r['agent_idle_rss_anon_mib']:.1f}, binary {r['agent_idle_rss_file_mib']:.1f})\")" "$out/agent-only-20.json" >> "$out/summary.txt" || true

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

# Issue 19's figures, each as a ratio to its anchor next to its target:
# for the broker the anchor is Mosquitto in the same run (ratio >= 1 meets
# the target); for the others the target itself (ratio <= 1 meets it).
python3 - "$out" >> "$out/summary.txt" <<'PY' || true
import json, os, sys
out = sys.argv[1]
def load(name):
    try:
        return json.load(open(os.path.join(out, name)))
    except Exception:
        return None
rows = []
def row(fig, measured, anchor, ratio, target, met):
    rows.append((fig, measured, anchor, "n/a" if ratio is None else f"{ratio:.2f}", target, {True: "met", False: "MISSED", None: "n/a"}[met]))
for n, target_s in ((10000, 10.0), (1000, 1.5)):
    r = load(f"fleet-{n}.json")
    ph = [p for p in (r or {}).get("phases", []) if p["action"] == "install"]
    if ph:
        t = ph[0]["total_ms"] / 1000
        d = ph[0]["device_convergence"]
        row(f"fleet {n}: install total", f"{t:.1f} s (p50 {d['p50_ms']/1000:.1f}, p95 {d['p95_ms']/1000:.1f}; load {r.get('machine_load','?')})", f"target {target_s} s", t / target_s, f"<= {target_s} s", t <= target_s)
    else:
        row(f"fleet {n}: install total", "not measured", "", None, f"<= {target_s} s", None)
    if n == 10000:
        hwm = (r or {}).get("gateway_process", {}).get("vm_hwm_mib")
        if hwm:
            row("fleet 10000: gateway VmHWM", f"{hwm:.0f} MiB", "target 300 MiB", hwm / 300, "<= 300 MiB", hwm <= 300)
        else:
            row("fleet 10000: gateway VmHWM", "not measured", "", None, "<= 300 MiB", None)
b = load("broker.json")
ratios = {(x["qos"], x["fan_out"], x.get("target_rate", 0)): x for x in (b or {}).get("ratios", []) if x["anchor"] == "anchor"}
for fo in (1, 10, 100):
    x = ratios.get((1, fo, 0))
    if x:
        d = x["deliveries_per_s_ratio"]
        row(f"broker QoS 1 fan-out {fo}: deliveries/s", f"{x['subject_deliveries_per_s']['median']:.0f}/s (median of {b['rounds']}, spread {d['min']:.2f}-{d['max']:.2f})",
            f"Mosquitto {x['anchor_deliveries_per_s']['median']:.0f}/s", d["median"], ">= 1.0", d["median"] >= 1.0)
    else:
        row(f"broker QoS 1 fan-out {fo}: deliveries/s", "no Mosquitto anchor", "", None, ">= 1.0", None)
x = ratios.get((0, 1, 0))
if x:
    d = x["deliveries_per_s_ratio"]
    sl, al = x["subject_loss_pct"], x["anchor_loss_pct"]
    row("broker QoS 0 fan-out 1: delivered/s", f"{x['subject_deliveries_per_s']['median']:.0f}/s (spread {d['min']:.2f}-{d['max']:.2f})", f"Mosquitto {x['anchor_deliveries_per_s']['median']:.0f}/s", d["median"], ">= 1.0", d["median"] >= 1.0)
    # judged by the worst round, not the median: a loss in one round of three is a loss
    row("broker QoS 0 fan-out 1: loss", f"median {sl['median']:.1f} %, worst round {sl['max']:.1f} %", f"Mosquitto median {al['median']:.1f} %, worst {al['max']:.1f} %",
        None, "<= Mosquitto's in every round", sl["max"] <= al["max"])
else:
    row("broker QoS 0 fan-out 1", "no Mosquitto anchor", "", None, ">= Mosquitto", None)
for name, label in (("agent-20.json", "agent 20 skills: idle VmRSS"), ("agent-only-20.json", "same, agent-only build")):
    a = load(name)
    if a:
        rss = a["agent_idle_vm_rss_mib"]
        row(label, f"{rss:.1f} MiB (anon {a['agent_idle_rss_anon_mib']:.1f}, binary {a['agent_idle_rss_file_mib']:.1f}; load {a.get('machine_load','?')})", "target 15 MiB", rss / 15, "<= 15 MiB", rss <= 15)
    else:
        row(label, "not measured", "", None, "<= 15 MiB", None)
print("issue 19 figures (ratio: to Mosquitto for the broker, >= 1 meets; to the target otherwise, <= 1 meets):")
w = [max(len(r[i]) for r in rows) for i in range(6)]
for r in [("figure", "measured", "anchor", "ratio", "target", "verdict")] + rows:
    print("  " + "  ".join(c.ljust(w[i]) for i, c in enumerate(r)))
PY
echo
cat "$out/summary.txt"
