#!/usr/bin/env python3
"""Turns triptych_bench's Google Benchmark JSON into a report directory.

    report.py --json results.json --out report/    write report/ (report.md, charts, the JSON)
    report.py --json results.json --peer peer.json --out report/  the same, PyTorch beside us
    report.py --check-out report/ [--peer peer.json]  only say whether report/ may be (re)written
                                                      (and peer.json read), before a long run

report.md states the machine (host, CPUs, caches, build, OpenMP threads, the GPU or that there was
none), then speedup tables: every variant against cpu_naive and against cpu_eigen_omp, each GPU
kernel as % of gpu_vendor, cpu_eigen_omp as % of OpenBLAS, ReLU bandwidth against copy bandwidth,
the GB/s of every memory-bound op (activations, bias, softmax, losses, sum) and its % of the copy
bandwidth, sum's deterministic mode against its fast one, what fusing GEMM + bias + activation
buys, what host<->device transfers cost, convolution (every variant and algorithm, forward and
forward+backward, the filter-size sweep), pooling (its time, and its GB/s as % of the copy
bandwidth), and training (a whole step of each built-in model in images/s, what a step moves
across the bus, the optimizer step alone). With --peer, the
figures of PyTorch on the same machine (the JSON of bench/pytorch_peer.py) sit beside
cpu_eigen_omp's, with the ratios: GEMM, the memory-bound ops, convolution, pooling, training.
Charts: gemm_gflops.png, gemm_speedup.png, relu_bandwidth.png, memory_bandwidth.png,
conv_sweep.png (matplotlib, Agg backend, so no display is needed).

Each row's figure is its `_median` aggregate when the run had repetitions (`triptych report`
runs three), else the median of its iterations. Rows of simulator variants (`*_on_simulator`) are
CPU timings of the CUDA simulator: they get their own section and never enter a GPU column, a
chart or a speedup; without a real GPU every GPU column says "no GPU".

The report is written to a temporary directory next to --out and renamed into place, so a failed
run never leaves a half-written report and never damages the previous one. Errors: one line on
stderr, exit status 1. Standard library and matplotlib only.
"""
import argparse
import collections
import json
import math
import os
import re
import shutil
import statistics
import sys
import tempfile

# A directory holding this file was written by this script, and may be replaced by the next run.
MARKER = ".triptych-report"
NO_GPU = "no GPU"
SECONDS_PER_UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
# The report's tables. Every benchmark row's op is declared by the run (the context's
# triptych_ops, from the op descriptions of check/description.hpp: its counter, the formula of one
# call's work, and one of these tables), so a new op appears in its table without a line here, and
# a row whose op is undeclared, or declared for a table this script does not know, stops the report
# rather than vanishing from it.
TABLES = {
    "gemm": "GEMM throughput, speedups, % of cuBLAS and of OpenBLAS, and the version ladder",
    "memory": "memory-bound ops: GB/s and % of the copy bandwidth",
    "reduction": "memory-bound, and each <op>_fast against its <op>_deterministic",
    "dense": "each dense op against its <op>_unfused twin: what fusion buys",
    "conv": "convolution per variant and algorithm, forward and forward+backward, the filter sweep",
    "pool": "pooling per variant and shape",
    "optimizer": "the optimizer step alone",
    "train": "whole training steps (train_step) and what a step moves (train_transfer)",
    "copy": "copies: the ceiling of the memory-bound ops, and host<->device transfers",
}
# Convolution rows: conv2d_<pass>_<algorithm>/<variant>/<shape name>, where pass is forward or
# forward_backward; shapes are the named benchmark shapes and sweep_r<R>.
CONV_ALGORITHMS = ("direct", "im2col", "fft", "implicit_gemm", "winograd")  # common/ops.hpp's order
CONV_OP = re.compile(r"conv2d_(forward|forward_backward)_(" + "|".join(CONV_ALGORITHMS) + ")$")
CONV_SHAPES = ("lenet_conv1", "lenet_conv2", "resnet_3x3", "large_11x11")
# Their sizes come with the run: triptych_conv_shapes in its context, {name: "N,C,H,W,K,R,S,
# STRIDE_H,STRIDE_W,PAD_H,PAD_W"} (check/description.hpp). A run recorded before it lacks them.
ConvShape = collections.namedtuple("ConvShape", "N C H W K R S stride_h stride_w pad_h pad_w")
# Training rows (bench/train.cpp): train_step/<variant>/<model> (counter `images`; a model
# "<model>+<way>" on GPU variants: the trainer's overlap and graph options),
# train_transfer/<variant>/64x784 (`bytes`); optimizer rows optimizer_step_<kind>/<variant>/<model>.
# The models in the order `triptych train` lists them.
TRAIN_MODELS = ("mlp", "lenet")
OPTIMIZER_PREFIX = "optimizer_step_"


class ReportError(Exception):
    """A problem the user can act on; printed as one line."""


# The sizes of the rows besides GEMM's (M, N, K) and the float counts n of the elementwise ops.
Matrix = collections.namedtuple("Matrix", "rows cols")  # softmax, bias, cross-entropy
DenseSize = collections.namedtuple("DenseSize", "batch inputs outputs activation")


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
    except RecursionError:
        raise ReportError(f"{path} is not JSON this report reads (nested too deeply)")
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise ReportError(f"{path} is not Google Benchmark JSON (no 'benchmarks' list)")
    context = doc.get("context")
    if not isinstance(context, dict) or "triptych_variants" not in context:
        raise ReportError(f"{path} was not written by triptych_bench (no triptych context)")
    check_context(context, path, RUN_CONTEXT)
    return doc


# The context fields a report or a lesson's table quotes, and the kind of value each must hold:
# those of a run, Google Benchmark's and every triptych_* field triptych_bench adds ("triptych_"
# stands for them all); those bench/pytorch_peer.py writes.
RUN_CONTEXT = {"num_cpus": "a whole number", "mhz_per_cpu": "a number", "date": "a string",
               "host_name": "a string", "load_avg": "a list of numbers", "triptych_": "a string"}
PEER_CONTEXT = {"threads": "a whole number", "date": "a string", "host": "a string",
                "cpu": "a string", "quick": "true or false"}


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


IS_KIND = {"a whole number": lambda v: isinstance(v, int) and not isinstance(v, bool),
           "a number": is_number, "a string": lambda v: isinstance(v, str),
           "true or false": lambda v: isinstance(v, bool),
           "a list of numbers": lambda v: isinstance(v, list) and all(map(is_number, v))}


def check_context(context, path, kinds):
    """A ReportError naming `path` and the field unless each field of `context` that `kinds`
    ({field: kind}; "NAME_" stands for every field that starts so) names holds a value of its
    kind: a report or a lesson would quote it as it stands ("x CPUs")."""
    for field, value in context.items():
        kind = kinds.get(field) or kinds.get(field.split("_")[0] + "_")
        if kind and not IS_KIND[kind](value):
            raise ReportError(f"{path}: the context's {field} is {json.dumps(value)}, not {kind}")


def split_name(run_name):
    """'gemm/cpu_naive/64x64x64/real_time' -> ('gemm', 'cpu_naive', '64x64x64')."""
    parts = [p for p in run_name.split("/") if p not in ("real_time", "manual_time")]
    if len(parts) != 3:
        raise ReportError(f"benchmark name '{run_name}' is not <op>/<variant>/<size>")
    return tuple(parts)


def described_ops(context):
    """{op: {"counter", "work", "table"}} in the run's order, from the context's triptych_ops."""
    text = context.get("triptych_ops")
    if text is None:
        raise ReportError("the run declares no ops (no triptych_ops in its context): it was "
                          "written by an older triptych_bench; run the benchmarks again")
    try:
        ops = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise ReportError(f"the context's triptych_ops is not JSON ({type(e).__name__}: {e})")
    for op, facts in ops.items():
        if not all(isinstance(facts.get(k), str) for k in ("counter", "work", "table")):
            raise ReportError(f"op '{op}' of triptych_ops lacks its counter, work or table")
        if facts["table"] not in TABLES:
            raise ReportError(f"op '{op}' belongs in table '{facts['table']}', which this report "
                              f"does not have (it has: {', '.join(TABLES)})")
        # The tables that read an op's name must be able to read it.
        if facts["table"] == "conv" and not CONV_OP.match(op):
            raise ReportError(f"conv op '{op}' is not named conv2d_<pass>_<algorithm>")
        if facts["table"] == "optimizer" and not op.startswith(OPTIMIZER_PREFIX):
            raise ReportError(f"optimizer op '{op}' is not named {OPTIMIZER_PREFIX}<kind>")
    return ops


def parse_size(op, size, table):
    """By the op's table: GEMM sizes 'MxNxK' -> (M, N, K); dense layers '64x784->256_relu' ->
    DenseSize; conv, pool, training and optimizer rows keep their names; matrices 'RxC' -> Matrix;
    every other size is a count of floats."""
    if table in ("conv", "pool", "train", "optimizer"):
        return size  # a shape's or model's name ("lenet_conv1", "64x6x28x28_w2s2", "mlp")
    try:
        if table == "gemm":
            M, N, K = (int(d) for d in size.split("x"))
            return (M, N, K)
        if table == "dense":
            shape, _, activation = size.partition("_")
            batch_inputs, _, outputs = shape.partition("->")
            batch, inputs = (int(d) for d in batch_inputs.split("x"))
            return DenseSize(batch, inputs, int(outputs), activation)
        if "x" in size:
            rows, cols = (int(d) for d in size.split("x"))
            return Matrix(rows, cols)
        return int(size)
    except ValueError:
        raise ReportError(f"benchmark size '{size}' of {op} is not a number")


def entry_seconds(entry):
    unit = entry.get("time_unit", "ns")
    if unit not in SECONDS_PER_UNIT or not isinstance(entry.get("real_time"), (int, float)):
        raise ReportError(f"benchmark '{entry.get('name')}' has no usable real_time")
    return entry["real_time"] * SECONDS_PER_UNIT[unit]


