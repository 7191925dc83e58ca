#!/usr/bin/env bash
# Builds and runs the whole test suite (CTest).
#   tools/test.sh              the normal build, in build/
#   tools/test.sh --off        the CPU-only build (-DTRIPTYCH_GPU=off: no GPU panel, no
#                              simulator), in build-off/: what a machine without the CUDA
#                              toolkit's flavors gets, its CPU tests and lessons
#   tools/test.sh --sanitize   the CPU and simulator tests under AddressSanitizer + UBSan, in
#                              build-sanitize/ (no nvcc compile check there: it adds nothing).
#                              On a machine with AVX-512 it compiles for AVX2 (x86-64-v3), not
#                              for the machine: the normal build runs cpu_eigen_omp's blocks sized
#                              for AVX-512's 32 vector registers, this one those for AVX2's 16
#                              (cpu/eigen_omp/conv_direct.cpp), which a Zen 3 runs. Elsewhere
#                              both builds compile for the machine. Debug information is line
#                              tables only (-g1): all a sanitizer's stack trace names (function,
#                              file:line), at about four fifths of -g's compile time.
# --off and --sanitize leave out the tests labelled build_independent (they read the source tree
# or synthetic input only, and the normal build runs them).
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
elif [ "${1:-}" = "--off" ]; then
  build="$root/build-off"
  "$root/tools/build.sh" "$build" -DTRIPTYCH_GPU=off
elif [ -z "${1:-}" ]; then
  build="$root/build"
  "$root/tools/build.sh" "$build"
else
  echo "test.sh: unknown option '$1' (the options are --off and --sanitize)" >&2
  exit 1
fi
cd "$build"
# ctest -j runs as many tests at once as there are cores, most with a team of OpenMP threads:
# threads that spin while they wait hold the cores the other test's threads need (lesson 01).
# Sleeping instead took the normal build's suite from about 1070 to 750 s on 2 cores.
export OMP_WAIT_POLICY=passive
if [ -z "${1:-}" ]; then
  ctest --output-on-failure -j "$(nproc)"
else
  # The tests that never read what the build made ran in build/ already (tests/report/CMakeLists.txt).
  ctest --output-on-failure -j "$(nproc)" -LE build_independent
fi
