#!/usr/bin/env python3
"""Turns triptych_bench's Google Benchmark JSON into a report directory.

    report.py --json results.json --out report/    write report/ (report.md, charts, the JSON)
    report.py --check-out report/                  only say whether report/ may be (re)written

report.md states the machine (host, CPUs, caches, build, OpenMP threads, the GPU or that there was
none), then speedup tables: every variant against cpu_naive and against cpu_eigen_omp, each GPU
kernel as % of gpu_vendor, cpu_eigen_omp as % of OpenBLAS, ReLU bandwidth against copy bandwidth,
and what host<->device transfers cost. Charts: gemm_gflops.png, gemm_speedup.png,
relu_bandwidth.png (matplotlib, Agg backend, so no display is needed).

Each row's figure is its `_median` aggregate when the run had repetitions (`triptych report`
runs three), else the median of its iterations. Rows of simulator variants (`*_on_simulator`) are
CPU timings of the CUDA simulator: they get their own section and never enter a GPU column, a
chart or a speedup; without a real GPU every GPU column says "no GPU".

The report is written to a temporary directory next to --out and renamed into place, so a failed
run never leaves a half-written report and never damages the previous one. Errors: one line on
stderr, exit status 1. Standard library and matplotlib only.
"""
import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile

# A directory holding this file was written by this script, and may be replaced by the next run.
MARKER = ".triptych-report"
NO_GPU = "no GPU"
SECONDS_PER_UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
# gpu_tiled's version-2 kernel is its own op in the JSON; in the GEMM tables it is one more column.
SHARED_TILES = "gpu_tiled gemm_shared_tiles"


class ReportError(Exception):
    """A problem the user can act on; printed as one line."""


# --- reading the JSON ---------------------------------------------------------------------------

class Row:
    """One benchmark: op, variant and size, its median time in seconds and its rate counter
    (`flops` or `bytes` per second)."""

    def __init__(self, op, variant, size, seconds, rate):
        self.op, self.variant, self.size = op, variant, size
        self.seconds, self.rate = seconds, rate


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise ReportError(f"cannot read {path}: {e.strerror}")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ReportError(f"{path} is not valid JSON ({e})")
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise ReportError(f"{path} is not Google Benchmark JSON (no 'benchmarks' list)")
    context = doc.get("context")
    if not isinstance(context, dict) or "triptych_variants" not in context:
        raise ReportError(f"{path} was not written by triptych_bench (no triptych context)")
    return doc


def split_name(run_name):
    """'gemm/cpu_naive/64x64x64/real_time' -> ('gemm', 'cpu_naive', '64x64x64')."""
    parts = [p for p in run_name.split("/") if p not in ("real_time", "manual_time")]
    if len(parts) != 3:
        raise ReportError(f"benchmark name '{run_name}' is not <op>/<variant>/<size>")
    return tuple(parts)


def parse_size(op, size):
    """GEMM sizes 'MxNxK' -> (M, N, K); every other op's size is a count of floats."""
    try:
        if op.startswith("gemm"):
            M, N, K = (int(d) for d in size.split("x"))
            return (M, N, K)
        return int(size)
    except ValueError:
        raise ReportError(f"benchmark size '{size}' of {op} is not a number")


def entry_seconds(entry):
    unit = entry.get("time_unit", "ns")
    if unit not in SECONDS_PER_UNIT or not isinstance(entry.get("real_time"), (int, float)):
        raise ReportError(f"benchmark '{entry.get('name')}' has no usable real_time")
    return entry["real_time"] * SECONDS_PER_UNIT[unit]


def entry_rate(entry, op):
    counter = "flops" if op.startswith("gemm") else "bytes"
    value = entry.get(counter)
    if not isinstance(value, (int, float)):
        raise ReportError(f"benchmark '{entry.get('name')}' has no '{counter}' counter")
    return value


