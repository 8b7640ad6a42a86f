#!/usr/bin/env bash
# The whole test suite: formatting, vet, the static cross-builds, and every
# package test with the race detector (the end-to-end tests in cmd/chorus
# build and drive the real binary). Needs only Go; anything else a test needs
# is installed here.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS=${GOFLAGS:-}

# Each phase ends with its wall seconds and the load average (the machine is
# shared, so a time means little without the load it was measured under);
# the last line is the whole run's time. TEST_JSON=FILE keeps the race
# suite's `go test -json` stream (per-test times) in FILE.
phase_name=""; phase_start=$SECONDS
phase() {
  if [ -n "$phase_name" ]; then
    echo "-- $phase_name: $((SECONDS - phase_start)) s (load $(cut -d' ' -f1-3 /proc/loadavg))"
  fi
  phase_name=$1; phase_start=$SECONDS
  if [ -n "$phase_name" ]; then echo "== $phase_name"; fi
}
finish() {
  local rc=$?
  phase ""
  echo "-- scripts/test.sh: ${SECONDS} s in all (exit $rc)"
  if [ -n "$background" ]; then kill -- "$background" 2>/dev/null || true; wait 2>/dev/null || true; fi
  rm -rf "$tmp"
}
tmp=$(mktemp -d); background=""; trap finish EXIT

phase "gofmt"
unformatted=$(gofmt -l $(find . -name '*.go' -not -path './.git/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

phase "build chorus for this machine (scripts/build.sh)"
# The end-to-end tests (cmd/chorus, device/agentbench, device/skillmanager)
# run this binary, as it ships, instead of each building chorus again
# (cmd/chorus/chorusbin). The cross-builds run beside the race suite.
scripts/build.sh "$tmp/chorus"
export CHORUS_TEST_BIN="$tmp/chorus"

phase "mosquitto (the external-broker portability suite in cmd/chorus)"
if ! command -v mosquitto >/dev/null 2>&1 || ! command -v mosquitto_pub >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mosquitto mosquitto-clients) >/dev/null \
      || echo "mosquitto install failed: TestMosquittoPortabilityE2E skips outside CI and fails in CI"
  else
    echo "mosquitto missing and not root with apt-get: TestMosquittoPortabilityE2E skips outside CI (apt-get install mosquitto)"
  fi
fi

phase "Debian python3 (the OVOS stand-in launcher and offline wheel builds in device/ovosrt, cmd/chorus)"
if ! /usr/bin/python3 -c "import websocket, setuptools, wheel, pip" >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-websocket python3-pip python3-setuptools python3-wheel) >/dev/null \
      || echo "python3 install failed: the OVOS runtime tests skip outside CI and fail in CI"
  else
    echo "python3 packages missing and not root with apt-get: the OVOS runtime tests skip outside CI (apt-get install python3-websocket python3-pip python3-setuptools python3-wheel)"
  fi
fi

phase "chromium (the dashboard's browser tests in cmd/chorus)"
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null \
      || echo "chromium install failed: TestDashboardBrowserE2E skips outside CI and fails in CI"
  else
    echo "chromium missing and not root with apt-get: TestDashboardBrowserE2E skips outside CI (apt-get install chromium)"
  fi
fi