def entry_rate(entry, counter):
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
        if entry.get("run_type") == "aggregate" and "run_name" not in entry:
            # Its name carries the aggregate ("..._median"); only run_name names the row.
            raise ReportError(f"benchmark '{entry['name']}' is an aggregate without its run_name")
        run_name = entry.get("run_name", entry["name"])
        if entry.get("error_occurred"):
            skipped.append((run_name, entry.get("error_message", "")))
            continue
        if entry.get("run_type") == "aggregate":
            if entry.get("aggregate_name") == "median":
                if run_name in medians:  # a second would silently replace the first
                    raise ReportError(f"benchmark '{run_name}' has two medians")
                medians[run_name] = entry
        else:
            iterations.setdefault(run_name, []).append(entry)
    ops = described_ops(doc["context"])
    rows = {}
    for run_name in list(medians) + [n for n in iterations if n not in medians]:
        op, variant, size = split_name(run_name)
        if op not in ops:
            raise ReportError(f"benchmark '{run_name}': its op '{op}' is not declared in the run's "
                              "triptych_ops, so no table would show it")
        counter = ops[op]["counter"]
        if run_name in medians:
            seconds = entry_seconds(medians[run_name])
            rate = entry_rate(medians[run_name], counter)
        else:
            seconds = statistics.median(entry_seconds(e) for e in iterations[run_name])
            rate = statistics.median(entry_rate(e, counter) for e in iterations[run_name])
        if not (math.isfinite(seconds) and seconds > 0 and math.isfinite(rate) and rate >= 0):
            raise ReportError(f"benchmark '{run_name}': a time of {seconds!r} s and a rate of "
                              f"{rate!r} are not a measurement (times are finite and above 0)")
        key = parse_size(op, size, ops[op]["table"])
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
        self.ops = described_ops(context)
        # {op: {variant: [[number, name, is_default], ...]}} for ops with several versions.
        try:
            self.versions = json.loads(context.get("triptych_versions", "{}"))
        except json.JSONDecodeError as e:
            raise ReportError(f"the context's triptych_versions is not JSON ({e})")

    def ops_in(self, *tables):
        """The declared ops of these tables, in the run's order."""
        return [op for op, facts in self.ops.items() if facts["table"] in tables]

    def work(self, op):
        """The formula of one call's work, as the descriptions wrote it ("8n")."""
        return self.ops[op]["work"]

    def kind(self, variant):
        if variant.endswith("_on_simulator"):
            return "simulator"
        # openblas is the one row outside the registry; "gpu_tiled@3" is a version of gpu_tiled.
        return self.kinds.get(series_variant(variant), "cpu")

    def gpu_columns(self, present):
        """The GPU columns of a table: the real-GPU series that ran, in registry order; without a
        GPU, one column per GPU variant of the build (or one 'GPU' column), each saying no GPU."""
        if self.has_gpu:
            return [s for s in present if self.kind(s) == "gpu"]
        simulated = [v for v, k in self.kinds.items() if k == "simulator"]
        return simulated or ["GPU"]

    def order(self, names):
        """Series in registry order, each variant's versions ("gpu_tiled@3") right after it in
        number order, openblas right after cpu_eigen_omp, anything else at the end."""
        ranked = []
        for variant in self.kinds:
            ranked.append(variant)
            ranked += sorted((n for n in names if series_variant(n) == variant and n != variant),
                             key=version_number)
            if variant == "cpu_eigen_omp":
                ranked.append("openblas")
        if "openblas" not in ranked:
            ranked.insert(0, "openblas")
        known = [n for n in ranked if n in names]
        return known + sorted(n for n in names if n not in ranked)


def series_variant(series):
    """'gpu_tiled@3' -> 'gpu_tiled': the variant a version belongs to (see triptych versions)."""
    return series.partition("@")[0]


def version_number(series):
    """'gpu_tiled@3' -> 3; a plain variant (its default version) -> 0."""
    _, _, number = series.partition("@")
    return int(number) if number.isdigit() else 0


# --- formatting ---------------------------------------------------------------------------------

def fmt_number(x):
    """Three significant figures or so: 1234, 45.6, 7.89, 0.80, 0.012 (1.00 for 0.9996)."""
    if x >= 99.5:
        return f"{x:.0f}"
    if x >= 9.995:
        return f"{x:.1f}"
    if x >= 0.1:
        return f"{x:.2f}"
    return f"{x:.2g}"


def fmt_times(x):
    return fmt_number(x) + "×"


def fmt_percent(x):
    """12%, 4.5%, 0.12%, 0.0031%: never 0.0% for a small share that is not zero."""
    if x >= 10:
        return f"{x:.0f}%"
    return f"{x:.1f}%" if x >= 0.1 else f"{x:.2g}%"


def fmt_bytes(n):
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            value = n / scale
            return f"{value:.3g} {unit}" if value < 1000 else f"{value:.0f} {unit}"
    return f"{n} B"


def table(headers, rows):
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def size_label(size):
    """GEMM (M, N, K) -> '1024' when square; a float count -> '65536 (256 KiB)'; a matrix ->
    '4096x1000 (15.625 MiB)'; a dense layer -> '64x784->256 relu'."""
    if isinstance(size, str):
        return size
    if isinstance(size, Matrix):
        return f"{size.rows}x{size.cols} ({fmt_bytes(4 * floats(size))})"
    if isinstance(size, DenseSize):
        return f"{size.batch}x{size.inputs}->{size.outputs} {size.activation}"
    if isinstance(size, tuple):
        return str(size[0]) if len(set(size)) == 1 else "x".join(map(str, size))
    return f"{size} ({fmt_bytes(4 * size)})"


def floats(size):
    """The floats of the tensor a memory-bound op streams: n, or rows·cols."""
    return size.rows * size.cols if isinstance(size, Matrix) else size


def fmt_ms(seconds):
    """Milliseconds to three significant figures; a difference near zero as 0.0001, not 1e-04."""
    ms = seconds * 1e3
    return f"{ms:.3g}" if abs(ms) >= 0.001 else f"{ms:.4f}"


# --- GEMM ---------------------------------------------------------------------------------------

def gemm_series(rows, machine, versions=False):
    """{series: {size: Row}} for every GEMM row except the simulator's: the variants (their
    default versions) and openblas, and with `versions` the other versions too ("gpu_tiled@3")."""
    series = {}
    for (op, variant, size), row in rows.items():
        if machine.kind(variant) == "simulator" or (not versions and "@" in variant):
            continue
        if op == "gemm":
            series.setdefault(variant, {})[size] = row
    return series


def ladder_section(rows, machine, op="gemm"):
    """The GPU ladder of `op` (gpu_naive's versions, then gpu_tiled's): per version and size,
    GFLOP/s, % of gpu_vendor (cuBLAS) and the gain over the version before. The table lesson 03
    quotes (tools/lesson_tables.py copies it there)."""
    text = f"## The {op.upper()} ladder: every version on the GPU\n\n"
    ladder = []  # (series, number, variant, name, precision) in ladder order
    ceilings = {}  # precision -> (series, kernel name): gpu_vendor's version at that precision
    for variant, versions in machine.versions.get(op, {}).items():
        if variant != "gpu_vendor" and machine.kind(variant) == "cpu":
            continue
        for entry in versions:
            # [number, name, is_default, precision]; runs recorded before tensor cores have no
            # precision: fp32.
            number, name, is_default = entry[:3]
            precision = entry[3] if len(entry) > 3 else "fp32"
            series_name = variant if is_default else f"{variant}@{number}"
            if variant == "gpu_vendor":
                ceilings.setdefault(precision, (series_name, name))
            else:
                ladder.append((series_name, number, variant, name, precision))
    ceilings.setdefault("fp32", ("gpu_vendor", "cublas"))
    if not ladder:
        return text + f"This build has no GPU versions of {op}.\n"
    intro = (f"Each version is one kernel (`triptych versions --op {op}`), run by name as "
             "`<variant>@<N>` (the default version of a variant is its plain name). Each cell: "
             "GFLOP/s, then the percentage of cuBLAS (gpu_vendor) at the same size and the same "
             "input precision (FP32; a tensor-core version's TF32 or BF16 against cuBLAS's), then "
             "the gain over the version before. Medians of the repetitions.\n\n")
    series = gemm_series(rows, machine, versions=True)
    if not machine.has_gpu:
        listing = [[str(n), v, name] for _, n, v, name, _ in ladder]
        return text + intro + (f"{machine.gpu}: the ladder is measured on a real GPU only. Its "
                               "steps:\n\n" + table(["version", "variant", "kernel"], listing))
    sizes = sorted({s for name, *_ in ladder for s in series.get(name, {})
                    if len(set(s)) == 1 and s[0] >= 1024}, key=lambda s: s[0])
    if not sizes:
        sizes = sorted({s for name, *_ in ladder for s in series.get(name, {})
                        if len(set(s)) == 1}, key=lambda s: s[0])
    body, previous = [], None
    for name, number, variant, kernel, precision in ladder:
        vendor = series.get(ceilings[precision][0], {}) if precision in ceilings else {}
        cells = []
        for size in sizes:
            row = series.get(name, {}).get(size)
            if not row:
                cells.append("—")
                continue
            parts = [fmt_percent(100 * row.rate / vendor[size].rate)] if size in vendor else []
            before = series.get(previous, {}).get(size) if previous else None
            if before:
                parts.append(fmt_times(row.rate / before.rate))
            cells.append(fmt_number(row.rate / 1e9) + (f" ({', '.join(parts)})" if parts else ""))
        body.append([str(number), f"{variant}@{number}", kernel] + cells)
        previous = name
    for precision, (name, kernel) in ceilings.items():
        vendor = series.get(name, {})
        if vendor:
            body.append(["—", name, f"cuBLAS ({kernel})"] + [
                fmt_number(vendor[s].rate / 1e9) if s in vendor else "—" for s in sizes])
    return text + intro + table(["version", "run as", "kernel"] + [f"{s[0]}³" for s in sizes], body)


def gemm_table(series, machine, sizes, cell, without=None):
    """One row per size; a CPU column per CPU series (except `without`), then the GPU columns.
    `cell(name, size)` gives a measured cell or None (shown as '—')."""
    names = [n for n in machine.order(series) if n != without]
    cpu = [n for n in names if machine.kind(n) == "cpu"]
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


def gemm_sections(series, machine, peer=None):
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
    out.append(openblas_section(series, machine, sizes, peer))
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