def parse_rows(doc):
    """Returns ({(op, variant, size): Row}, [(name, error message)] for rows that were skipped)."""
    medians, iterations, skipped = {}, {}, []
    for entry in doc["benchmarks"]:
        if not isinstance(entry, dict) or "name" not in entry:
            raise ReportError("a benchmark entry has no name")
        run_name = entry.get("run_name", entry["name"])
        if entry.get("error_occurred"):
            skipped.append((run_name, entry.get("error_message", "")))
            continue
        if entry.get("run_type") == "aggregate":
            if entry.get("aggregate_name") == "median":
                medians[run_name] = entry
        else:
            iterations.setdefault(run_name, []).append(entry)
    rows = {}
    for run_name in list(medians) + [n for n in iterations if n not in medians]:
        op, variant, size = split_name(run_name)
        if run_name in medians:
            seconds = entry_seconds(medians[run_name])
            rate = entry_rate(medians[run_name], op)
        else:
            seconds = statistics.median(entry_seconds(e) for e in iterations[run_name])
            rate = statistics.median(entry_rate(e, op) for e in iterations[run_name])
        key = parse_size(op, size)
        rows[(op, variant, key)] = Row(op, variant, key, seconds, rate)
    if not rows and not skipped:
        raise ReportError("the JSON holds no benchmark results")
    return rows, skipped


# --- what ran where -----------------------------------------------------------------------------

class Machine:
    """The JSON's context: variant kinds (cpu, gpu, simulator) in registry order, and the GPU."""

    def __init__(self, context):
        self.context = context
        self.kinds = {}
        for item in str(context["triptych_variants"]).split(","):
            name, _, kind = item.partition("=")
            if name:
                self.kinds[name] = kind
        self.has_gpu = "gpu" in self.kinds.values()
        self.gpu = context.get("triptych_gpu", NO_GPU)

    def kind(self, variant):
        if variant.endswith("_on_simulator"):
            return "simulator"
        return self.kinds.get(variant, "cpu")  # openblas, the one row outside the registry

    def gpu_columns(self, present):
        """The GPU columns of a table: the real-GPU series that ran, in registry order; without a
        GPU, one column per GPU variant of the build (or one 'GPU' column), each saying no GPU."""
        if self.has_gpu:
            return [s for s in present if self.kind(series_variant(s)) == "gpu"]
        simulated = [v for v, k in self.kinds.items() if k == "simulator"]
        return simulated or ["GPU"]

    def order(self, names):
        """Series in registry order; openblas right after cpu_eigen_omp, gpu_tiled's version 2
        right after gpu_tiled, anything else at the end."""
        ranked = []
        for variant in self.kinds:
            ranked.append(variant)
            if variant == "cpu_eigen_omp":
                ranked.append("openblas")
            if variant == "gpu_tiled":
                ranked.append(SHARED_TILES)
        if "openblas" not in ranked:
            ranked.insert(0, "openblas")
        known = [n for n in ranked if n in names]
        return known + sorted(n for n in names if n not in ranked)


def series_variant(series):
    return "gpu_tiled" if series == SHARED_TILES else series


# --- formatting ---------------------------------------------------------------------------------

def fmt_number(x):
    """Three significant figures or so: 1234, 45.6, 7.89, 0.012."""
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.2g}"


def fmt_times(x):
    return fmt_number(x) + "×"


def fmt_percent(x):
    return f"{x:.0f}%" if x >= 10 else f"{x:.1f}%"


def fmt_bytes(n):
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


def table(headers, rows):
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def size_label(size):
    """GEMM (M, N, K) -> '1024' when square; a float count -> '65536 (256 KiB)'."""
    if isinstance(size, tuple):
        return str(size[0]) if len(set(size)) == 1 else "x".join(map(str, size))
    return f"{size} ({fmt_bytes(4 * size)})"


# --- GEMM ---------------------------------------------------------------------------------------

