#!/usr/bin/env bash
# Measures, in one run on a machine with an NVIDIA GPU, what the lessons and the report quote
# from a GPU, and writes it all under one folder: the cross-checks, the benchmarks (JSON, input
# of `triptych report --from` and `tools/lesson_tables.py --from`), training with and without
# overlap and graphs, `triptych profile` beside Nsight Compute's counts of the same kernels,
# every lesson program's output, compute-sanitizer and the test suite.
#
#   tools/measure-gpu.sh [--build DIR] [--out DIR] [--phases LIST] [--seconds N]
#                        [--deps DIR] [--data DIR] [--arch N] [--help]
#
#   --build DIR    the cuda build to use or make (default build-cuda/); a build already there is
#                  brought up to date, not configured again
#   --out DIR      where the results go (default gpu-results/)
#   --phases LIST  a comma-separated subset of the phases below (default: all of them)
#   --seconds N    the whole run's time: each phase's limit is cut to what is left, and a phase
#                  with less than 20 s left is skipped (default: no limit but the phases' own)
#   --deps DIR     Debian packages (.deb) to unpack and build against, for a machine that has the
#                  CUDA toolkit but not the packages tools/install-deps.sh installs, and no package
#                  registry to fetch them from. On a Debian 12 machine with one:
#                    apt-get download libeigen3-dev catch2 libbenchmark-dev libbenchmark1debian \
#                      libopenblas-dev libopenblas-pthread-dev libopenblas0-pthread libopenblas0 \
#                      libgfortran5 libquadmath0 libfftw3-dev libfftw3-single3 libfftw3-double3 \
#                      zlib1g-dev zlib1g
#   --data DIR     the Fashion-MNIST IDX files for the train phase (default: triptych's own
#                  default, /usr/share/datasets/fashion-mnist)
#   --arch N       the CUDA architecture to build for (default: the GPU's own, from nvidia-smi)
#
# The phases run in this order, the figures the lessons and goals need most first, each under its
# own time limit (seconds, at the bottom) and logged to OUT/<phase>.log; one that fails or runs
# out of time is marked so in OUT/summary.txt, and the next one still runs:
#   machine   the GPU, driver, toolkit, compiler and CPU (nvidia-smi, nvcc, g++, lscpu)
#   build     configure (-DTRIPTYCH_GPU=cuda, Release) and build
#   profile   triptych profile (occupancy, and the ncu command) and ncu's counts of the same
#             launches, for kernels whose simulator counts the lessons quote; short, and the
#             only phase whose figures no other phase or run gives, so it comes first
#   check     triptych check on every variant and version (check-all.txt)
#   bench     the benchmark rows the lessons' GPU goals name (GEMM at 4096, convolutions,
#             pooling, softmax at 32768x1000, training steps, device copies): bench-goals.json
#   train     LeNet and the MLP on gpu_tiled for one epoch, with --overlap and --graph off and
#             on (the four loss curves of a model must be the same bits), then with --profile
#   timeline  Nsight Systems' timeline of LeNet's steps on gpu_tiled, plain and with overlap and
#             graphs (lesson 16): each kernel and copy with its stream, start and duration
#   lessons   every lesson program, its output as it prints on this machine
#   benchall  every other benchmark row of the GPU variants and the copies: bench-all.json
#   sanitize  compute-sanitizer memcheck and racecheck on checks of gpu_tiled
#   tests     the test suite (ctest), but for the layout check
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-cuda"
out="$root/gpu-results"
phases="machine,build,profile,check,bench,train,timeline,lessons,benchall,sanitize,tests"
seconds=""
deps=""
data=""
arch=""
all_phases="$phases"
arguments=("$@")
refuse() { echo "measure-gpu.sh: $* (see the comment at the top of the script)" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,/^set -uo pipefail/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    --build|--out|--phases|--seconds|--deps|--data|--arch)
      [ $# -ge 2 ] && [ -n "$2" ] || refuse "$1 needs a value" ;;
    *) refuse "unknown argument '$1'" ;;
  esac
  case "$1" in
    --build) build="$(realpath -m "$2")" ;;
    --out) out="$(realpath -m "$2")" ;;
    --phases) phases="$2" ;;
    --seconds) seconds="$2" ;;
    --deps) deps="$(realpath -m "$2")" ;;
    --data) data="$(realpath -m "$2")" ;;
    --arch) arch="$2" ;;
  esac
  shift 2