def openblas_section(series, machine, sizes, peer=None):
    """cpu_eigen_omp against OpenBLAS, and against PyTorch where the peer timed GEMM."""
    blas = machine.context.get("triptych_eigen_blas", "unknown")
    text = ("## cpu_eigen_omp as % of OpenBLAS\n\n"
            f"Eigen over BLAS (EIGEN_USE_BLAS, CMake option TRIPTYCH_EIGEN_BLAS): **{blas}**. "
            "With it on, Eigen's product calls OpenBLAS's sgemm and should be close to 100%; "
            "off, it is Eigen's own blocked kernel (lesson 02).\n\n")
    if "cpu_eigen_omp" not in series or "openblas" not in series:
        return text + "cpu_eigen_omp and openblas were not both run.\n"
    with_peer = peer is not None and any(op == "gemm" for op, _ in peer["seconds"])
    if with_peer:
        text += (f"PyTorch (CPU): torch.mm at the same sizes, {peer['header']}; its BLAS is "
                 "whichever its build links.\n\n")
    rows = []
    for size in sizes:
        eigen, blas_row = series["cpu_eigen_omp"].get(size), series["openblas"].get(size)
        if eigen and blas_row:
            cells = [size_label(size), fmt_number(eigen.rate / 1e9),
                     fmt_number(blas_row.rate / 1e9),
                     fmt_percent(100 * eigen.rate / blas_row.rate)]
            if with_peer:
                theirs = peer_seconds(peer, "gemm", size)
                cells += [fmt_number(2 * math.prod(size) / theirs / 1e9),
                          fmt_percent(100 * theirs / eigen.seconds)] if theirs else ["—", "—"]
            rows.append(cells)
    peer_headers = ["PyTorch (CPU) GFLOP/s", "cpu_eigen_omp / PyTorch (CPU)"] if with_peer else []
    return text + table(["N (M=N=K)", "cpu_eigen_omp GFLOP/s", "openblas GFLOP/s",
                         "cpu_eigen_omp / openblas"] + peer_headers, rows)


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


# --- every memory-bound op, sum's two modes, the fused dense layer ------------------------------

def by_variant(rows, machine, op):
    """{variant: {size: Row}} of one op, simulator rows left out."""
    found = {}
    for (o, v, size), row in rows.items():
        if o == op and machine.kind(v) != "simulator":
            found.setdefault(v, {})[size] = row
    return found


def variant_rows(machine, names):
    """The variants a table gives rows to, as (variant, measured): the CPU ones among `names`,
    then the GPU ones; without a GPU, every GPU variant of the build, measured False (its cells
    say no GPU)."""
    cpu = [v for v in names if machine.kind(v) == "cpu"]
    return [(v, True) for v in cpu] + [(v, machine.has_gpu) for v in machine.gpu_columns(names)]


def copy_rows(rows, where):
    """{floats: Row} of copy/<where>: 'host' or 'device'."""
    return {n: r for (op, v, n), r in rows.items() if op == "copy" and v == where}


def copies_on(rows, machine, variant):
    """The copies on the variant's device: copy/device on a GPU, else copy/host."""
    return copy_rows(rows, "device" if machine.kind(variant) == "gpu" else "host")


def memory_bound_sections(rows, machine):
    ops = {op: by_variant(rows, machine, op) for op in machine.ops_in("memory", "reduction")}
    ops = {op: found for op, found in ops.items() if found}
    if not ops:
        return ["## Memory-bound ops: GB/s\n\nNo memory-bound rows were run.\n"]
    names = machine.order({v for found in ops.values() for v in found})
    columns = variant_rows(machine, names)
    host, device = copy_rows(rows, "host"), copy_rows(rows, "device")
    ceilings = {v: copies_on(rows, machine, v) for v, _ in columns}
    gbs_body, percent_body = [], []
    for op, found in ops.items():
        sizes = sorted({s for by_size in found.values() for s in by_size},
                       key=lambda s: (floats(s), s))
        for size in sizes:
            n = floats(size)
            gbs, percent = [], []
            for v, measured in columns:
                row, copy = found.get(v, {}).get(size), ceilings[v].get(n)
                if not measured:
                    gbs.append(NO_GPU)
                    percent.append(NO_GPU)
                    continue
                gbs.append(fmt_number(row.rate / 1e9) if row else "—")
                percent.append(fmt_percent(100 * row.rate / copy.rate) if row and copy else "—")
            gbs.append(fmt_number(host[n].rate / 1e9) if n in host else "—")
            gbs.append((fmt_number(device[n].rate / 1e9) if n in device else "—")
                       if machine.has_gpu else NO_GPU)
            gbs_body.append([op, size_label(size), machine.work(op)] + gbs)
            percent_body.append([op, size_label(size)] + percent)
    variants = [v for v, _ in columns]
    gbs_text = ("## Memory-bound ops: GB/s\n\n"
                "Activations, bias, softmax, losses and sum do a few operations per element they "
                "move, so memory bandwidth bounds them. GB/s counts the bytes each call must read "
                "and write, every input once and every output once (n: the floats of the tensor; "
                "rows·cols: of the matrix), per second of wall-clock time, median of the "
                "repetitions; re-reading a row that is still in cache costs nothing extra, and a "
                "variant that goes back to memory for it shows a lower figure. The copy columns "
                "are the ceiling: a plain copy of the same number of floats (copy/host: memcpy "
                "with the same OpenMP threads; copy/device: cudaMemcpy on the GPU). '—': not run "
                "at that size.\n\n"
                + table(["op", "size", "bytes per call"] + variants + ["copy/host", "copy/device"],
                        gbs_body))
    percent_text = ("## Memory-bound ops: % of copy bandwidth\n\n"
                    "Each op's GB/s as a percentage of the copy of the same size on the same "
                    "device: how much of the machine's memory bandwidth it uses. Well below 100%: "
                    "arithmetic (an exponential per element), a second trip to memory or poor "
                    "parallelism holds it back. Above 100%: it reads more than it writes (sum "
                    "reads 4n bytes and writes one number), its data stayed in a cache that the "
                    "copy of the same size also uses, or both are so small that a call's fixed "
                    "cost (a GPU launch and synchronisation: about 10 µs) sets the time rather "
                    "than the bytes; the largest sizes are the honest measure.\n\n"
                    + table(["op", "size"] + variants, percent_body))
    return [gbs_text, percent_text]


def memory_bound_peer_section(rows, machine, peer):
    """cpu_eigen_omp's memory-bound rows beside PyTorch's times of the same op and size; nothing
    when the peer timed none of them."""
    if not peer:
        return ""
    body = []
    for op in machine.ops_in("memory", "reduction"):
        ours = by_variant(rows, machine, op).get("cpu_eigen_omp", {})
        for size in sorted(ours, key=lambda s: (floats(s), s)):
            row, theirs = ours[size], peer_seconds(peer, op, size)
            if theirs:
                moved = row.rate * row.seconds  # the bytes of one call, as our counter counts
                body.append([op, size_label(size), fmt_number(row.rate / 1e9),
                             fmt_number(moved / theirs / 1e9), fmt_ms(row.seconds),
                             fmt_ms(theirs), fmt_times(theirs / row.seconds)])
    if not body:
        return ""
    return ("## Memory-bound ops: cpu_eigen_omp against PyTorch\n\n"
            f"{peer['header']}. Its activations write into an output allocated once, as ours "
            "do (bench/pytorch_peer.py names the call of each); its softmax (torch.softmax over "
            "each row) allocates its output on every call. GB/s counts the same bytes per call for both. "
            "'speed ratio' is PyTorch's time over ours: above 1× we are faster.\n\n"
            + table(["op", "size", "cpu_eigen_omp GB/s", "PyTorch GB/s", "ours ms", "PyTorch ms",
                     "speed ratio"], body))


def mode_pairs(machine):
    """The reductions declared in both modes: [(base, deterministic op, fast op)]."""
    ops = machine.ops_in("reduction")
    return [(op[:-len("_deterministic")], op, op[:-len("_deterministic")] + "_fast")
            for op in ops if op.endswith("_deterministic")
            and op[:-len("_deterministic")] + "_fast" in ops]


def sum_sections(rows, machine):
    return [mode_section(rows, machine, *pair) for pair in mode_pairs(machine)]


def mode_section(rows, machine, base, deterministic_op, fast_op):
    deterministic = by_variant(rows, machine, deterministic_op)
    fast = by_variant(rows, machine, fast_op)
    text = f"## {base}: deterministic against fast\n\n"
    names = machine.order(set(deterministic) | set(fast))
    if not names:
        return text + f"The {base} rows were not run.\n"
    body = []
    for v, measured in variant_rows(machine, names):
        if not measured:
            body.append([v] + [NO_GPU] * 4)
            continue
        ran_det, ran_fast = deterministic.get(v, {}), fast.get(v, {})
        for n in sorted(set(ran_det) | set(ran_fast)):
            d, f = ran_det.get(n), ran_fast.get(n)
            body.append([v, size_label(n), fmt_number(d.rate / 1e9) if d else "—",
                         fmt_number(f.rate / 1e9) if f else "—",
                         fmt_times(f.rate / d.rate) if d and f else "—"])
    return text + (f"GB/s of {base} ({machine.work(deterministic_op)} bytes) in each mode. "
                   "deterministic adds "
                   "in a fixed order, so the same input gives the same bits on every run (the "
                   "losses use it); fast adds in whatever order is quickest (atomics on a GPU), "
                   "and its last bits may differ from run to run. 'fast / deterministic': how "
                   "many times faster the fast mode is; a variant that adds in the same order in "
                   "both modes shows about 1×.\n\n"
                   + table(["variant", "floats", "deterministic GB/s", "fast GB/s",
                            "fast / deterministic"], body))


def fusion_sections(rows, machine):
    """One table per dense op declared with its <op>_unfused twin."""
    ops = machine.ops_in("dense")
    return [fusion_section(rows, machine, op, op + "_unfused") for op in ops
            if op + "_unfused" in ops]


