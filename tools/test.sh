#!/usr/bin/env bash
# Builds and runs the whole test suite (CTest).
#   tools/test.sh              the normal build, in build/
#   tools/test.sh --sanitize   the CPU and simulator tests under AddressSanitizer + UBSan, in
#                              build-sanitize/ (no nvcc compile check there: it adds nothing)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/tools/install-deps.sh"
if [ "${1:-}" = "--sanitize" ]; then
  build="$root/build-sanitize"
  "$root/tools/build.sh" "$build" -DTRIPTYCH_SANITIZE=ON -DTRIPTYCH_NVCC_CHECK=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
else
  build="$root/build"
  "$root/tools/build.sh" "$build"
fi
cd "$build"
ctest --output-on-failure -j "$(nproc)"