# The checks the race suite does not depend on run beside it, at the
# lowest CPU priority (nice 19): the suite's tests spend much of their time
# waiting on processes, sockets and timers, and these fill the CPU it leaves
# idle instead of running before it. Their output is kept in a file and
# printed once the suite has ended, each phase with its own time; a failure
# here fails the run as before. (The race suite's own -vet=off relies on the
# go vet below.)
background_checks() {
  trap - EXIT
  renice -n 19 -p "$BASHPID" >/dev/null 2>&1 || echo "renice failed: the checks beside the suite run at normal priority"
  phase_name=""
  phase "cross-compile (CGO_ENABLED=0: linux/amd64, linux/arm64, linux/arm GOARM=7)"
  # At once: mostly each target's link, one core's work apiece. This
  # machine's own target is the build above and is not linked again (arm
  # is, since the host's GOARM may not be 7).
  local builds=() failed=0 b host
  host=$(go env GOHOSTOS)/$(go env GOHOSTARCH)
  if [ "$host" != linux/amd64 ]; then GOOS=linux GOARCH=amd64 scripts/build.sh "$tmp/chorus-amd64" & builds+=($!); fi
  if [ "$host" != linux/arm64 ]; then GOOS=linux GOARCH=arm64 scripts/build.sh "$tmp/chorus-arm64" & builds+=($!); fi
  GOOS=linux GOARCH=arm GOARM=7 scripts/build.sh "$tmp/chorus-armv7" & builds+=($!)
  for b in "${builds[@]}"; do wait "$b" || failed=1; done
  if [ "$failed" = 1 ]; then echo "a cross-compile failed (its error is above)"; exit 1; fi

  phase "go vet"
  # As scripts/build.sh compiles (CGO_ENABLED=0, -trimpath), so vet reuses
  # the packages the build for this machine compiled instead of compiling
  # them all again; it vets the configuration that ships.
  CGO_ENABLED=0 go vet -trimpath ./...

  phase "agent-only build (-tags chorus_agent) builds, vets and runs"
  CGO_ENABLED=0 go vet -trimpath -tags chorus_agent,nethttpomithttp2 ./cmd/chorus
  GOOS=linux GOARCH=arm64 CHORUS_AGENT_ONLY=1 scripts/build.sh "$tmp/chorus-agent-arm64"
  CHORUS_AGENT_ONLY=1 scripts/build.sh "$tmp/chorus-agent"
  "$tmp/chorus-agent" agent --help >/dev/null
  if "$tmp/chorus-agent" gateway >/dev/null 2>&1; then echo "the agent-only build has a gateway command"; exit 1; fi

  phase "short fuzz run (every parser of network or file input; the corpora in testdata/fuzz are replayed by go test too)"
  # A smoke run: FUZZTIME (1 s) a target, one fuzz worker each (-parallel 1;
  # go test's default is one per CPU), three targets at a time (FUZZ_JOBS):
  # a target's go test also loads, links its coverage-instrumented binary
  # and replays its corpus, one core's work, which a third target's fuzzing
  # overlaps. The fuzz run is the end of the command: the race suite keeps
  # both CPUs busy, so these checks at nice 19 mostly run after it, and each
  # CPU-second here is half a second of the command's time. Alone, the 15
  # targets took 19 CPU-s with no fuzzing at all (FUZZTIME=1ms) and 44 at
  # 2 s. Real fuzzing is longer: FUZZTIME=1m scripts/test.sh, or go test
  # -fuzz by hand (docs/testing.md).
  fuzzfail="$tmp/fuzz-failed"; mkdir -p "$fuzzfail"
  fuzz() {
    local out
    out=$(go test -trimpath -run '^$' -parallel 1 -fuzz "^$2\$" -fuzztime "${FUZZTIME:-1s}" "$1" 2>&1) && return 0
    # A real finding is written to testdata/fuzz. Go's fuzzer can also end a
    # short run with "context deadline exceeded" while it is still minimizing
    # a new (passing) input; that is not a finding.
    if ! grep -q "Failing input written to" <<<"$out" && grep -q "context deadline exceeded" <<<"$out"; then
      echo "fuzz $1 $2: run ended while minimizing a passing input (no finding)"; return 0
    fi
    # Kept whole in a file of its own and printed after every target ended,
    # so two targets' outputs never interleave.
    local name=${1#./}
    { echo "$out"; echo "fuzz $1 $2 failed: the failing input is in $1/testdata/fuzz/$2"; } >"$fuzzfail/${name//\//_}.$2"
    return 1
  }
  export -f fuzz; export fuzzfail
  if ! xargs -P "${FUZZ_JOBS:-3}" -L 1 bash -c 'fuzz "$@"' fuzz <<'TARGETS'
./gateway/envelope FuzzDecode
./gateway/envelope FuzzReadHeader
./gateway/topic FuzzParse
./gateway/desired FuzzParse
./gateway/state FuzzParse
./gateway/artifact FuzzUnpack
./device/discovery FuzzParseFrontmatter
./device/ovosrt FuzzEntryPoints
./configs FuzzParse
./broker FuzzJSONDepth
./fleet/catalog FuzzSearchResolve
./fleet/httpapi FuzzRequestBody
./fleet/controller FuzzStatePayload
./fleet/dashboard FuzzRolloutForm
./fleet/api FuzzParseJoinToken
TARGETS
  then
    cat "$fuzzfail"/* 2>/dev/null || true
    echo "the fuzz run failed: $(ls "$fuzzfail" | wc -l) target(s) above"; exit 1
  fi

  phase ""
}

phase "go test -race (beside it, at low priority: the cross-builds, go vet, the agent-only build, the fuzz run)"
background_checks >"$tmp/background.log" 2>&1 &
background=$!
# Through scripts/testsummary: go test's usual lines (a failing test's whole
# output, each package's result), then passed/failed/skipped per package and
# the total time. It fails when any package failed or none reported.
# -vet=off: go vet runs over every package beside it; go test's own subset
# adds nothing. atexit_sleep_ms=0: a race-enabled binary otherwise sleeps a
# second as it exits, so that a goroutine still running can report a race;
# by then a test binary's tests have all ended (and gateway/leakcheck waits
# for this module's goroutines in the packages that start them), and the
# suite starts hundreds of these binaries: each package's test binary and
# the test binaries re-executed as skills and children (docs/testing.md).
# -trimpath: compiled packages are cached under their import paths, not
# this checkout's directory, so a second clone or worktree reuses what an
# earlier run compiled (the fuzz run uses it too). -ldflags=-w: no DWARF in
# the test binaries, a third less work to link each of them; race reports
# and panics print files and lines from the binary's own tables, not DWARF.
export GORACE="${GORACE:+$GORACE }atexit_sleep_ms=0"
go build -o "$tmp/testsummary" ./scripts/testsummary
# The longest packages first: go test starts packages in the order given,
# a few at a time, and one of them started last (in path order, the
# controller's 35 s) is the run's tail. The list is the slowest in a run's
# TEST_JSON, longest first; every other package follows in path order.
mod=$(go list -m)
slow=(cmd/chorus fleet/controller broker device/ovosrt device/agent gateway/wsbus fleet/sqlite device/skillmanager)
pkgs=("${slow[@]/#/$mod/}")
mapfile -t -O "${#pkgs[@]}" pkgs < <(go list ./... | grep -vxF -f <(printf '%s\n' "${pkgs[@]}"))
# The end-to-end package (cmd/chorus) runs on its own, beside a go test of
# every other package with twice as many at once as CPUs. go test counts a
# running test binary as one of its -p slots, and these packages mostly
# wait: run one at a time in a cpuacct cgroup they took 160 CPU-s in 437 s
# of wall time (fleet/controller 25 CPU-s in 64 s, broker 12 in 23), so with
# -p equal to the CPU count (go test's default) the two longest held both
# slots while some fifty small packages queued behind them. Its tests spend most of their ~70 s waiting on the chorus processes,
# browsers and brokers they start; inside one go test it held one of the
# two slots all that time (the suite kept 1.5 of 2 CPUs busy, 204 CPU-s in
# 137 s run alone). Its test binary is compiled first, on its own, so the
# two go test runs never compile the same packages at once; it then runs
# under test2json as go test would run it (`go doc cmd/test2json`), from
# its package directory. TEST_JOBS sets the other run's number of packages
# at once.
jobs=${TEST_JOBS:-$((2 * $(nproc)))}
e2e=$mod/cmd/chorus
rest=()
for p in "${pkgs[@]}"; do [ "$p" = "$e2e" ] || rest+=("$p"); done
suite=0 e2e_built=0
go test -race -vet=off -trimpath -ldflags=-w -c -o "$tmp/chorus.test" ./cmd/chorus || e2e_built=$?
run_e2e() {
  if [ "$e2e_built" != 0 ]; then echo "go test -c ./cmd/chorus failed (above)"; return; fi
  (cd cmd/chorus && go tool test2json -t -p "$e2e" "$tmp/chorus.test" -test.v=test2json -test.paniconexit0 -test.timeout=30m -test.count=1 2>&1)
}
"$tmp/testsummary" -json "${TEST_JSON:-/dev/null}" <(run_e2e) \
  <(go test -race -vet=off -trimpath -ldflags=-w -p "$jobs" -json -timeout 30m -count=1 "${rest[@]}" 2>&1) || suite=$?
[ "$e2e_built" = 0 ] || suite=1
phase "the mochi fork's own tests (broker/mochi, a module of its own: docs/broker.md)"
# At normal priority, after the suite: several upstream tests give a packet
# a fixed millisecond on a pipe. Without -race: several race their own pipes.
fork=0
(cd broker/mochi && go test -trimpath -count=1 . ./packets) || fork=$?
phase ""
echo "== waiting for the checks beside the suite"
checks=0; wait "$background" || checks=$?
background=""
cat "$tmp/background.log"
if [ "$suite" != 0 ]; then echo "the race suite failed (above the checks' output)"; fi
if [ "$fork" != 0 ]; then echo "the mochi fork's tests failed (above the checks' output)"; fi
if [ "$checks" != 0 ]; then echo "a check beside the suite failed (its output is above)"; fi
[ "$suite" = 0 ] && [ "$fork" = 0 ] && [ "$checks" = 0 ]