done
# Every phase named is one there is, and a time budget is a whole number of seconds.
IFS=, read -ra asked <<<"$phases"
for phase in "${asked[@]}"; do
  case ",$all_phases," in *",$phase,"*) ;; *) refuse "--phases: no phase '$phase'; the phases: $all_phases" ;; esac
done
[ -z "$seconds" ] || [[ "$seconds" =~ ^[1-9][0-9]*$ ]] ||
  refuse "--seconds takes a whole number of seconds, got '$seconds'"
[ -z "$deps" ] || ls "$deps"/*.deb >/dev/null 2>&1 || refuse "--deps $deps holds no .deb packages"
[ -z "$data" ] || [ -d "$data" ] || refuse "--data $data is not a directory"
summary="$out/summary.txt"
triptych="$build/tools/triptych"
bench="$build/bench/triptych_bench"

# --deps: the packages' files unpacked under one prefix, which CMake searches first; the
# libraries found there at run time too. Debian's OpenBLAS sits in a subfolder that its
# alternatives links would name, which an unpacked package does not make.
cmake_extra=()
if [ -n "$deps" ]; then
  prefix="${TMPDIR:-/tmp}/triptych-deps"
  if [ ! -d "$prefix/usr" ]; then
    mkdir -p "$prefix"
    for package in "$deps"/*.deb; do dpkg -x "$package" "$prefix"; done
  fi
  arch_lib="$prefix/usr/lib/x86_64-linux-gnu"
  export CMAKE_PREFIX_PATH="$prefix/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export LD_LIBRARY_PATH="$arch_lib:$arch_lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  cmake_extra+=("-DBLAS_LIBRARIES=$arch_lib/openblas-pthread/libopenblas.so"
                "-DCBLAS_INCLUDE_DIR=$prefix/usr/include/x86_64-linux-gnu/openblas-pthread"
                "-DZLIB_ROOT=$prefix/usr")
fi

# cuDNN: next to the toolkit, or else the one a pip-installed PyTorch brings (nvidia-cudnn-*),
# whose library folder lacks the unversioned libcudnn.so that the linker looks for.
if [ -z "${CUDNN_ROOT:-}" ] && ! ls /usr/local/cuda/lib*/libcudnn.so >/dev/null 2>&1; then
  wheel="$(python3 -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null || true)"
  if [ -n "$wheel" ] && [ -d "$wheel/include" ]; then
    export CUDNN_ROOT="${TMPDIR:-/tmp}/triptych-cudnn"
    mkdir -p "$CUDNN_ROOT/lib"
    ln -sfn "$wheel/include" "$CUDNN_ROOT/include"
    ln -sf "$(ls "$wheel"/lib/libcudnn.so.* | head -n 1)" "$CUDNN_ROOT/lib/libcudnn.so"
    export LD_LIBRARY_PATH="$wheel/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
fi

phase_machine() {
  nvidia-smi
  nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
             --format=csv
  nvcc --version
  g++ --version | head -n 1
  cmake --version | head -n 1
  lscpu | grep -E 'Model name|^CPU\(s\)|Thread|MHz'
  date -u
  git -C "$root" log -1 --format='commit %H %s' 2>/dev/null || true
}

phase_build() {
  if [ ! -f "$build/CMakeCache.txt" ]; then
    [ -n "$arch" ] ||
      arch="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d ' .')"
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DTRIPTYCH_GPU=cuda \
          -DCMAKE_CUDA_ARCHITECTURES="$arch" "${cmake_extra[@]}" || return 1
  fi
  cmake --build "$build" -j "$(nproc)"
}

# Without --backend, triptych check runs every variant and every version of each (the GEMM
# ladder's tensor-core versions, the version 2s beside the defaults), the CPU's too.
phase_check() {
  "$triptych" info || return 1
  "$triptych" check >"$out/check-all.txt"
  local status=$?
  tail -n 3 "$out/check-all.txt"
  grep -E 'FAIL' "$out/check-all.txt" | head -n 20
  return $status
}

