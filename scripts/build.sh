#!/usr/bin/env bash
# Builds the static chorus binary: scripts/build.sh [OUT] with GOOS/GOARCH/GOARM
# from the environment. The Dockerfile and the cross-compile check use these flags.
#
# CHORUS_AGENT_ONLY=1 scripts/build.sh chorus-agent builds the agent alone
# (the chorus_agent build tag: commands version, agent and the skill launcher,
# without the gateway's packages): a satellite that runs only the agent keeps
# ~6 MiB fewer resident pages (docs/benchmarks.md, issue 19). It also leaves
# out net/http's HTTP/2 (the nethttpomithttp2 tag, 0.5 MB of binary, all of it
# resident): the agent speaks HTTP/1.1 to the gateway and serves the
# websocket bus over HTTP/1.1. The default is the one binary that does
# everything.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-chorus}
ver=${CHORUS_VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
tags=()
if [ "${CHORUS_AGENT_ONLY:-}" = 1 ]; then tags=(-tags chorus_agent,nethttpomithttp2); fi
CGO_ENABLED=0 go build "${tags[@]}" -trimpath -ldflags="-s -w -X main.version=${ver}" -o "$out" ./cmd/chorus