def gemm_series(rows, machine):
    """{series: {size: Row}} for every GEMM row except the simulator's."""
    series = {}
    for (op, variant, size), row in rows.items():
        if machine.kind(variant) == "simulator":
            continue
        if op == "gemm":
            series.setdefault(variant, {})[size] = row
        elif op == "gemm_shared_tiles" and variant == "gpu_tiled":
            series.setdefault(SHARED_TILES, {})[size] = row
    return series


def gemm_table(series, machine, sizes, cell, without=None):
    """One row per size; a CPU column per CPU series (except `without`), then the GPU columns.
    `cell(name, size)` gives a measured cell or None (shown as '—')."""
    names = [n for n in machine.order(series) if n != without]
    cpu = [n for n in names if machine.kind(series_variant(n)) == "cpu"]
    gpu = machine.gpu_columns(names)
    rows = []
    for size in sizes:
        cells = [cell(n, size) for n in cpu]
        if machine.has_gpu:
            cells += [cell(n, size) for n in gpu]
        else:
            cells += [NO_GPU] * len(gpu)
        rows.append([size_label(size)] + [c if c is not None else "—" for c in cells])
    return table(["N (M=N=K)"] + cpu + gpu, rows)


def gemm_sections(series, machine):
    if not series:
        return ["## GEMM\n\nNo GEMM rows were run.\n"]
    sizes = sorted({s for rows in series.values() for s in rows}, key=lambda s: math.prod(s))

    def gflops(name, size):
        row = series[name].get(size)
        return fmt_number(row.rate / 1e9) if row else None

    def speedup_over(base):
        def cell(name, size):
            row, ref = series[name].get(size), series.get(base, {}).get(size)
            return fmt_times(row.rate / ref.rate) if row and ref else None
        return cell

    out = ["## GEMM throughput (GFLOP/s)\n\n"
           "C = A·B with square float32 matrices, 2·N³ floating-point operations per call; "
           "median of the repetitions. '—': not run at that size (cpu_naive stops at N = 512 to "
           "keep the run short, see bench/gemm.cpp).\n\n" + gemm_table(series, machine, sizes, gflops)]
    for base in ("cpu_naive", "cpu_eigen_omp"):
        text = f"## GEMM speedup over {base}\n\n"
        if base in series:
            text += (f"How many times faster than {base} at the same size.\n\n"
                     + gemm_table(series, machine, sizes, speedup_over(base), without=base))
        else:
            text += f"{base} was not run, so there is nothing to compare with.\n"
        out.append(text)
    out.append(vendor_section(series, machine, sizes))
    out.append(openblas_section(series, machine, sizes))
    return out


def vendor_section(series, machine, sizes):
    text = "## GPU kernels as % of gpu_vendor (cuBLAS)\n\n"
    if not machine.has_gpu:
        return text + f"{machine.gpu}: hand-written kernels are compared with cuBLAS only on a " \
                      "real GPU.\n"
    if "gpu_vendor" not in series:
        return text + "gpu_vendor was not run, so there is nothing to compare with.\n"
    kernels = [n for n in machine.gpu_columns(machine.order(series)) if n != "gpu_vendor"]
    rows = []
    for size in sizes:
        vendor = series["gpu_vendor"].get(size)
        if not vendor:
            continue
        cells = [fmt_percent(100 * series[n][size].rate / vendor.rate) if size in series[n]
                 else "—" for n in kernels]
        rows.append([size_label(size), fmt_number(vendor.rate / 1e9)] + cells)
    return text + ("Each kernel's GFLOP/s as a percentage of cuBLAS's at the same size.\n\n"
                   + table(["N (M=N=K)", "gpu_vendor GFLOP/s"] + kernels, rows))