def fusion_section(rows, machine, fused_op, unfused_op):
    fused, unfused = by_variant(rows, machine, fused_op), by_variant(rows, machine, unfused_op)
    text = f"## What fusion buys: {fused_op} fused against unfused\n\n"
    names = machine.order(set(fused) | set(unfused))
    if not names:
        return text + f"The {fused_op} rows were not run.\n"
    body = []
    for v, measured in variant_rows(machine, names):
        if not measured:
            body.append([v] + [NO_GPU] * 9)
            continue
        copies = copies_on(rows, machine, v)
        shapes = sorted(set(fused.get(v, {})) | set(unfused.get(v, {})),
                        key=lambda s: (s.batch * s.inputs * s.outputs, s))
        for shape in shapes:
            f, u = fused.get(v, {}).get(shape), unfused.get(v, {}).get(shape)
            # bias_add reads and writes Y, then the activation reads and writes it again.
            not_moved = 4 * 4 * shape.batch * shape.outputs
            copy = nearest(copies, shape.batch * shape.outputs)
            saved = u.seconds - f.seconds if f and u else None
            body.append([v, size_label(shape),
                         fmt_ms(f.seconds) if f else "—", fmt_ms(u.seconds) if u else "—",
                         fmt_number(f.rate / 1e9) if f else "—",
                         fmt_number(u.rate / 1e9) if u else "—",
                         f"{fmt_ms(saved)} ({fmt_percent(100 * saved / u.seconds)})"
                         if saved is not None else "—",
                         fmt_times(u.seconds / f.seconds) if f and u else "—",
                         fmt_bytes(not_moved),
                         fmt_ms(not_moved / copy.rate) if copy else "—"])
    return text + ("Y = act(X·Wᵀ + b) with X (batch, in), W (out, in): dense_forward applies the "
                   "bias and the activation before its single store of Y where the variant has a "
                   "fused kernel; dense_forward_unfused runs gemm, bias_add and the activation "
                   "one after the other. The unfused path writes Y, then reads it back and writes "
                   "it twice more: 16·batch·out bytes that fusion does not move. 'at copy "
                   "bandwidth': the time those bytes take at the copy bandwidth measured on the "
                   "same device (nearest copy size to Y), what fusion should save if memory "
                   "traffic were all it saved; fusion also saves two passes' launches and thread "
                   "start-ups. GFLOP/s counts the GEMM's 2·batch·in·out for both rows. A variant "
                   "without a fused kernel runs the same three steps in both rows (speedup about "
                   "1×).\n\n"
                   + table(["variant", "shape", "fused ms", "unfused ms", "fused GFLOP/s",
                            "unfused GFLOP/s", "time saved ms (%)", "fusion speedup",
                            "bytes not moved", "at copy bandwidth ms"], body))


def conv_shapes_of(context):
    """{name: ConvShape} of the run's named conv shapes; {} for a run that did not record them."""
    text = context.get("triptych_conv_shapes")
    if text is None:
        return {}
    try:
        shapes = {name: ConvShape(*(int(d) for d in dims.split(",")))
                  for name, dims in json.loads(text).items()}
    except (ValueError, TypeError, AttributeError):
        raise ReportError(f"triptych_conv_shapes in the run's context is not "
                          f"{{name: 'N,C,H,W,K,R,S,STRIDE_H,STRIDE_W,PAD_H,PAD_W'}}: {text!r}")
    return shapes


