#!/usr/bin/env python3
"""Sets the simulator's counts beside Nsight Compute's, kernel by kernel and metric by metric.

    triptych profile --op gemm --backend gpu_tiled@3 --shape 40,33,17,NN --seed 1 --json sim.json
        (in a sim build: what the simulator counts from every warp's addresses)
    ncu --csv --print-kernel-base demangled --log-file ncu.csv \\
        --metrics <the ones triptych profile names> \\
        triptych check --op gemm --backend gpu_tiled@3 --shape 40,33,17,NN --seed 1
        (in a cuda build, on the GPU: what the hardware counts for the same launches)
    tools/compare_ncu.py --sim sim.json --ncu ncu.csv

For every kernel of the simulator's profile, the launches of the kernel of the same name in ncu's
log are added up (the profile sums a kernel's launches too) and each metric of the profile's
"metrics" is printed with both counts and their difference. Exit status 0 when every count is
within 2% of ncu's (the goal set for the simulator's counts), 1 when one is further off or a
kernel or metric has no counterpart in ncu's log, 2 on unreadable input.
tools/measure-gpu.sh's profile phase writes the ncu logs.

Names are matched as written by GCC (the simulator) and by NVIDIA's demangler (ncu) alike:
template arguments may read `<1>` or `<(int)1>`, `<true>` or `<(bool)1>`, `Fixed<3, 2> >` or
`Fixed<3,2>>`. ncu's default `--print-kernel-base function` drops template arguments altogether;
a kernel is then matched by its bare name, where one kernel of each log has it.
"""

import argparse
import csv
import io
import json
import math
import re
import sys
from collections import defaultdict


class InputError(Exception):
    pass


def base_name(kernel):
    """'gemm_v3_kernel<32>' from 'void triptych::gpu_tiled::(anonymous namespace)::gemm_v3_kernel<32>(int, ...)'.

    The same rule as `triptych profile`'s short_name: no return type, namespaces or parameters;
    template arguments kept.
    """
    name = kernel.replace("(anonymous namespace)::", "")
    depth = 0
    for i, c in enumerate(name):  # the parameter list: the first '(' outside template arguments
        depth += (c == "<") - (c == ">")
        if c == "(" and depth == 0 and i > 0:
            name = name[:i]
            break
    depth, start = 0, 0
    for i, c in enumerate(name):  # what follows the last space or '::' outside them
        depth += (c == "<") - (c == ">")
        if depth == 0 and c == " ":
            start = i + 1
        if depth == 0 and name.startswith("::", i):
            start = i + 2
    return name[start:].strip()


def same_name_key(name):
    """What two spellings of one kernel's base name share: no casts before whole numbers, no
    integer suffixes, bool as true/false, no spaces. '<(int)64, (bool)0>' and '<64, false>' agree."""
    key = name.replace("<unnamed>::", "")
    key = re.sub(r"\(bool\)\s*1\b", "true", key)
    key = re.sub(r"\(bool\)\s*0\b", "false", key)
    key = re.sub(r"\((?:(?:un)?signed\s+)?(?:char|short|int|long|long\s+long)\)\s*(-?\d)", r"\1", key)
    key = re.sub(r"\b(\d+)(?:[uU]?[lL]{0,2}|[lL]{1,2}[uU])\b", r"\1", key)
    return re.sub(r"\s+", "", key)


def bare_name(name):
    """'gemm_v3_kernel' from 'gemm_v3_kernel<32>': the form ncu prints by default."""
    return name.split("<", 1)[0].strip()


def match_kernels(sim_names, ncu_names):
    """{simulator name: (ncu name, how)}: first by same_name_key; then, where ncu's name carries
    no template arguments (its default names), by bare name where exactly one kernel on each side
    has it. Two names that both carry template arguments and differ in them are two kernels."""
    matched = {}
    by_key = {same_name_key(n): n for n in ncu_names}
    for name in sim_names:
        if same_name_key(name) in by_key:
            matched[name] = (by_key[same_name_key(name)], "")
    left_sim = [n for n in sim_names if n not in matched]
    left_ncu = set(ncu_names) - {n for n, _ in matched.values()}
    for name in left_sim:
        bare = bare_name(name)
        sims = [n for n in left_sim if bare_name(n) == bare]
        ncus = [n for n in left_ncu if n == bare]
        if len(sims) == 1 and len(ncus) == 1:
            matched[name] = (ncus[0], f" (ncu's {ncus[0]}, matched by name alone)")
    return matched