def openblas_section(series, machine, sizes):
    blas = machine.context.get("triptych_eigen_blas", "unknown")
    text = ("## cpu_eigen_omp as % of OpenBLAS\n\n"
            f"Eigen over BLAS (EIGEN_USE_BLAS, CMake option TRIPTYCH_EIGEN_BLAS): **{blas}**. "
            "With it on, Eigen's product calls OpenBLAS's sgemm and should be close to 100%; "
            "off, it is Eigen's own blocked kernel (lesson 02).\n\n")
    if "cpu_eigen_omp" not in series or "openblas" not in series:
        return text + "cpu_eigen_omp and openblas were not both run.\n"
    rows = []
    for size in sizes:
        eigen, blas_row = series["cpu_eigen_omp"].get(size), series["openblas"].get(size)
        if eigen and blas_row:
            rows.append([size_label(size), fmt_number(eigen.rate / 1e9),
                         fmt_number(blas_row.rate / 1e9),
                         fmt_percent(100 * eigen.rate / blas_row.rate)])
    return text + table(["N (M=N=K)", "cpu_eigen_omp GFLOP/s", "openblas GFLOP/s",
                         "cpu_eigen_omp / openblas"], rows)


# --- ReLU and copies ----------------------------------------------------------------------------

def relu_section(rows, machine):
    copies = {(v, n): r for (op, v, n), r in rows.items() if op == "copy"}
    text = ("## ReLU bandwidth (GB/s) against copy bandwidth\n\n"
            "ReLU moves 8 bytes per element forward (read x, write y) and 12 backward, and does "
            "one comparison each: it is bound by memory bandwidth. Each cell is GB/s (10⁹ bytes "
            "per second) and, in brackets, the percentage of a plain copy of the same size on the "
            "same device (copy/host: memcpy with the same OpenMP threads; copy/device: "
            "cudaMemcpy on the GPU), the most a memory-bound op can reach.\n")
    peak = machine.context.get("triptych_gpu_bandwidth_gbs")
    if machine.has_gpu and peak:
        text += f"\nGPU peak memory bandwidth (from memory clock × bus width): {peak} GB/s.\n"
    for op in ("relu_forward", "relu_backward"):
        found = {v: {} for (o, v, _) in rows if o == op and machine.kind(v) != "simulator"}
        for (o, v, n), r in rows.items():
            if v in found and o == op:
                found[v][n] = r
        if not found:
            continue
        names = machine.order(found)
        cpu = [v for v in names if machine.kind(v) == "cpu"]
        gpu = machine.gpu_columns(names)
        sizes = sorted({n for by_size in found.values() for n in by_size})
        body = []
        for n in sizes:
            cells = [bandwidth_cell(found[v].get(n), copies.get(("host", n))) for v in cpu]
            cells += ([bandwidth_cell(found[v].get(n), copies.get(("device", n))) for v in gpu]
                      if machine.has_gpu else [NO_GPU] * len(gpu))
            host = copies.get(("host", n))
            device = copies.get(("device", n))
            cells.append(fmt_number(host.rate / 1e9) if host else "—")
            cells.append((fmt_number(device.rate / 1e9) if device else "—")
                         if machine.has_gpu else NO_GPU)
            body.append([size_label(n)] + cells)
        text += (f"\n### {op}\n\n"
                 + table(["floats"] + cpu + gpu + ["copy/host", "copy/device"], body))
    return text


def bandwidth_cell(row, copy):
    if row is None:
        return "—"
    cell = fmt_number(row.rate / 1e9)
    return f"{cell} ({fmt_percent(100 * row.rate / copy.rate)})" if copy else cell


def nearest(by_size, floats):
    """The row measured at the size closest to `floats` (on a log scale), or None."""
    if not by_size:
        return None
    return by_size[min(by_size, key=lambda n: abs(math.log(n) - math.log(floats)))]