def conv_output_size(s):
    """(P, Q) of a ConvShape, as common/ops.hpp computes them."""
    return ((s.H + 2 * s.pad_h - s.R) // s.stride_h + 1,
            (s.W + 2 * s.pad_w - s.S) // s.stride_w + 1)


def describe_conv_shape(s):
    """'N64 C1 H28 W28 K6 R5 S5 stride 1,1 pad 2,2', as Conv2dShape::str() says it."""
    return (f"N{s.N} C{s.C} H{s.H} W{s.W} K{s.K} R{s.R} S{s.S} stride {s.stride_h},{s.stride_w} "
            f"pad {s.pad_h},{s.pad_w}")


def transfer_section(rows, series, machine):
    text = "## Host↔device transfers\n\n"
    if not machine.has_gpu:
        return text + f"{machine.gpu}: transfers are measured on a real GPU only.\n"
    by_kind = transfer_rows(rows)
    kinds = tuple(by_kind)
    sizes = sorted({n for by_size in by_kind.values() for n in by_size})
    if not sizes:
        return text + "The copy rows were not run.\n"
    body = [[fmt_bytes(4 * n)] + [fmt_number(by_kind[k][n].rate / 1e9) if n in by_kind[k]
                                  else "—" for k in kinds] for n in sizes]
    text += ("GB/s of one cudaMemcpy between host and device. Pageable memory is staged by the "
             "driver through a pinned buffer; pinned (page-locked) memory is copied directly.\n\n"
             + table(["bytes"] + [f"{k} GB/s" for k in kinds], body))
    text += gemm_transfer_table(by_kind, series, machine)
    for op, what in (("relu_forward", RELU_TRANSFERS), ("softmax_forward", SOFTMAX_TRANSFERS),
                     ("dense_forward", DENSE_TRANSFERS)):
        text += op_transfer_table(by_kind, by_variant(rows, machine, op), machine, what)
    text += conv_transfer_table(rows, by_kind, machine)
    text += other_transfers_table(rows, by_kind, machine)
    return text


def conv_transfer_table(rows, by_kind, machine):
    """op_transfer_table for a convolution's forward pass, each variant at its fastest algorithm
    for the shape: x, the filters and the bias up and y down."""
    shapes = conv_shapes_of(machine.context)
    best, algorithm = {}, {}  # {variant: {shape: Row}}, {(variant, shape): algorithm}
    for (v, a), found in conv_rows(rows, machine).items():
        for (kind, name), row in found.items():
            if kind == "forward" and name in shapes and (
                    name not in best.get(v, {}) or row.seconds < best[v][name].seconds):
                best.setdefault(v, {})[name] = row
                algorithm[(v, name)] = a
    reference = transfer_reference(best, machine)

    def floats(name):
        s = shapes[name]
        P, Q = conv_output_size(s)
        return s.N * s.C * s.H * s.W + s.K * s.C * s.R * s.S + s.K, s.N * s.K * P * Q

    what = {
        "title": "Transfer cost of one convolution", "size_heading": "shape (algorithm)",
        "label": lambda name: f"{name} ({algorithm[(reference, name)]})",
        "order": lambda name: sum(floats(name)),
        "seconds": lambda name, by_kind, memory: transfer_seconds(by_kind, memory,
                                                                  *floats(name)),
        "prose": lambda reference: (
            f"conv2d forward: x, the filters and the bias up and y down, next to one {reference} "
            "call at its fastest algorithm for the shape (in brackets), and its speedup over "
            "cpu_eigen_omp's fastest, without and with those transfers. A convolution uses each input "
            "K·R·S times (less at the borders), so its work grows faster than its trips, as a "
            "GEMM's does: compare the LeNet layers' share with the larger shapes'."),
    }
    return op_transfer_table(by_kind, best, machine, what) if reference else ""


# What one call of each other op must move across the bus: (what crosses, up floats, down floats)
# for its size (n floats, a Matrix, or a pooling shape's name), or None for a size it does not
# take. An op absent here (the optimizers' steps, whose rows name a model) gets no row.
POOL_SHAPE = re.compile(r"(\d+)x(\d+)x(\d+)x(\d+)_w(\d+)s(\d+)$")


def on_floats(what, up, down):
    """An op on n floats moving up(n) floats up and down(n) down."""
    return lambda n: (what, up(n), down(n)) if isinstance(n, int) else None


def on_matrix(what, up, down):
    """An op on a rows x cols matrix m moving up(m) floats up and down(m) down."""
    return lambda m: (what, up(m), down(m)) if isinstance(m, Matrix) else None


def on_pool_shape(what, up, down):
    """A pooling pass moving up(x, y) floats up and down(x, y) down, where x is N·C·H·W and y
    N·C·P·Q of the shape named N×C×H×W_w<window>s<stride>."""
    def moved(name):
        match = POOL_SHAPE.match(name) if isinstance(name, str) else None
        if not match:
            return None
        N, C, H, W, window, stride = (int(g) for g in match.groups())
        x, y = N * C * H * W, N * C * ((H - window) // stride + 1) * ((W - window) // stride + 1)
        return what, up(x, y), down(x, y)
    return moved


def same(n):
    return n


OTHER_TRANSFERS = {
    **{f"{a}_forward": on_floats("x up; y down", same, same) for a in ("sigmoid", "tanh", "gelu")},
    # The backward pass reads x (ReLU, GELU) or y (sigmoid, tanh), and dy.
    **{f"{a}_backward": on_floats(f"{given}, dy up; dx down", lambda n: 2 * n, same)
       for a, given in (("relu", "x"), ("sigmoid", "y"), ("tanh", "y"), ("gelu", "x"))},
    "bias_add": on_matrix("x, bias up; y down", lambda m: floats(m) + m.cols, floats),
    "bias_backward": on_matrix("dy up; dbias down", floats, lambda m: m.cols),
    "softmax_backward": on_matrix("y, dy up; dx down", lambda m: 2 * floats(m), floats),
    "mse_loss": on_floats("prediction, target up; gradient, loss down", lambda n: 2 * n,
                          lambda n: n + 1),
    "softmax_cross_entropy": on_matrix("logits, labels up; gradient, loss down",
                                       lambda m: floats(m) + m.rows, lambda m: floats(m) + 1),
    "sum_deterministic": on_floats("x up; the sum down", same, lambda n: 1),
    "sum_fast": on_floats("x up; the sum down", same, lambda n: 1),
    "max_pool2d_forward": on_pool_shape("x up; y down (the argmax stays)", lambda x, y: x,
                                        lambda x, y: y),
    "max_pool2d_backward": on_pool_shape("dy, argmax up; dx down", lambda x, y: 2 * y,
                                         lambda x, y: x),
    "avg_pool2d_forward": on_pool_shape("x up; y down", lambda x, y: x, lambda x, y: y),
    "avg_pool2d_backward": on_pool_shape("dy up; dx down", lambda x, y: y, lambda x, y: x),
}


def other_transfers_table(rows, by_kind, machine):
    """The transfer cost of every op in OTHER_TRANSFERS, one row each, at the largest size that
    both its GPU variant (transfer_reference's) and cpu_eigen_omp ran, else the GPU's largest."""
    if not by_kind["h2d_pinned"] or not by_kind["d2h_pinned"]:
        return ""
    body = []
    for op, moves in OTHER_TRANSFERS.items():
        series = by_variant(rows, machine, op)
        reference = transfer_reference(series, machine)
        moved = {size: moves(size) for size in series.get(reference, {})}
        moved = {size: m for size, m in moved.items() if m}
        if not moved:
            continue
        cpu = series.get("cpu_eigen_omp", {})
        size = max([size for size in moved if size in cpu] or moved,
                   key=lambda size: moved[size][1] + moved[size][2])
        what, up, down = moved[size]
        cells = transfer_cells(series[reference][size], cpu.get(size), by_kind,
                               lambda memory: transfer_seconds(by_kind, memory, up, down))
        if cells:
            body.append([op, size_label(size), what, reference] + cells)
    if not body:
        return ""
    return ("\n### Transfer cost of the other ops\n\n"
            "Every other op, at the largest size that both its GPU variant (the vendor's where it "
            "ran, else the last) and cpu_eigen_omp ran: what one call must move across the bus, "
            "priced as above. Where 'with transfers' falls below 1×, the trips alone outlast "
            "cpu_eigen_omp's whole call: such an op pays on a GPU only as one step of many whose "
            "data stays on the device, as in a training step.\n\n"
            + table(["op", "size", "crosses", "GPU variant", "GPU ms", "transfers ms (pinned)",
                     "transfers ms (pageable)", "transfers share (pinned)",
                     "speedup over cpu_eigen_omp", "with transfers (pinned)"], body))


def transfer_rows(rows):
    """{"h2d_pageable" | "h2d_pinned" | "d2h_pageable" | "d2h_pinned": {floats: Row}}."""
    kinds = ("h2d_pageable", "h2d_pinned", "d2h_pageable", "d2h_pinned")
    return {k: {n: r for (op, v, n), r in rows.items() if op == "copy" and v == k} for k in kinds}


def transfer_reference(series, machine):
    """The GPU op whose transfers are priced: the vendor's where it ran, else the last GPU
    variant."""
    kernels = machine.gpu_columns(machine.order(series))
    return "gpu_vendor" if "gpu_vendor" in kernels else (kernels[-1] if kernels else None)


def gemm_transfer_seconds(size, by_kind, memory):
    """Uploading A and B and downloading C of a GEMM of `size` (M, N, K), or None."""
    M, N, K = size
    return transfer_seconds(by_kind, memory, M * K + K * N, M * N)


def op_transfer_table(by_kind, series, machine, what):
    """What moving one call's operands costs next to the call itself, and what is left of the
    GPU's speedup over cpu_eigen_omp once they are counted. `what`: title, size_heading,
    label(size), order(size) (the rows' sort key), seconds(size, by_kind, memory), prose."""
    reference = transfer_reference(series, machine)
    if reference is None or not by_kind["h2d_pinned"] or not by_kind["d2h_pinned"]:
        return ""
    cpu = series.get("cpu_eigen_omp", {})
    body = []
    for size, row in sorted(series[reference].items(), key=lambda kv: what["order"](kv[0])):
        cells = transfer_cells(row, cpu.get(size), by_kind,
                               lambda memory: what["seconds"](size, by_kind, memory))
        if cells:
            body.append([what["label"](size)] + cells)
    if not body:
        return ""
    return (f"\n### {what['title']}\n\n" + what["prose"](reference) + "\n\n"
            + table([what["size_heading"], f"{reference} ms", "transfers ms (pinned)",
                     "transfers ms (pageable)", "transfers share (pinned)",
                     "speedup over cpu_eigen_omp", "with transfers (pinned)"], body))


def transfer_cells(row, cpu_row, by_kind, seconds):
    """A transfer table's cells for one call `row` (cpu_row: cpu_eigen_omp's of the same size, or
    None); seconds(memory) prices its trips, "pinned" or "pageable". None if nothing prices
    them."""
    pinned = seconds("pinned")
    if pinned is None:
        return None
    pageable = seconds("pageable")
    on_cpu = cpu_row.seconds if cpu_row else None
    return [fmt_ms(row.seconds), fmt_ms(pinned), fmt_ms(pageable) if pageable else "—",
            fmt_percent(100 * pinned / (pinned + row.seconds)),
            fmt_times(on_cpu / row.seconds) if on_cpu else "—",
            fmt_times(on_cpu / (row.seconds + pinned)) if on_cpu else "—"]


GEMM_TRANSFERS = {
    "title": "Transfer cost of one GEMM", "size_heading": "N (M=N=K)", "label": size_label,
    "order": math.prod, "seconds": gemm_transfer_seconds,
    "prose": lambda reference: (
        "Uploading A and B and downloading C, at the bandwidth measured for the nearest copy "
        f"size, next to one {reference} call, and {reference}'s speedup over cpu_eigen_omp "
        "without and with those transfers (pinned; gemm_speedup.png draws both). A GEMM pays for "
        "its transfers only if its operands stay on the device for many calls, or if the GEMM "
        "is large enough: its work grows as N³, its transfers as N²."),
}

RELU_TRANSFERS = {
    "title": "Transfer cost of one ReLU", "size_heading": "floats", "label": size_label,
    "order": floats, "seconds": lambda size, by_kind, memory: transfer_seconds(by_kind, memory,
                                                                              size, size),
    "prose": lambda reference: (
        f"The same for relu_forward: x up and y down, next to one {reference} call. ReLU does "
        "one comparison for every 8 bytes it moves, so once its trips count, its speed on the "
        "GPU is the bus's: it can beat the CPU's own pass over the same bytes only where the "
        "bus is faster than the CPU's memory. An elementwise op pays on a GPU as one layer of "
        "many whose data stays there."),
}


SOFTMAX_TRANSFERS = {
    "title": "Transfer cost of one softmax", "size_heading": "rows x columns", "label": size_label,
    "order": floats, "seconds": lambda size, by_kind, memory: transfer_seconds(
        by_kind, memory, floats(size), floats(size)),
    "prose": lambda reference: (
        f"softmax_forward: the logits up and the probabilities down, next to one {reference} "
        "call. It moves each float once each way, as ReLU does, with more arithmetic on it (a "
        "maximum, an exponential, a sum and a division): set its transfers' share beside "
        "ReLU's."),
}

DENSE_TRANSFERS = {
    "title": "Transfer cost of one dense layer", "size_heading": "batch x inputs -> outputs",
    "label": size_label, "order": lambda size: size.batch * size.inputs * size.outputs,
    "seconds": lambda size, by_kind, memory: transfer_seconds(
        by_kind, memory, size.batch * size.inputs + size.inputs * size.outputs + size.outputs,
        size.batch * size.outputs),
    "prose": lambda reference: (
        f"dense_forward: x, the weights and the bias up and y down, next to one {reference} "
        "call. Its work grows as batch·inputs·outputs; the weights' trip, the largest part here, "
        "as inputs·outputs alone, and in training the weights stay on the device from step to "
        "step: only x and y would cross."),
}


def gemm_transfer_table(by_kind, series, machine):
    return op_transfer_table(by_kind, series, machine, GEMM_TRANSFERS)


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
        ("CPU", c.get("triptych_cpu", "?")),
        ("CPUs", f"{c.get('num_cpus', '?')} × {c.get('mhz_per_cpu', '?')} MHz"),
        ("caches", caches or "?"),
        ("OpenMP threads", c.get("triptych_omp_threads", "?")),
        ("OpenBLAS threads", c.get("triptych_openblas_threads", "?")),
        ("build", f"{c.get('triptych_build', '?')} ({c.get('triptych_build_type', '?')}), "
                  f"{c.get('triptych_compiler', '?')}"),
        ("Eigen over BLAS", c.get("triptych_eigen_blas", "?")),
        ("GPU", machine.gpu),
    ]
    if "triptych_cpu_round_trip" in c:  # runs before it have none
        facts.insert(5, ("a cache line's round trip",
                         f"{c['triptych_cpu_round_trip']}, as the run started (tens of ns where "
                         "two cores share an L3 cache, hundreds where they do not)"))
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


# --- the PyTorch peer ---------------------------------------------------------------------------

# bench/pytorch_peer.py's JSON (the schema is in its docstring). A result pairs with our rows of the
# same op and size; conv2d_forward and conv2d_forward_backward with those of every algorithm, and
# train_epoch with train_step.
PEER_COMMAND = "/usr/bin/python3 bench/pytorch_peer.py"


def json_or_none(path, what):
    """The JSON document in `path`, or None if it holds no JSON (the caller says what it should
    have held); a file that cannot be read is a ReportError naming `what`."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise ReportError(f"cannot read {what} {path}: {e.strerror}")
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return None


def load_peer(path):
    """{'header': 'PyTorch 1.13.0a0, 2 threads', 'seconds': {(op, size name): seconds},
    'train': {model: [(images/s, test accuracy) of each epoch, in order]}} from the peer's JSON."""
    return peer_figures(json_or_none(path, "the peer figures"), path)


def peer_figures(doc, path):
    """load_peer's figures from the peer's JSON document `doc`, read from `path`."""
    if not isinstance(doc, dict) or not isinstance(doc.get("peer"), str) or \
            not isinstance(doc.get("context"), dict) or not isinstance(doc.get("results"), list):
        raise ReportError(f"{path} is not the JSON of bench/pytorch_peer.py: write it with "
                          f"`{PEER_COMMAND} conv pool --out peer.json`")
    if not doc["results"]:
        raise ReportError(f"{path} holds no results of bench/pytorch_peer.py")
    context = doc["context"]
    check_context(context, path, PEER_CONTEXT)
    quick = ", a quick run (small sizes: a smoke test)" if context.get("quick") else ""
    peer = {"header": f"{doc['peer']}, {context.get('threads', '?')} threads{quick}",
            "seconds": {}, "train": {}}
    epochs = {}  # model -> [(epoch, images/s, test accuracy)]
    for i, result in enumerate(doc["results"], 1):
        try:
            op, size = str(result["op"]), str(result["size"])
            if op == "train_epoch":
                epochs.setdefault(size, []).append((int(result["epoch"]),
                                                    float(result["images_per_second"]),
                                                    float(result["test_accuracy"])))
            else:
                peer["seconds"][(op, size)] = float(result["seconds"])
        except (KeyError, TypeError, ValueError):
            raise ReportError(f"{path}: result {i} is not an op and size with its figures")
    peer["train"] = {model: [(rate, accuracy) for _, rate, accuracy in sorted(found)]
                     for model, found in epochs.items()}
    return peer


def peer_seconds(peer, op, size):
    """PyTorch's time of one case, or None: `size` as our rows' keys hold it."""
    if isinstance(size, Matrix):
        name = f"{size.rows}x{size.cols}"
    elif isinstance(size, tuple):
        name = "x".join(map(str, size))  # GEMM's (M, N, K)
    else:
        name = str(size)
    return peer["seconds"].get((op, name))


def peer_ms(peer, op, size):
    """PyTorch's time of one case in ms, or '—' where it has none."""
    seconds = peer_seconds(peer, op, size)
    return fmt_ms(seconds) if seconds else "—"


def no_peer(what, groups):
    """How to get the PyTorch figures a section lacks."""
    return (f"No PyTorch {what}: run `{PEER_COMMAND} {groups} --threads N --out peer.json` on "
            "this machine (N: the OpenMP threads above; PyTorch comes with `tools/install-deps.sh "
            "--peer`), then `triptych report --peer peer.json`.\n")


# --- convolution and pooling --------------------------------------------------------------------

def conv_rows(rows, machine):
    """{(variant, algorithm): {(pass, shape): Row}} for the conv rows that are not simulator
    rows."""
    found = {}
    for (op, v, size), r in rows.items():
        m = CONV_OP.match(op)
        if m and machine.kind(v) != "simulator":
            found.setdefault((v, m[2]), {})[(m[1], size)] = r
    return found


def conv_sections(rows, machine, peer):
    found = conv_rows(rows, machine)
    text = "## Convolution\n\n"
    if not found:
        return [text + "The conv2d rows were not run.\n"]
    keys = sorted(found, key=lambda k: (machine.order(set(v for v, _ in found)).index(k[0]), k[1]))
    shapes = [n for n in CONV_SHAPES if any(("forward", n) in found[k] for k in keys)]
    body = []
    for v, algorithm in keys:
        for name in shapes:
            f = found[(v, algorithm)].get(("forward", name))
            fb = found[(v, algorithm)].get(("forward_backward", name))
            if not f and not fb:
                continue
            body.append([v, algorithm, name, fmt_ms(f.seconds) if f else "—",
                         fmt_number(f.rate / 1e9) if f else "—", fmt_ms(fb.seconds) if fb else "—"])
    if peer:
        for name in shapes:
            fwd, both = (peer_ms(peer, op, name) for op in ("conv2d_forward",
                                                             "conv2d_forward_backward"))
            if (fwd, both) != ("—", "—"):
                body.append(["PyTorch (CPU)", "its own", name, fwd, "—", both])
    sizes = conv_shapes_of(machine.context)
    named = [f"{n} {describe_conv_shape(sizes[n])}" for n in shapes if n in sizes]
    named = (f" ({'; '.join(named)})" if named else
             "" if sizes or not shapes else
             " (the run did not record their sizes: conv_shapes in check/conv_checks.cpp lists "
             "them)")
    parts = [text + (f"conv2d on the benchmark shapes{named}. GFLOP/s counts the direct "
                     "algorithm's 2·N·K·P·Q·C·R·S for every algorithm, so it compares time for "
                     "the same result. forward+backward is one forward, "
                     "backward_data and backward_weights, as PyTorch's autograd figure.\n\n"
                     + table(["variant", "algorithm", "shape", "forward ms", "forward GFLOP/s",
                              "forward+backward ms"], body))]
    parts.append(conv_peer_section(found, shapes, peer))
    return parts


def best_cpu_conv(found, name, kind):
    """cpu_eigen_omp's fastest algorithm for one shape and pass: (algorithm, Row) or None."""
    candidates = [(a, r[(kind, name)]) for (v, a), r in found.items()
                  if v == "cpu_eigen_omp" and (kind, name) in r]
    return min(candidates, key=lambda c: c[1].seconds, default=None)


def conv_peer_section(found, shapes, peer):
    text = "### cpu_eigen_omp against PyTorch on the CPU\n\n"
    if not peer:
        return text + no_peer("figures", "conv pool")
    body = []
    for name in shapes:
        for kind in ("forward", "forward_backward"):
            theirs = peer_seconds(peer, f"conv2d_{kind}", name)
            best = best_cpu_conv(found, name, kind)
            if theirs and best:
                algorithm, ours = best
                body.append([name, kind.replace("_", "+"), algorithm, fmt_ms(ours.seconds),
                             fmt_ms(theirs), fmt_times(theirs / ours.seconds)])
    return text + (f"{peer['header']}. 'speed ratio' is PyTorch's time over ours: above "
                   "1× we are faster. Ours is cpu_eigen_omp's fastest algorithm for the shape.\n\n"
                   + table(["shape", "pass", "our algorithm", "ours ms", "PyTorch ms",
                            "speed ratio"], body))


def pool_section(rows, machine, peer):
    text = "## Pooling\n\n"
    pool_ops = machine.ops_in("pool")
    found = {}
    for (op, v, size), r in rows.items():
        if op in pool_ops and machine.kind(v) != "simulator":
            found.setdefault((v, size), {})[op] = r
    if not found:
        return text + "The pooling rows were not run.\n"
    names = machine.order({v for v, _ in found})
    body = []
    for v in names:
        for size in sorted(n for w, n in found if w == v):
            measured = found[(v, size)]
            body.append([v, size] + [fmt_ms(measured[op].seconds) if op in measured else "—"
                                     for op in pool_ops])
    peer_sizes = sorted({size for op, size in peer["seconds"] if op in pool_ops}) if peer else []
    for size in peer_sizes:
        body.append(["PyTorch (CPU)", size] + [peer_ms(peer, op, size) for op in pool_ops])
    text += ("Window and stride in the shape's name (N×C×H×W_w<window>s<stride>); max pooling "
             "also writes the argmax of every output, which its backward scatters through.\n\n"
             + table(["variant", "shape"] + [op + " ms" for op in pool_ops], body))
    text += "\n" + pool_bandwidth_table(rows, machine, found, names, pool_ops)
    ratios = []
    for size in peer_sizes:
        ours = found.get(("cpu_eigen_omp", size), {})
        for op in pool_ops:
            theirs = peer_seconds(peer, op, size)
            if op in ours and theirs:
                ratios.append([size, op, fmt_ms(ours[op].seconds), fmt_ms(theirs),
                               fmt_times(theirs / ours[op].seconds)])
    if ratios:
        text += ("\ncpu_eigen_omp against PyTorch (its time over ours: above 1× we are faster):"
                 "\n\n" + table(["shape", "op", "ours ms", "PyTorch ms", "speed ratio"], ratios))
    return text


def pool_bandwidth_table(rows, machine, found, names, pool_ops):
    """Pooling's GB/s and, in brackets, its share of the copy bandwidth on the same device: pooling
    reads and writes every element about once, so the copy is its ceiling (the goal for a GPU's
    max pooling is 80% of it)."""
    body = []
    for v in names:
        copies = copies_on(rows, machine, v)
        for size in sorted(n for w, n in found if w == v):
            cells = []
            for op in pool_ops:
                row = found[(v, size)].get(op)
                # The copy moving about as many bytes: n floats read and written, 8n bytes.
                copy = nearest(copies, row.rate * row.seconds / 8) if row else None
                cells.append(bandwidth_cell(row, copy))
            body.append([v, size] + cells)
    return ("### Pooling: GB/s and % of copy bandwidth\n\n"
            "GB/s counts the bytes each call must move (x, y, the argmax, dy, dx: each once), and "
            "in brackets its percentage of the copy bandwidth measured on the same device for "
            "the copy of the nearest size (copy/host for a CPU variant, copy/device for a GPU "
            "one); pooling does a few comparisons or additions per element, so a copy is its "
            "ceiling. Above 100%: the shape's tensors stayed in a cache that the copy compared "
            "overflows; the largest shape is the honest measure.\n\n"
            + table(["variant", "shape"] + [op + " GB/s (% of copy)" for op in pool_ops], body))


# --- training -----------------------------------------------------------------------------------

def training_section(rows, machine, peer):
    steps = by_variant(rows, machine, "train_step")
    text = "## Training: images/s\n\n"
    if not steps:
        return text + "The train_step rows were not run.\n"
    names = machine.order(set(steps))
    models = [m for m in TRAIN_MODELS if any(m in found for found in steps.values())]
    models += sorted({m for found in steps.values() for m in found} - set(models))

    def by_model(columns, value):
        """One row per model, a cell per (variant, measured) column: value(variant, Row)."""
        body = []
        for model in models:
            cells = []
            for v, measured in columns:
                row = steps.get(v, {}).get(model)
                cells.append(NO_GPU if not measured else value(v, row) if row else "—")
            body.append([model] + cells)
        return table(["model"] + [v for v, _ in columns], body)

    columns = variant_rows(machine, names)
    text += ("One training step of each built-in model (bench/train.cpp): a batch of 64 28×28 "
             "images and their labels up to the backend, forward, softmax cross-entropy and its "
             "loss back, backward, one Adam update; images per second of wall-clock time, median "
             "of the repetitions. A GPU backend moves only the batch and the loss: weights, "
             "gradients and optimizer state stay on the device. On a GPU variant, a model's rows "
             "\"+overlap\", \"+graph\" and \"+overlap+graph\" train an epoch of 16 such batches "
             "with the trainer's options (lesson 16): the next batch uploaded on a copy stream "
             "while this one computes, and each step's forward, loss, backward and update "
             "replayed as a CUDA graph.\n\n"
             + by_model(columns, lambda v, r: fmt_number(r.rate)))
    for base in ("cpu_naive", "cpu_eigen_omp"):
        text += f"\n### Training speedup over {base}\n\n"
        if base not in steps:
            text += f"{base} was not run, so there is nothing to compare with.\n"
            continue
        others = [(v, m) for v, m in columns if v != base]

        def speedup(v, row, base=base):
            ref = steps[base].get(row.size)
            return fmt_times(row.rate / ref.rate) if ref else "—"
        text += (f"How many times more images per second than {base}, model by model.\n\n"
                 + by_model(others, speedup))
    return (text + training_peer_section(steps, models, peer)
            + training_transfer_section(rows, machine, steps, models)
            + optimizer_step_section(rows, machine))


def training_peer_section(steps, models, peer):
    text = "\n### Training: cpu_eigen_omp against PyTorch\n\n"
    if not peer or not peer["train"]:
        return text + no_peer("training figures", "train")
    body = []
    for model in models:
        ours, epochs = steps.get("cpu_eigen_omp", {}).get(model), peer["train"].get(model)
        if not epochs:
            continue
        theirs = statistics.median(rate for rate, _ in epochs)
        body.append([model, fmt_number(ours.rate) if ours else "—", fmt_number(theirs),
                     fmt_times(ours.rate / theirs) if ours else "—",
                     f"{100 * epochs[-1][1]:.2f}%", str(len(epochs))])
    return text + (f"{peer['header']}: the same models, optimizer (Adam, lr 1e-3) and "
                   "batch (64). Its figure is the median over its epochs of images/s of a whole "
                   "epoch (shuffling and slicing the batches included); ours is one step on a "
                   "fixed batch. 'cpu_eigen_omp / PyTorch': above 1× we are faster.\n\n"
                   + table(["model", "cpu_eigen_omp images/s", "PyTorch images/s",
                            "cpu_eigen_omp / PyTorch", "PyTorch test accuracy (last epoch)",
                            "PyTorch epochs"], body))


def training_transfer_section(rows, machine, steps, models):
    text = "\n### Training: what a step moves across the bus\n\n"
    transfers = by_variant(rows, machine, "train_transfer")
    if not transfers:
        return text + "The train_transfer rows were not run.\n"
    body = []
    for v, measured in variant_rows(machine, machine.order(set(transfers) | set(steps))):
        if not measured:
            body.append([v] + [NO_GPU] * (2 + 2 * len(models)))
            continue
        moved = next(iter(transfers.get(v, {}).values()), None)
        cells = [fmt_number(moved.seconds * 1e6) if moved else "—",
                 fmt_number(moved.rate / 1e9) if moved else "—"]
        for model in models:
            step = steps.get(v, {}).get(model)
            cells.append(fmt_ms(64 / step.rate) if step else "—")
            cells.append(fmt_percent(100 * moved.seconds * step.rate / 64)
                         if step and moved else "—")
        body.append([v] + cells)
    headers = ["variant", "transfer µs", "transfer GB/s"]
    for model in models:
        headers += [f"{model} step ms", f"{model}: transfer share"]
    return text + ("train_transfer: the batch's images (64×784 floats) and labels (64) up, the "
                   "loss (one float) down, as one step moves them; next to the whole step of each "
                   "model and as a share of it. On a CPU backend the 'transfer' is a copy into "
                   "the backend's own tensors; on a GPU it crosses the bus from pageable memory "
                   "(cudaMemcpy), and a small copy costs its fixed latency more than its bytes.\n\n"
                   + table(headers, body))


def optimizer_step_section(rows, machine):
    text = "\n### Training: the optimizer step alone\n\n"
    found = {}  # (kind, model) -> {variant: Row}
    for (op, v, model), r in rows.items():
        if op in machine.ops_in("optimizer") and machine.kind(v) != "simulator":
            found.setdefault((op.removeprefix(OPTIMIZER_PREFIX), model), {})[v] = r
    if not found:
        return text + "The optimizer_step rows were not run.\n"
    names = machine.order({v for by_variant_row in found.values() for v in by_variant_row})
    columns = variant_rows(machine, names)
    body = []
    for kind, model in sorted(found, key=lambda k: (k[0], TRAIN_MODELS.index(k[1])
                                                      if k[1] in TRAIN_MODELS else 99, k[1])):
        measured_rows = found[(kind, model)]
        cells = [NO_GPU if not measured else fmt_number(measured_rows[v].seconds * 1e6)
                 if v in measured_rows else "—" for v, measured in columns]
        naive, tiled = measured_rows.get("gpu_naive"), measured_rows.get("gpu_tiled")
        cells.append(fmt_times(naive.seconds / tiled.seconds) if naive and tiled
                     else NO_GPU if not machine.has_gpu else "—")
        body.append([kind, model] + cells)
    return text + ("One update of every parameter tensor of the model (check/optimizer_checks.cpp: mlp 6 "
                   "tensors, lenet 10), µs per step. gpu_naive launches a kernel per tensor, "
                   "gpu_tiled one for all of them: 'gpu_naive / gpu_tiled' is what fusing the "
                   "launches saves.\n\n"
                   + table(["optimizer", "model"] + [f"{v} µs" for v, _ in columns]
                           + ["gpu_naive / gpu_tiled"], body))


def load_counts(path):
    """The counts that `triptych report` gathers from `triptych profile --json` in a sim build:
    {'ops': [{'op', 'shape', 'versions': [{'run_as', 'cases', 'kernels': [...]}]}]}."""
    doc = json_or_none(path, "the simulator's counts")

    def is_op(o):
        return isinstance(o, dict) and isinstance(o.get("op"), str) and \
            isinstance(o.get("versions"), list) and \
            all(isinstance(v, dict) and isinstance(v.get("kernels"), list) for v in o["versions"])
    if not isinstance(doc, dict) or not isinstance(doc.get("ops"), list) or \
            not all(is_op(o) for o in doc["ops"]):
        raise ReportError(f"{path} is not the simulator's counts that triptych report writes")
    return doc


def counted_totals(kernels):
    """Sums a version's kernels' sites: {(space, access): [requests, units, ideal_units, lanes,
    bytes, lane_bytes]}, with the barriers, and the kernels' lowest theoretical occupancy."""
    totals = {}
    for kernel in kernels:
        for site in kernel["sites"]:
            t = totals.setdefault((site["space"], site["access"]), [0] * 6)
            for i, key in enumerate(["requests", "units", "ideal_units", "lanes", "bytes",
                                     "lane_bytes"]):
                t[i] += int(site.get(key, 0))
    barriers = sum(int(k["barriers"]) for k in kernels)
    occupancies = [k["occupancy"] for k in kernels if k.get("occupancy")]
    occupancy = min(occupancies, key=lambda o: float(o["fraction"])) if occupancies else None
    return totals, barriers, occupancy


COUNTED_INTRO = (
    "every load and store of every CUDA thread, grouped into warp requests as a GPU groups them "
    "and counted as Nsight Compute counts them, summed over the launches of the op's check at "
    "that shape. Global: 32-byte sectors per request "
    "(`l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum` / `smsp__inst_executed_op_global_ld.sum`) "
    "against the ideal for the bytes asked; shared: wavefronts per request and bank conflicts "
    "(`l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum` + `_st`); lanes: the active "
    "lanes of an average request, out of 32 (divergence); theoretical occupancy from the launch "
    "and nvcc's registers (the lowest of the op's kernels). Counted, not measured: no time here "
    "is a GPU's.")


def counted_cells(version):
    """The cells every counted table shares, and the occupancy's GPU."""
    totals, barriers, occupancy = counted_totals(version["kernels"])
    zero = [0] * 6
    gl, gs = totals.get(("global", "load"), zero), totals.get(("global", "store"), zero)
    sl, ss = totals.get(("shared", "load"), zero), totals.get(("shared", "store"), zero)
    per = lambda a, b: fmt_number(a / b) if b else "—"  # noqa: E731
    requests = sum(t[0] for t in totals.values())
    lanes = sum(t[3] for t in totals.values())
    conflicts = sl[1] - sl[2] + ss[1] - ss[2]
    gpu = "H200"
    if occupancy:
        gpu = occupancy.get("gpu", gpu)
        regs = occupancy.get("registers")
        occ = (f"{fmt_percent(100 * float(occupancy['fraction']))} "
               f"({occupancy['limit']}{f', {regs} registers' if regs is not None else ''})")
    else:
        occ = "—"
    cells = {"global load requests": str(gl[0]), "shared load requests": str(sl[0]),
             "global load sectors/request": per(gl[1], gl[0]), "ideal": per(gl[2], gl[0]),
             "global store sectors/request": per(gs[1], gs[0]), "store ideal": per(gs[2], gs[0]),
             "shared load wavefronts/request": per(sl[1], sl[0]),
             "shared bank conflicts": str(conflicts), "lanes/request": per(lanes, requests),
             "barriers (per warp)": str(barriers), "occupancy": occ}
    return cells, totals, gpu


def gemm_fmas(op):
    """Multiply-adds of one GEMM call at the op's shape 'M,N,K', or None."""
    try:
        m, n, k = (int(x) for x in op.get("shape", "").split(","))
    except ValueError:
        return None
    return m * n * k


def counted_gemm_table(op):
    fmas = gemm_fmas(op)
    columns = ["global load sectors/request", "ideal", "shared load wavefronts/request",
               "shared bank conflicts", "barriers (per warp)"]
    body, gpu = [], "H200"
    for version in op["versions"]:
        cells, totals, gpu = counted_cells(version)
        calls = int(version.get("cases", 0))
        floats = lambda space: totals.get((space, "load"), [0] * 6)[5] / 4  # noqa: E731
        per_fma = lambda space: (fmt_number(floats(space) / (calls * fmas))  # noqa: E731
                                 if fmas and calls else "—")
        dram = sum(int(k.get("dram_read_sectors", 0)) + int(k.get("dram_write_sectors", 0))
                   for k in version["kernels"])
        body.append([version["run_as"], *(cells[c] for c in columns), per_fma("global"),
                     per_fma("shared"), str(dram), cells["occupancy"]])
    return (f"## The GEMM ladder counted on the simulator (no GPU time)\n\n"
            f"`triptych profile --op gemm --shape {op.get('shape', '?')}` on each version: "
            + COUNTED_INTRO + " Floats loaded per FMA: the bytes each thread's loads asked for (a value "
            "every lane of a warp reads counts once per lane), over 4, per multiply-add of the "
            "calls (M·N·K each): 2 for a kernel whose threads read both operands from global "
            "memory at every step, less as tiles and registers reuse them. DRAM sectors, "
            "modelled: the distinct 32-byte sectors each launch loads and stores, as from an L2 "
            "that starts empty at the launch and holds all of them.\n\n"
            + table(["run as", *columns, "global floats/FMA", "shared floats/FMA",
                     "DRAM sectors (modelled)", f"occupancy on {gpu}"], body))


def counted_kernels_table(ops):
    columns = ["global load sectors/request", "ideal", "global store sectors/request",
               "store ideal", "shared load wavefronts/request", "shared bank conflicts",
               "lanes/request", "barriers (per warp)"]
    body, gpu = [], "H200"
    for op in ops:
        for version in op["versions"]:
            if not version["kernels"]:
                continue
            cells, _, gpu = counted_cells(version)
            body.append([op["op"], op.get("shape", "?"), version["run_as"],
                         str(len(version["kernels"])), *(cells[c] for c in columns),
                         cells["occupancy"]])
    if not body:
        return ""
    return ("## Every GPU kernel counted on the simulator (no GPU time)\n\n"
            "`triptych profile --op OP --backend V --shape SHAPE` for each op of the check on "
            "each GPU version: " + COUNTED_INTRO + "\n\n"
            + table(["op", "shape", "run as", "kernels", *columns, f"occupancy on {gpu}"], body))


def counted_section(counts):
    """The GPU kernels counted on the simulator (sim builds): per op and version, what Nsight
    Compute would count for one `triptych check` of the op, from the addresses each warp touched.
    Counts, not times: the simulator's timings say nothing about a GPU."""
    if not counts:
        return ""
    parts = [counted_gemm_table(op) for op in counts["ops"] if op["op"] == "gemm"]
    parts.append(counted_kernels_table([op for op in counts["ops"] if op["op"] != "gemm"]))
    return "\n".join(p for p in parts if p)


def simulator_section(rows, machine):
    sim = sorted(((op, v, n), r) for (op, v, n), r in rows.items()
                 if machine.kind(v) == "simulator")
    if not sim:
        return ""
    body = [[op, v, size_label(n), fmt_ms(r.seconds)] for (op, v, n), r in sim]
    return ("## Simulator rows (CPU timings, not GPU timings)\n\n"
            "Run with --include-simulator. These time the CPU simulating a GPU: useful to see the "
            "simulator's cost, meaningless as a kernel's speed.\n\n"
            + table(["op", "variant", "size", "ms per call"], body))


def skipped_section(skipped):
    if not skipped:
        return ""
    return "## Rows that did not run\n\n" + table(["benchmark", "why"],
                                                  [[n, m] for n, m in skipped])


def report_markdown(doc, rows, skipped, machine, charts, json_name, peer=None, counts=None):
    series = gemm_series(rows, machine)
    parts = ["# triptych benchmark report\n",
             machine_section(doc, machine, json_name),
             *gemm_sections(series, machine, peer),
             ladder_section(rows, machine),
             counted_section(counts),
             relu_section(rows, machine),
             *memory_bound_sections(rows, machine),
             memory_bound_peer_section(rows, machine, peer),
             *sum_sections(rows, machine),
             *fusion_sections(rows, machine),
             *conv_sections(rows, machine, peer),
             pool_section(rows, machine, peer),
             training_section(rows, machine, peer),
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
    log_axes(ax, xlabel, ylabel, title)
    if lines:
        ax.legend(fontsize="small")


def log_axes(ax, xlabel, ylabel, title):
    """Sizes on a log2 axis, rates on a log10 one, with a light grid."""
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)


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
    by_kind = transfer_rows(rows)
    reference = transfer_reference(series, machine)
    for ax, base in zip(axes, ("cpu_naive", "cpu_eigen_omp")):
        ref = square.get(base, {})
        lines = [(n, {x: r.rate / ref[x].rate for x, r in square[n].items() if x in ref})
                 for n in names if n != base]
        if reference and by_kind["h2d_pinned"] and by_kind["d2h_pinned"]:
            # The same GPU GEMM with its operands' trips to the device and back.
            lines.append((f"{reference} + transfers (pinned)", {
                x: ref[x].seconds / (r.seconds + gemm_transfer_seconds((x, x, x), by_kind,
                                                                       "pinned"))
                for x, r in square[reference].items() if x in ref}))
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

    if write_memory_chart(plt, directory, rows, machine, gpu_note):
        charts.append(("memory_bandwidth.png", "GB/s of the memory-bound ops versus size, "
                                               "per variant, against the copy"))
    if write_sweep_chart(plt, directory, rows, machine, gpu_note):
        charts.append(("conv_sweep.png", "conv2d forward GFLOP/s versus filter size, per "
                                         "algorithm: where FFT overtakes direct and im2col"))
    plt.close("all")
    return charts


def write_sweep_chart(plt, directory, rows, machine, gpu_note):
    """conv_sweep.png: one panel per variant, forward GFLOP/s of each algorithm against the filter
    size R = S of the sweep rows. Returns False, writing nothing, when no sweep row ran."""
    lines = {}
    for (op, v, size), r in rows.items():
        m = CONV_OP.match(op)
        if m and m[1] == "forward" and size.startswith("sweep_r") and \
                machine.kind(v) != "simulator":
            lines.setdefault(v, {}).setdefault(m[2], {})[int(size[len("sweep_r"):])] = r.rate / 1e9
    panels = machine.order(set(lines))
    if not panels:
        return False
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.5), squeeze=False)
    for ax, variant in zip(axes.flat, panels):
        for algorithm, points in sorted(lines[variant].items()):
            xs = sorted(points)
            ax.plot(xs, [points[x] for x in xs], marker="o", label=algorithm)
        ax.set_yscale("log")
        ax.set_xlabel("filter size R = S (N=8, C=16, 64×64, K=16, pad R/2)")
        ax.set_ylabel("GFLOP/s (direct-algorithm FLOPs)")
        ax.set_title(variant + gpu_note)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(os.path.join(directory, "conv_sweep.png"), dpi=110)
    return True


