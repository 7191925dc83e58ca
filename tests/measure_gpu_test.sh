#!/usr/bin/env bash
# tools/measure-gpu.sh's own machinery, in a build without a GPU: an unknown argument, a missing
# value, an unknown phase and a budget that is not a number are refused in one line;
# the check phase runs `triptych check` on every variant and version and records it in the summary
# (a sim build's GPU variants run on the simulator, as the environment sets it: CTest runs this
# with TRIPTYCH_SIM_GRID_ROWS=1, tests/CMakeLists.txt); a phase that the --seconds budget cannot
# fit is skipped by name.
#   measure_gpu_test.sh SCRIPT BUILD_DIR
set -uo pipefail
script="$1" build="$2"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

bash "$script" --no-such-option >"$out/refused.txt" 2>&1
[ $? -eq 2 ] || fail "an unknown argument should exit 2"
grep -q "unknown argument '--no-such-option'" "$out/refused.txt" || fail "no message naming it"
# A missing value used to loop for ever; a phase that does not exist, or a budget that is not a
# number of seconds, ran nothing and passed.
for arguments in "--out" "--phases bogus" "--seconds -5" "--seconds abc" "--deps $out"; do
  timeout 10 bash "$script" $arguments >"$out/refused.txt" 2>&1
  status=$?
  [ $status -eq 2 ] || fail "'$arguments' should exit 2, got $status: $(head -c 300 "$out/refused.txt")"
  [ "$(wc -l <"$out/refused.txt")" -eq 1 ] || fail "'$arguments': not one line: $(head -c 300 "$out/refused.txt")"
done
bash "$script" --help | grep -q '^  --seconds N' || fail "--help does not print the options"

bash "$script" --build "$build" --out "$out/run" --phases check --seconds 400 >"$out/run.txt" 2>&1 ||
  fail "the check phase run failed: $(tail -n 5 "$out/run.txt")"
grep -Eq '^check +ok ' "$out/run/summary.txt" || fail "summary: $(cat "$out/run/summary.txt")"
tail -n 1 "$out/run/check-all.txt" | grep -Eq '^[0-9]+ passed, 0 failed' ||
  fail "check-all.txt: $(tail -n 1 "$out/run/check-all.txt")
$(grep -E 'FAIL' "$out/run/check-all.txt" | head -n 20)"
grep -q 'gpu_tiled@9' "$out/run/check-all.txt" || fail "the tensor-core versions were not checked"

# Without Nsight Systems, the timeline phase says so and records nothing.
if ! command -v nsys >/dev/null 2>&1; then
  bash "$script" --build "$build" --out "$out/timeline" --phases timeline >"$out/timeline.txt" 2>&1 ||
    fail "the timeline phase without nsys failed: $(tail -n 5 "$out/timeline.txt")"
  grep -q 'nsys (Nsight Systems) is not installed here' "$out/timeline/timeline.log" ||
    fail "timeline.log: $(cat "$out/timeline/timeline.log")"
  ! ls "$out/timeline"/timeline-* >/dev/null 2>&1 || fail "a timeline was recorded without nsys"
fi

bash "$script" --build "$build" --out "$out/short" --phases check,lessons --seconds 20 \
  >"$out/short.txt" 2>&1
grep -Eq '^check +skipped: no time left' "$out/short/summary.txt" ||
  fail "a phase that does not fit was not skipped: $(cat "$out/short/summary.txt")"
echo "measure-gpu.sh: arguments, the check phase and the time budget behave"