def transfer_section(rows, series, machine):
    text = "## Host↔device transfers\n\n"
    if not machine.has_gpu:
        return text + f"{machine.gpu}: transfers are measured on a real GPU only.\n"
    kinds = ("h2d_pageable", "h2d_pinned", "d2h_pageable", "d2h_pinned")
    by_kind = {k: {n: r for (op, v, n), r in rows.items() if op == "copy" and v == k}
               for k in kinds}
    sizes = sorted({n for by_size in by_kind.values() for n in by_size})
    if not sizes:
        return text + "The copy rows were not run.\n"
    body = [[fmt_bytes(4 * n)] + [fmt_number(by_kind[k][n].rate / 1e9) if n in by_kind[k]
                                  else "—" for k in kinds] for n in sizes]
    text += ("GB/s of one cudaMemcpy between host and device. Pageable memory is staged by the "
             "driver through a pinned buffer; pinned (page-locked) memory is copied directly.\n\n"
             + table(["bytes"] + [f"{k} GB/s" for k in kinds], body))
    return text + gemm_transfer_table(by_kind, series, machine)


def gemm_transfer_table(by_kind, series, machine):
    """What moving a GEMM's operands costs next to the GEMM itself: A and B up, C down."""
    kernels = [n for n in machine.gpu_columns(machine.order(series))]
    reference = "gpu_vendor" if "gpu_vendor" in kernels else (kernels[-1] if kernels else None)
    if reference is None or not by_kind["h2d_pinned"] or not by_kind["d2h_pinned"]:
        return ""
    body = []
    for size, row in sorted(series[reference].items(), key=lambda kv: math.prod(kv[0])):
        M, N, K = size
        up, down = M * K + K * N, M * N  # floats
        pinned = transfer_seconds(by_kind, "pinned", up, down)
        pageable = transfer_seconds(by_kind, "pageable", up, down)
        body.append([size_label(size), f"{row.seconds * 1e3:.3g}", f"{pinned * 1e3:.3g}",
                     f"{pageable * 1e3:.3g}" if pageable else "—",
                     fmt_percent(100 * pinned / (pinned + row.seconds))])
    return (f"\n### Transfer cost of one GEMM\n\nUploading A and B and downloading C, at the "
            f"bandwidth measured for the nearest copy size, next to one {reference} call. A GEMM "
            "pays for its transfers only if its operands stay on the device for many calls.\n\n"
            + table(["N (M=N=K)", f"{reference} ms", "transfers ms (pinned)",
                     "transfers ms (pageable)", "transfers share (pinned)"], body))


def transfer_seconds(by_kind, memory, up_floats, down_floats):
    h2d, d2h = nearest(by_kind["h2d_" + memory], up_floats), nearest(by_kind["d2h_" + memory],
                                                                       down_floats)
    if not h2d or not d2h:
        return None
    return 4 * up_floats / h2d.rate + 4 * down_floats / d2h.rate


# --- the rest of report.md ----------------------------------------------------------------------

def machine_section(doc, machine, json_name):
    c = machine.context
    caches = ", ".join(f"L{x.get('level')}{'d' if x.get('type') == 'Data' else ''}"
                       f"{'i' if x.get('type') == 'Instruction' else ''} "
                       f"{fmt_bytes(x.get('size', 0))}"
                       + (f" (shared by {x['num_sharing']})" if x.get("num_sharing", 1) > 1 else "")
                       for x in c.get("caches", []))
    variants = ", ".join(f"{v} ({k})" for v, k in machine.kinds.items())
    facts = [
        ("date", c.get("date", "?")),
        ("host", c.get("host_name", "?")),
        ("CPUs", f"{c.get('num_cpus', '?')} × {c.get('mhz_per_cpu', '?')} MHz"),
        ("caches", caches or "?"),
        ("OpenMP threads", c.get("triptych_omp_threads", "?")),
        ("OpenBLAS threads", c.get("triptych_openblas_threads", "?")),
        ("build", f"{c.get('triptych_build', '?')} ({c.get('triptych_build_type', '?')}), "
                  f"{c.get('triptych_compiler', '?')}"),
        ("Eigen over BLAS", c.get("triptych_eigen_blas", "?")),
        ("GPU", machine.gpu),
    ]
    if machine.has_gpu:
        facts += [("GPU SMs", c.get("triptych_gpu_sms", "?")),
                  ("GPU memory", f"{c.get('triptych_gpu_memory_gib', '?')} GiB"),
                  ("compute capability", c.get("triptych_gpu_compute_capability", "?"))]
    facts += [("variants", variants),
              ("run", "quick (small sizes, short timing: a smoke test, not a measurement)"
                      if c.get("triptych_quick") == "yes" else "full"),
              ("raw results", f"[{json_name}]({json_name})")]
    text = "## Machine\n\n" + table(["", "value"], facts)
    load = c.get("load_avg")
    cpus = c.get("num_cpus")
    if isinstance(load, list) and load and isinstance(cpus, int) and load[0] > 0.5 * cpus:
        text += (f"\n> The machine was busy when the run started (load average {load[0]:.2f} on "
                 f"{cpus} CPUs): other work competed for the cores, so timings may be noisy.\n")
    if not machine.has_gpu:
        text += (f"\n{machine.gpu}: every GPU column says \"{NO_GPU}\". Simulator "
                 "timings measure the CPU running the simulator and are never shown as GPU "
                 "timings.\n")
    return text