def write_memory_chart(plt, directory, rows, machine, gpu_note):
    """memory_bandwidth.png: one panel per variant, GB/s of every memory-bound op against the
    floats it streams, and the copy on the same device as a dashed black line. A row-wise op
    (softmax, cross-entropy) gets one line per row length, each with its own marker: joining
    65536x10 to 4096x1000 would draw a slope that is really a change of shape. Returns False,
    writing nothing, when no memory-bound row ran."""
    ops = {op: by_variant(rows, machine, op) for op in machine.ops_in("memory", "reduction")}
    panels = machine.order({v for found in ops.values() for v in found})
    if not panels:
        return False
    row_lengths = sorted({s.cols for op in ("softmax_forward", "softmax_backward",
                                            "softmax_cross_entropy")
                          for found in ops[op].values() for s in found})
    markers = dict(zip(row_lengths, "v^sDPX*"))
    columns = min(2, len(panels))
    grid_rows = math.ceil(len(panels) / columns)
    fig, axes = plt.subplots(grid_rows, columns, figsize=(7 * columns, 5.5 * grid_rows),
                             squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, variant in zip(axes.flat, panels):
        measured = [(op, found[variant]) for op, found in ops.items() if variant in found]
        for (op, by_size), color in zip(measured, plt.cm.tab20.colors):
            families = {}  # row length (or None) -> {floats: GB/s}
            for size, row in by_size.items():
                family = size.cols if isinstance(size, Matrix) and size.cols in markers else None
                families.setdefault(family, {})[floats(size)] = row.rate / 1e9
            for i, (family, points) in enumerate(sorted(families.items(), key=str)):
                xs = sorted(points)
                ax.plot(xs, [points[x] for x in xs], color=color, marker=markers.get(family, "o"),
                        label=op if i == 0 else None)
        copies = copies_on(rows, machine, variant)
        if copies:
            xs = sorted(copies)
            ax.plot(xs, [copies[x].rate / 1e9 for x in xs], "k--", linewidth=2,
                    label="copy/" + ("device" if machine.kind(variant) == "gpu" else "host"))
        for length, marker in markers.items():
            ax.plot([], [], color="gray", marker=marker, linestyle="none",
                    label=f"softmax, cross-entropy: rows of {length}")
        log_axes(ax, "floats streamed (n, or rows·cols)", "GB/s", variant + gpu_note)
        ax.legend(fontsize="x-small", ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(directory, "memory_bandwidth.png"), dpi=110)
    return True


# --- writing the directory ----------------------------------------------------------------------

def check_out(out):
    """Refuses to replace anything but a report this script wrote (or an empty directory), and a
    place where the report could not be written: the nearest folder that exists on the way to it
    must be one this user may write in."""
    parent = os.path.dirname(os.path.abspath(out))
    while not os.path.lexists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise ReportError(f"{out}: {parent} is not a directory; choose another --out")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ReportError(f"{out}: {parent} cannot be written in (read-only, or not yours); "
                          "choose another --out")
    if not os.path.lexists(out):
        return
    if not os.path.isdir(out) or os.path.islink(out):
        raise ReportError(f"{out} exists and is not a directory; choose another --out")
    if os.listdir(out) and not os.path.exists(os.path.join(out, MARKER)):
        raise ReportError(f"{out} exists and is not a triptych report directory; "
                          "choose another --out or remove it")


def write_report(json_path, out, peer_path=None, counts_path=None):
    check_out(out)
    try:
        stage_and_replace(json_path, out, peer_path, counts_path)
    except (AttributeError, KeyError, TypeError, ValueError, ZeroDivisionError, OverflowError,
            RecursionError) as e:
        # Well-formed JSON with a field of the wrong type or shape (or a rate of 0, or a number
        # too large for a float), in the run or in the files given beside it.
        given = [json_path] + [p for p in (peer_path, counts_path) if p]
        raise ReportError(f"{' or '.join(given)} has unexpected content "
                          f"({type(e).__name__}: {e})")


def stage_and_replace(json_path, out, peer_path=None, counts_path=None):
    doc = load_json(json_path)
    peer = load_peer(peer_path) if peer_path else None
    counts = load_counts(counts_path) if counts_path else None
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
        text = report_markdown(doc, rows, skipped, machine, charts, "benchmarks.json", peer, counts)
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
    parser.add_argument("--peer", metavar="FILE",
                        help="PyTorch's figures on this machine (bench/pytorch_peer.py's JSON)")
    parser.add_argument("--counts", metavar="FILE",
                        help="the GPU ladder counted on the simulator (written by triptych report)")
    parser.add_argument("--check-out", metavar="DIR",
                        help="only check that DIR may be written (and --peer read), then exit")
    args = parser.parse_args(argv)
    try:
        if args.check_out:
            check_out(args.check_out)
            if args.peer:
                load_peer(args.peer)
            return 0
        if not args.json or not args.out:
            raise ReportError("--json FILE and --out DIR are both needed")
        write_report(args.json, args.out, args.peer, args.counts)
    except ReportError as e:
        print(f"report.py: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        # A write to an open file (a chart's, on a full disk) fails without a file name.
        where = e.filename or f"writing the report in {args.out or args.check_out}"
        print(f"report.py: {where}: {e.strerror or e}", file=sys.stderr)
        return 1
    print(f"report written to {args.out}/report.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