# bench_rows FILE FILTER: the rows matching FILTER, 3 repetitions each, as JSON in FILE; fails
# when no row matched (Google Benchmark itself then only says so).
bench_rows() {
  "$bench" --benchmark_filter="$2" --benchmark_repetitions=3 --benchmark_min_time=0.05 \
           --benchmark_report_aggregates_only=true --benchmark_out_format=json \
           --benchmark_out="$1" || return 1
  python3 -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1]))["benchmarks"] else 1)' \
          "$1"
}

goal_rows='^(copy/device|gemm/gpu_[a-z]+(@[0-9]+)?/4096x|conv2d_.*/gpu_|(max|avg)_pool2d_.*/gpu_'
goal_rows+='|softmax_(forward|cross_entropy)/gpu_.*/32768x1000|train_(step|transfer)/gpu_)'
phase_bench() { bench_rows "$out/bench-goals.json" "$goal_rows"; }
phase_benchall() { bench_rows "$out/bench-all.json" '/(gpu_|device|h2d|d2h)'; }

# The loss curves (CSV) of one model must be the same bits with overlap and graphs on or off.
phase_train() {
  local data_args=()
  [ -n "$data" ] && data_args=(--data "$data")
  local status=0
  for model in lenet mlp; do
    for overlap in off on; do
      for graph in off on; do
        echo "== $model, --overlap $overlap --graph $graph"
        "$triptych" train --model "$model" --backend gpu_tiled --epochs 1 --overlap "$overlap" \
                    --graph "$graph" --out "$out/training/overlap-$overlap-graph-$graph" \
                    "${data_args[@]}" || status=1
      done
    done
    for run in overlap-off-graph-on overlap-on-graph-off overlap-on-graph-on; do
      cmp "$out/training/overlap-off-graph-off/${model}_gpu_tiled.csv" \
          "$out/training/$run/${model}_gpu_tiled.csv" &&
        echo "$model: the loss curve of $run is the plain loop's, bit for bit" || status=1
    done
    for overlap in off on; do
      echo "== $model, --overlap $overlap --profile"
      "$triptych" train --model "$model" --backend gpu_tiled --epochs 1 --overlap "$overlap" \
                  --profile --out "$out/training/profile-overlap-$overlap" "${data_args[@]}" ||
        status=1
    done
  done
  return $status
}

# Lesson 16's timeline on the GPU: 100 steps of LeNet on gpu_tiled under Nsight Systems, plain
# and with overlap and graphs; OUT/timeline-*.nsys-rep for its viewer, and every kernel and copy
# with its stream, start and duration in OUT/timeline-*_cuda_gpu_trace.csv. Where nsys is not
# installed, says so and records nothing.
phase_timeline() {
  if ! command -v nsys >/dev/null 2>&1; then
    echo "nsys (Nsight Systems) is not installed here: no timeline recorded"
    return 0
  fi
  local data_args=()
  [ -n "$data" ] && data_args=(--data "$data")
  local status=0
  for mode in "off off" "on on"; do
    read -r overlap graph <<<"$mode"
    local name="timeline-overlap-$overlap-graph-$graph"
    echo "== $name"
    nsys profile --trace cuda --sample none --cpuctxsw none --force-overwrite true \
         --output "$out/$name" "$triptych" train --model lenet --backend gpu_tiled --limit 6400 \
         --overlap "$overlap" --graph "$graph" --out "$out/training/$name" "${data_args[@]}" ||
      status=1
    nsys stats --report cuda_gpu_trace --format csv --force-export true \
         --output "$out/$name" "$out/$name.nsys-rep" >/dev/null || status=1
  done
  return $status
}