def read_sim(path):
    """({kernel base name: {metric: count}}, {kernel base name: {line: uneven requests}}) from
    `triptych profile --json`, launches summed. A line's requests are uneven where the lanes of a
    warp ran it different numbers of times, which the simulator may group unlike a GPU (the note
    `triptych profile --lines` prints with its ~ marks)."""
    try:
        with open(path) as f:
            data = json.load(f)
        kernels = defaultdict(lambda: defaultdict(int))
        uneven = defaultdict(lambda: defaultdict(int))
        for k in data["kernels"]:
            if not k["metrics"]:
                raise ValueError(f"kernel {k['kernel']} has no metrics")
            for metric, value in k["metrics"].items():
                # Counts are whole (148.7 is no count of 148; true is no count of 1) and fit the
                # hardware's 64 bits.
                if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**64:
                    raise ValueError(f"{metric} = {value!r} is not a whole count")
                kernels[base_name(k["kernel"])][metric] += value
            for site in k["sites"]:
                if site.get("uneven_requests", 0):
                    uneven[base_name(k["kernel"])][str(site["line"])] += int(
                        site["uneven_requests"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError, OverflowError) as e:
        raise InputError(f"{path}: not a `triptych profile --json` file ({e})")
    except RecursionError:
        raise InputError(f"{path}: not a `triptych profile --json` file (nested too deeply)")
    if not kernels:
        raise InputError(f"{path}: the profile has no kernels")
    return kernels, uneven


def number(text):
    """ncu's figures, which may group thousands with ',' (or '.' in some locales)."""
    cleaned = text.strip().replace(",", "")
    if re.fullmatch(r"\d{1,3}(\.\d{3})+", cleaned):
        cleaned = cleaned.replace(".", "")
    value = float(cleaned)
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {text!r}")
    return value


def read_ncu(path):
    """{kernel base name: {metric: sum over launches}} from ncu's --csv log.

    The log may start with ncu's own '==PROF==' lines (or the program's output, where ncu wrote
    to stdout); the table starts at the header row, which names the columns used here.
    """
    try:
        with open(path, newline="") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: {e}")
    header = next((i for i, line in enumerate(lines)
                   if line.startswith('"ID"') and "Metric Name" in line), None)
    if header is None:
        raise InputError(f"{path}: no ncu CSV table (a header row naming \"ID\", "
                         "\"Kernel Name\", \"Metric Name\", \"Metric Value\")")
    kernels = defaultdict(lambda: defaultdict(float))
    rows = csv.DictReader(io.StringIO("\n".join(lines[header:])))
    try:
        for row in rows:
            read_ncu_row(path, row, kernels)
    except csv.Error as e:
        raise InputError(f"{path}: not an ncu CSV table ({e})")
    if not kernels:
        raise InputError(f"{path}: the ncu table has no rows")
    return kernels


def read_ncu_row(path, row, kernels):
    """Adds one row of ncu's table to kernels (see read_ncu); a line of program output after the
    table, which has no metric, adds nothing."""
    if row.get("Metric Name") is None or row.get("Kernel Name") is None:
        return
    try:
        value = number(row["Metric Value"])
    except (ValueError, AttributeError):
        raise InputError(f"{path}: {row['Kernel Name']} {row['Metric Name']}: "
                         f"not a number: {row['Metric Value']!r}")
    if value < 0:  # counts and occupancies alike
        raise InputError(f"{path}: {row['Kernel Name']} {row['Metric Name']}: "
                         f"a negative value, {row['Metric Value']!r}")
    kernels[base_name(row["Kernel Name"])][row["Metric Name"]] += value


TOLERANCE = 0.02  # the goal set for the simulator: its counts within 2% of the hardware's


def verdict(count, value):
    """'equal', or 'within 2%' or 'DIFFERS' with the difference as a share of ncu's count."""
    if value == count:
        return "equal"
    off = (count - value) / max(abs(value), 1.0)
    return f"{'within 2%' if abs(off) <= TOLERANCE else 'DIFFERS'} ({off:+.1%})"


def compare(sim, ncu, out, uneven=None):
    """Prints the table; returns the number of counts off by more than 2% or with no counterpart."""
    problems = 0
    matched = match_kernels(list(sim), list(ncu))
    for kernel, metrics in sim.items():
        ncu_name, how = matched.get(kernel, (None, ""))
        out.write(f"\n{kernel}{how}\n")
        lines = (uneven or {}).get(kernel)
        if lines:
            out.write(f"  uneven requests, which ncu may count differently: "
                      f"{', '.join(f'{n} at {line}' for line, n in sorted(lines.items()))} "
                      "(triptych profile --lines explains its ~ marks)\n")
        if ncu_name is None:
            out.write(f"  not in ncu's log (it has: {', '.join(sorted(ncu)) or 'nothing'})\n")
            problems += 1
            continue
        measured = ncu[ncu_name]
        out.write(f"  {'metric':58} {'simulator':>12} {'ncu':>12}\n")
        for metric, count in metrics.items():
            if metric not in measured:
                out.write(f"  {metric:58} {count:12d} {'not measured':>12}  MISSING\n")
                problems += 1
                continue
            value = measured[metric]
            shown = f"{value:12.0f}" if value == int(value) else f"{value:12.2f}"
            said = verdict(count, value)
            out.write(f"  {metric:58} {count:12d} {shown}  {said}\n")
            problems += said.startswith("DIFFERS")
    unmatched = sorted(set(ncu) - {name for name, _ in matched.values()})
    if unmatched:
        out.write(f"\nkernels ncu measured that the profile does not have (not compared): "
                  f"{', '.join(unmatched)}\n")
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sim", required=True, help="triptych profile --json's file")
    parser.add_argument("--ncu", required=True, help="ncu --csv's log of the same check")
    args = parser.parse_args(argv)
    try:
        (sim, uneven), ncu = read_sim(args.sim), read_ncu(args.ncu)
    except InputError as e:
        print(f"compare_ncu: {e}", file=sys.stderr)
        return 2
    problems = compare(sim, ncu, sys.stdout, uneven)
    print("\nevery count within 2% of ncu's" if problems == 0 else
          f"\n{problems} counts differ by more than 2% or are missing")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
