#!/usr/bin/env python3
"""Sets the simulator's counts beside Nsight Compute's, kernel by kernel and metric by metric.

    triptych profile --op gemm --backend gpu_tiled@3 --shape 40,33,17,NN --seed 1 --json sim.json
        (in a sim build: what the simulator counts from every warp's addresses)
    ncu --csv --log-file ncu.csv --metrics <the ones triptych profile names> \\
        triptych check --op gemm --backend gpu_tiled@3 --shape 40,33,17,NN --seed 1
        (in a cuda build, on the GPU: what the hardware counts for the same launches)
    tools/compare_ncu.py --sim sim.json --ncu ncu.csv

For every kernel of the simulator's profile, the launches of the kernel of the same name in ncu's
log are added up (the profile sums a kernel's launches too) and each metric of the profile's
"metrics" is printed with both counts. Exit status 0 when every count is equal, 1 when one
differs or a kernel or metric has no counterpart in ncu's log, 2 on unreadable input.
tools/measure-gpu.sh's profile phase writes the ncu logs.
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
            for metric, value in k["metrics"].items():
                if not isinstance(value, int):  # counts are whole: 148.7 is no count of 148
                    raise ValueError(f"{metric} = {value!r} is not a whole count")
                kernels[base_name(k["kernel"])][metric] += value
            for site in k["sites"]:
                if site.get("uneven_requests", 0):
                    uneven[base_name(k["kernel"])][str(site["line"])] += int(
                        site["uneven_requests"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError, OverflowError) as e:
        raise InputError(f"{path}: not a `triptych profile --json` file ({e})")
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
    for row in rows:
        if row.get("Metric Name") is None or row.get("Kernel Name") is None:
            continue  # a line of program output after the table
        try:
            value = number(row["Metric Value"])
        except (ValueError, AttributeError):
            raise InputError(f"{path}: {row['Kernel Name']} {row['Metric Name']}: "
                             f"not a number: {row['Metric Value']!r}")
        kernels[base_name(row["Kernel Name"])][row["Metric Name"]] += value
    if not kernels:
        raise InputError(f"{path}: the ncu table has no rows")
    return kernels


def compare(sim, ncu, out, uneven=None):
    """Prints the table; returns the number of counts that differ or have no counterpart."""
    problems = 0
    for kernel, metrics in sim.items():
        out.write(f"\n{kernel}\n")
        lines = (uneven or {}).get(kernel)
        if lines:
            out.write(f"  uneven requests, which ncu may count differently: "
                      f"{', '.join(f'{n} at {line}' for line, n in sorted(lines.items()))} "
                      "(triptych profile --lines explains its ~ marks)\n")
        measured = ncu.get(kernel)
        if measured is None:
            out.write(f"  not in ncu's log (it has: {', '.join(sorted(ncu)) or 'nothing'})\n")
            problems += 1
            continue
        out.write(f"  {'metric':58} {'simulator':>12} {'ncu':>12}\n")
        for metric, count in metrics.items():
            if metric not in measured:
                out.write(f"  {metric:58} {count:12d} {'not measured':>12}  MISSING\n")
                problems += 1
                continue
            value = measured[metric]
            same = value == count
            shown = f"{value:12.0f}" if value == int(value) else f"{value:12.2f}"
            out.write(f"  {metric:58} {count:12d} {shown}  {'equal' if same else 'DIFFERS'}\n")
            problems += not same
    unmatched = sorted(set(ncu) - set(sim))
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
    print(f"\n{'every count equal' if problems == 0 else f'{problems} counts differ or are missing'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
