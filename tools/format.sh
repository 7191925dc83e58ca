#!/usr/bin/env bash
# The layout of every C++ and CUDA file of the repository, as .clang-format states it.
#
#   tools/format.sh           formats every tracked .cpp, .hpp, .cu and .cuh file in place
#   tools/format.sh --check   changes nothing; lists the files that are not formatted and exits 1
#                             if there is any (CI runs this, and so does ctest: test clang_format)
#
# Layout depends on clang-format's version; Debian 12's clang-format 14 is the one the tree is
# formatted with (tools/install-deps.sh installs it).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

mode=format
case "${1-}" in
  "") ;;
  --check) mode=check ;;
  *) echo "format.sh: unknown option '$1' (the one option is --check)" >&2; exit 1 ;;
esac

tool=""
for candidate in clang-format-14 clang-format; do
  if command -v "$candidate" >/dev/null; then tool="$candidate"; break; fi
done
if [ -z "$tool" ]; then
  echo "format.sh: clang-format not found (tools/install-deps.sh installs it)" >&2
  exit 1
fi

# The tracked files; outside a git checkout (an unpacked archive), every such file but the build
# folders'.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh')
else
  mapfile -t files < <(find . \( -path './build*' -o -path './.*' \) -prune -o -type f \
    \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' \) -print | sed 's|^\./||' | sort)
fi
if [ "$mode" = format ]; then
  "$tool" -i --style=file "${files[@]}"
  exit 0
fi

unformatted=()
for file in "${files[@]}"; do
  if ! "$tool" --style=file --dry-run -Werror "$file" >/dev/null 2>&1; then
    unformatted+=("$file")
  fi
done
if [ ${#unformatted[@]} -ne 0 ]; then
  echo "format.sh: ${#unformatted[@]} file(s) not formatted as .clang-format says ($("$tool" --version)):" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  echo "run tools/format.sh to format them" >&2
  exit 1
fi
echo "format.sh: all ${#files[@]} files formatted ($("$tool" --version))"
