#!/usr/bin/env bash
# Builds the static chorus binary: scripts/build.sh [OUT] with GOOS/GOARCH/GOARM
# from the environment. The Dockerfile and the cross-compile check use these flags.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-chorus}
ver=${CHORUS_VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.version=${ver}" -o "$out" ./cmd/chorus