def simulator_section(rows, machine):
    sim = sorted(((op, v, n), r) for (op, v, n), r in rows.items()
                 if machine.kind(v) == "simulator")
    if not sim:
        return ""
    body = [[op, v, size_label(n), f"{r.seconds * 1e3:.3g}"] for (op, v, n), r in sim]
    return ("## Simulator rows (CPU timings, not GPU timings)\n\n"
            "Run with --include-simulator. These time the CPU simulating a GPU: useful to see the "
            "simulator's cost, meaningless as a kernel's speed.\n\n"
            + table(["op", "variant", "size", "ms per call"], body))


def skipped_section(skipped):
    if not skipped:
        return ""
    return "## Rows that did not run\n\n" + table(["benchmark", "why"],
                                                  [[n, m] for n, m in skipped])


def report_markdown(doc, rows, skipped, machine, charts, json_name):
    series = gemm_series(rows, machine)
    parts = ["# triptych benchmark report\n",
             machine_section(doc, machine, json_name),
             *gemm_sections(series, machine),
             relu_section(rows, machine),
             transfer_section(rows, series, machine),
             "## Charts\n\n" + "\n".join(f"![{title}]({name})\n" for name, title in charts),
             simulator_section(rows, machine),
             skipped_section(skipped)]
    return "\n".join(p for p in parts if p)


# --- charts -------------------------------------------------------------------------------------

