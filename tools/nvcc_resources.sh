#!/usr/bin/env bash
# The compiler launcher of the nvcc compile check (cmake/gpu.cmake): runs the nvcc command it is
# given, keeps ptxas's resource usage (registers and static shared memory of every kernel, from
# --resource-usage) in DIR/<object>.txt for `triptych profile`'s occupancy, and passes every other
# line of nvcc's output through.
#   nvcc_resources.sh DIR nvcc ARGS...
set -uo pipefail
dir="$1"
shift
object="" previous=""
for argument in "$@"; do
  [ "$previous" = "-o" ] && object="$argument"
  previous="$argument"
done
mkdir -p "$dir"
out="$dir/$(printf '%s' "$object" | tr '/' '_').txt"
log="$(mktemp)"
"$@" 2>"$log"
status=$?
grep -v -e '^ptxas info' -e 'bytes stack frame' "$log" >&2
# Written under a temporary name and renamed: a reader never sees half a file.
grep -e '^ptxas info' -e 'bytes stack frame' "$log" >"$out.part"
mv "$out.part" "$out"
rm -f "$log"
exit $status
