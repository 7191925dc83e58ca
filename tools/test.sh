#!/usr/bin/env bash
# Builds and runs the whole test suite (CTest).
#   tools/test.sh              the normal build, in build/
#   tools/test.sh --sanitize   the CPU and simulator tests under AddressSanitizer + UBSan, in
#                              build-sanitize/ (no nvcc compile check there: it adds nothing).
#                              On a machine with AVX-512 it compiles for AVX2 (x86-64-v3), not
#                              for the machine: the normal build runs cpu_eigen_omp's blocks sized
#                              for AVX-512's 32 vector registers, this one those for AVX2's 16
#                              (cpu/eigen_omp/conv_direct.cpp), which a Zen 3 runs. Elsewhere
#                              both builds compile for the machine. Debug information is line
#                              tables only (-g1): all a sanitizer's stack trace names (function,
#                              file:line), at about four fifths of -g's compile time.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/tools/install-deps.sh"
if [ "${1:-}" = "--sanitize" ]; then
  build="$root/build-sanitize"
  isa=(-DTRIPTYCH_NATIVE=ON -DCMAKE_CXX_FLAGS=)
  if grep -qw avx512f /proc/cpuinfo && grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
    isa=(-DTRIPTYCH_NATIVE=OFF -DCMAKE_CXX_FLAGS=-march=x86-64-v3)
  fi
  "$root/tools/build.sh" "$build" -DTRIPTYCH_SANITIZE=ON -DTRIPTYCH_NVCC_CHECK=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "${isa[@]}"
else
  build="$root/build"
  "$root/tools/build.sh" "$build"
fi
cd "$build"
ctest --output-on-failure -j "$(nproc)"