def plot_lines(ax, lines, xlabel, ylabel, title):
    for label, points in lines:
        xs = sorted(points)
        ax.plot(xs, [points[x] for x in xs], marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    if lines:
        ax.legend(fontsize="small")


def write_charts(directory, rows, machine):
    """Writes the PNGs; returns [(file name, title)]. Simulator rows are never plotted."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = gemm_series(rows, machine)
    names = machine.order(series)
    square = {n: {s[0]: r for s, r in series[n].items() if len(set(s)) == 1} for n in names}
    gpu_note = "" if machine.has_gpu else f" ({NO_GPU})"
    charts = []

    fig, ax = plt.subplots(figsize=(8, 5))
    plot_lines(ax, [(n, {x: r.rate / 1e9 for x, r in square[n].items()}) for n in names],
               "N (M = N = K)", "GFLOP/s", "GEMM throughput" + gpu_note)
    fig.tight_layout()
    fig.savefig(os.path.join(directory, "gemm_gflops.png"), dpi=110)
    charts.append(("gemm_gflops.png", "GEMM GFLOP/s versus size"))

    fig, axes = plt.subplots(1, 2, figsize=(12, 5))
    for ax, base in zip(axes, ("cpu_naive", "cpu_eigen_omp")):
        ref = square.get(base, {})
        lines = [(n, {x: r.rate / ref[x].rate for x, r in square[n].items() if x in ref})
                 for n in names if n != base]
        plot_lines(ax, [(n, pts) for n, pts in lines if pts], "N (M = N = K)",
                   f"speedup over {base}", f"GEMM speedup over {base}" + gpu_note)
    fig.tight_layout()
    fig.savefig(os.path.join(directory, "gemm_speedup.png"), dpi=110)
    charts.append(("gemm_speedup.png", "GEMM speedup versus size"))

    fig, ax = plt.subplots(figsize=(8, 5))
    lines = []
    for op in ("relu_forward", "copy"):
        for (o, v, n), r in sorted(rows.items()):
            if o == op and machine.kind(v) != "simulator" and not v.startswith(("h2d", "d2h")):
                label = f"{op} {v}"
                if not lines or lines[-1][0] != label:
                    lines.append((label, {}))
                lines[-1][1][n] = r.rate / 1e9
    plot_lines(ax, lines, "floats", "GB/s", "ReLU forward against copy bandwidth" + gpu_note)
    fig.tight_layout()
    fig.savefig(os.path.join(directory, "relu_bandwidth.png"), dpi=110)
    charts.append(("relu_bandwidth.png", "ReLU and copy GB/s versus size"))
    plt.close("all")
    return charts


# --- writing the directory ----------------------------------------------------------------------

def check_out(out):
    """Refuses to replace anything but a report this script wrote (or an empty directory)."""
    if not os.path.lexists(out):
        return
    if not os.path.isdir(out) or os.path.islink(out):
        raise ReportError(f"{out} exists and is not a directory; choose another --out")
    if os.listdir(out) and not os.path.exists(os.path.join(out, MARKER)):
        raise ReportError(f"{out} exists and is not a triptych report directory; "
                          "choose another --out or remove it")


def write_report(json_path, out):
    check_out(out)
    try:
        stage_and_replace(json_path, out)
    except (AttributeError, KeyError, TypeError, ValueError) as e:
        # Well-formed JSON with a field of the wrong type or shape.
        raise ReportError(f"{json_path} has unexpected content ({type(e).__name__}: {e})")


def stage_and_replace(json_path, out):
    doc = load_json(json_path)
    rows, skipped = parse_rows(doc)
    machine = Machine(doc["context"])
    parent = os.path.dirname(os.path.abspath(out))
    os.makedirs(parent, exist_ok=True)
    name = os.path.basename(os.path.abspath(out))
    staging = tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=parent)
    try:
        os.chmod(staging, 0o777 & ~current_umask())  # mkdtemp's 0700 would hide the report
        shutil.copyfile(json_path, os.path.join(staging, "benchmarks.json"))
        charts = write_charts(staging, rows, machine)
        text = report_markdown(doc, rows, skipped, machine, charts, "benchmarks.json")
        with open(os.path.join(staging, "report.md"), "w", encoding="utf-8") as f:
            f.write(text)
        with open(os.path.join(staging, MARKER), "w", encoding="utf-8") as f:
            f.write("Written by bench/report.py; the next report replaces this directory.\n")
        replace_directory(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def replace_directory(staging, out):
    """Renames `staging` to `out`. An old `out` is moved aside first and deleted only once the new
    one is in place; if the rename fails, the old one is put back."""
    if not os.path.exists(out):
        os.rename(staging, out)
        return
    old = f"{staging}.old"
    os.rename(out, old)
    try:
        os.rename(staging, out)
    except BaseException:
        os.rename(old, out)
        raise
    shutil.rmtree(old, ignore_errors=True)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="Google Benchmark JSON written by triptych_bench")
    parser.add_argument("--out", help="report directory to write (replaced if it holds a report)")
    parser.add_argument("--check-out", metavar="DIR",
                        help="only check that DIR may be written, then exit")
    args = parser.parse_args(argv)
    try:
        if args.check_out:
            check_out(args.check_out)
            return 0
        if not args.json or not args.out:
            raise ReportError("--json FILE and --out DIR are both needed")
        write_report(args.json, args.out)
    except ReportError as e:
        print(f"report.py: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"report.py: {e.filename or ''}: {e.strerror}", file=sys.stderr)
        return 1
    print(f"report written to {args.out}/report.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
