#!/usr/bin/env bash
# The main job, from nothing: install what is missing, build, cross-check every op and variant
# (`triptych check`), then benchmark and write the speedup report (`triptych report`, into report/).
#   tools/setup.sh [extra cmake arguments, e.g. -DTRIPTYCH_GPU=cuda]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/tools/install-deps.sh"
"$root/tools/build.sh" "$root/build" "$@"
"$root/build/tools/triptych" info
"$root/build/tools/triptych" check
"$root/build/tools/triptych" report --out "$root/report"