# Kernels whose simulator counts the lessons quote (lesson 02's coalescing, 03's bank conflicts),
# on small shapes: the occupancy `triptych profile` reports here, and ncu's counts of the same
# check as a CSV log, OUT/ncu-<op>-<backend>.csv. In a sim build, `triptych profile ... --json
# sim.json` with the same arguments counts them in the simulator, and
# `tools/compare_ncu.py --sim sim.json --ncu OUT/ncu-....csv` sets the two side by side.
phase_profile() {
  # the counters the simulator counts, named as ncu names them, and two of occupancy
  local metrics
  metrics="$("$triptych" profile --ncu-metrics)" || return 1
  metrics+=",sm__warps_active.avg.pct_of_peak_sustained_active,launch__occupancy_limit_registers"
  local status=0
  local cases=("gemm gpu_naive@1 40,33,17,NN" "gemm gpu_naive 40,33,17,NN"
               "gemm gpu_tiled@3 40,33,17,NN" "gemm gpu_tiled@6 40,33,17,NN"
               "gemm gpu_tiled@7 40,33,17,NN" "softmax_forward gpu_tiled 64,1000"
               "max_pool2d gpu_tiled 2,3,9,13,3,2")
  for case in "${cases[@]}"; do
    read -r op backend shape <<<"$case"
    echo "== $op $backend $shape"
    "$triptych" profile --op "$op" --backend "$backend" --shape "$shape" --seed 1 || status=1
    # In the C locale: '.' is the decimal point, never a thousands separator (compare_ncu.py).
    LC_ALL=C ncu --clock-control none --metrics "$metrics" --csv --print-units base \
        --print-kernel-base demangled \
        --log-file "$out/ncu-$op-${backend/@/-v}.csv" \
        "$triptych" check --op "$op" --backend "$backend" --shape "$shape" --seed 1 || status=1
  done
  return $status
}

phase_lessons() {
  local status=0
  for program in "$build"/lessons/lesson_*; do
    [ -x "$program" ] || continue
    echo "== $(basename "$program")"
    "$program" >"$out/$(basename "$program").txt" 2>&1 || status=1
    tail -n 2 "$out/$(basename "$program").txt"
  done
  return $status
}

phase_sanitize() {
  local status=0
  for tool in memcheck racecheck; do
    for op in gemm softmax_forward max_pool2d conv2d; do
      echo "== compute-sanitizer --tool $tool: $op"
      compute-sanitizer --tool "$tool" --error-exitcode 3 \
                        "$triptych" check --op "$op" --backend gpu_tiled | tail -n 4 || status=1
    done
  done
  return $status
}

# The layout check (label style) is left out: it needs clang-format, which a GPU machine may lack,
# and says nothing about the GPU.
phase_tests() { (cd "$build" && ctest --output-on-failure -j 4 -LE style); }

# run_phase NAME SECONDS: runs phase_NAME under a time limit, as this script run again with
# TRIPTYCH_MEASURE_PHASE=NAME (timeout runs programs, not shell functions), its output in
# OUT/NAME.log, and records how it ended in the summary.
run_phase() {
  local name="$1" limit="$2"
  case ",$phases," in *",$name,"*) ;; *) return 0 ;; esac
  if [ -n "$seconds" ]; then
    local left=$((seconds - SECONDS - 5))
    if [ $left -lt 20 ]; then
      printf '%-9s %-28s\n' "$name" "skipped: no time left" | tee -a "$summary"
      return 0
    fi
    [ $left -lt "$limit" ] && limit=$left
  fi
  local start=$SECONDS
  echo "== $name (at most ${limit} s)"
  TRIPTYCH_MEASURE_PHASE="$name" timeout --kill-after=5 "$limit" bash "$0" "${arguments[@]}" \
    >"$out/$name.log" 2>&1
  local status=$?
  local how="ok"
  if [ $status -eq 124 ] || [ $status -eq 137 ]; then
    how="ran out of its ${limit} s"
  elif [ $status -ne 0 ]; then
    how="failed (exit status $status)"
  fi
  printf '%-9s %-28s %4d s\n' "$name" "$how" $((SECONDS - start)) | tee -a "$summary"
  tail -n 3 "$out/$name.log"
}

if [ -n "${TRIPTYCH_MEASURE_PHASE:-}" ]; then
  "phase_$TRIPTYCH_MEASURE_PHASE"
  exit
fi
mkdir -p "$out"
: >"$summary"
run_phase machine 30
run_phase build 420
run_phase profile 120
run_phase check 240
run_phase bench 240
run_phase train 150
run_phase timeline 90
run_phase lessons 150
run_phase benchall 240
run_phase sanitize 150
run_phase tests 300
echo "== summary ($out/summary.txt)"
cat "$summary"
