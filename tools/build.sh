#!/usr/bin/env bash
# Configures and builds triptych into a build directory (default: build/), using every core.
#   tools/build.sh [BUILD_DIR] [extra cmake arguments...]
# e.g. tools/build.sh build-cuda -DTRIPTYCH_GPU=cuda -DCMAKE_CUDA_ARCHITECTURES=90
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
shift || true
cmake -S "$root" -B "$build" "$@"
cmake --build "$build" -j "$(nproc)"
