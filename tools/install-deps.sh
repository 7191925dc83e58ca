#!/usr/bin/env bash
# Installs, from Debian 12's packages, whatever triptych needs that is missing. Idempotent: when
# everything is there it changes nothing and needs no network. The CUDA toolkit is optional and
# not installed here (see README: "Building for a real GPU").
#
#   tools/install-deps.sh [--peer]
#
# --peer also installs PyTorch for bench/pytorch_peer.py, the peer `triptych report --peer` sets
# beside our figures; it is large, and nothing else needs it.
set -euo pipefail

packages=(
  g++ cmake make ninja-build     # the toolchain (CMake's two generators: edited_build_test)
  libeigen3-dev                  # cpu_eigen_omp
  libopenblas-dev                # Eigen's BLAS backend and the openblas benchmark row
  libfftw3-dev                   # FFTW: cpu_eigen_omp's FFT convolution (single precision)
  libboost-context-dev           # the CUDA simulator's fibers
  catch2                         # tests (Catch2 2.x)
  libbenchmark-dev               # benchmarks (Google Benchmark)
  zlib1g-dev                     # reading gzip-compressed IDX files (MNIST format)
  dataset-fashion-mnist          # the default training data (/usr/share/datasets/fashion-mnist)
  python3-matplotlib             # the report's charts
  clang-format                   # tools/format.sh: the layout every C++ and CUDA file follows
)
case "${1-}" in
  "") ;;
  --peer) packages+=(python3-torch) ;;  # bench/pytorch_peer.py, run with /usr/bin/python3
  *) echo "install-deps.sh: unknown option '$1' (the one option is --peer)" >&2; exit 1 ;;
esac

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
