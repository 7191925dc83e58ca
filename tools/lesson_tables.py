#!/usr/bin/env python3
"""Keeps the measured and counted tables the lessons quote equal to the runs they come from.

    tools/lesson_tables.py --check              exit 1 if a lesson's table differs from its source
    tools/lesson_tables.py --write              rewrite every table from its recorded source
    tools/lesson_tables.py --from run.json [--peer peer.json]
                                                record a new run (triptych report's
                                                report/benchmarks.json, or triptych_bench JSON)
                                                as every measured table's source, then rewrite
                                                the tables
    tools/lesson_tables.py --count TRIPTYCH     rerun the simulator's counts of every counted
                                                table with TRIPTYCH (a sim build's
                                                build/tools/triptych), record them, rewrite
    tools/lesson_tables.py --check --triptych TRIPTYCH
                                                also recount: exit 1 if a recorded count is not
                                                what the simulator counts now

A lesson's README marks each generated table:

    <!-- generated table: gemm_ladder, source ladder.json -->
    ...
    <!-- end of generated table -->

`source` is a JSON next to the README. For a measured table (gemm_ladder) it is a benchmark run,
and the table between the markers is what bench/report.py writes for that section from it (its
machine, date and GPU stated above it); while no run has been recorded, it says so and how to
record one. For a bench table (`bench`) it names the rows and the triptych_bench command that measures them,
{"command": "build/bench/triptych_bench --benchmark_filter=...", "rows": ["copy/host/16777216",
...]}, optionally the build it needs ("build": {"triptych_eigen_blas": "off"}: the run's context
must say so, or the table keeps its run), and holds the run once recorded: the table gives each row's median time and rate under the
machine, the date, the load and the command. For a counted table (`counted`) it lists `triptych profile` runs,
{"runs": [{"args": ["--op", "gemm", "--backend", "gpu_naive@1", "--shape", "64,64,64"]}, ...]},
each with the counts that run printed (`--json`) once recorded (and, optionally, "show": the short
names of the kernels the table keeps, and "by_kernel": true for a row per kernel rather than one
for the run, where instances of one template are named with their template arguments), and
optionally the table's "columns" (default: the memory counts; "occupancy" is the theoretical
occupancy, the lowest of a row's kernels). The counts follow from the addresses each warp
touches, so a recount gives the same numbers on every machine, and the check with --triptych
proves it. The occupancy follows from the registers nvcc's ptxas reports (each run records which
nvcc), which another nvcc may change: the check compares it only where the build's nvcc is the
recorded one, and says so where it is not. Nobody types the numbers in a README. Standard library
only (and bench/report.py).

A removed-barrier table (`barriers`, lesson 03) shows what `triptych check` makes of kernels
with one barrier left out (TRIPTYCH_SIM_SKIP_SYNC), in each thread order and under the race
checker; tools/lesson_barriers.py says what its source holds. --count and --check --triptych rerun
its checks as they do the profiles of a counted table.

A noted table (`noted`) shows figures written down from a run whose JSON was not kept (the H200
runs of lessons/15_performance/h200.json): {"machine", "kept", "runs": {name: {"date", "code",
"build", "command", "written_down"}}, "figures": [{"row", "run", "time_us" and/or "rate" with
"unit" (GB/s, GFLOP/s or images/s) or "of_copy", and/or a training run's "train_loss" and
"test_accuracy" (percent), optional "code" and "note"}]}. A time or a rate written down as a range
(over several runs or epochs) is [low, high]. Its marker says which figures it shows, after
the source: ", rows REGEX" (searched in each row name), optionally ", run NAME", and ", by
variant" for a line per op and size with a column per variant, to which ", ratio A/B" adds A's
speedup over B:

    <!-- generated table: noted, source ../15_performance/h200.json, rows ^gemm/, by variant -->

The figures live in that one file, each once; a lesson quotes them only through such a table.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import report  # noqa: E402  (bench/report.py)
import lesson_barriers  # noqa: E402  (tools/lesson_barriers.py, which needs report)
from lesson_files import lesson_readmes, read_readme, write_json, write_whole  # noqa: E402

BLOCK = re.compile(r"(<!-- generated table: (\w+), source ([\w./-]+)((?:, [^\n]*?)?) -->\n)"
                   r"(.*?)(<!-- end of generated table -->)", re.S)
# The rows each table needs from a run, so that a recorded source stays small, and how
# bench/report.py writes that table from them (without its heading).
POOL_OPS = ("max_pool2d_forward", "max_pool2d_backward", "avg_pool2d_forward",
            "avg_pool2d_backward")
SECTION_OPS = {"gemm_ladder": ("gemm",),
               "fusion": ("dense_forward", "dense_forward_unfused", "copy"),
               "pool": POOL_OPS + ("copy",),
               "conv": tuple(f"conv2d_{p}_{a}" for p in ("forward", "forward_backward")
                             for a in report.CONV_ALGORITHMS)}
# The tables only a run on a real GPU can fill (a CPU run has no GPU versions of the op).
SECTIONS_OF_A_GPU = {"gemm_ladder"}
# The peer's ops a table pairs with its rows, where they are named otherwise (PyTorch has one
# convolution, we have three algorithms).
SECTION_PEER_OPS = {"conv": ("conv2d_forward", "conv2d_forward_backward")}
SECTION_TABLES = {
    "gemm_ladder": lambda rows, machine, peer: report.ladder_section(rows, machine),
    "fusion": lambda rows, machine, peer: report.fusion_section(rows, machine, "dense_forward",
                                                                "dense_forward_unfused"),
    "pool": lambda rows, machine, peer: report.pool_section(rows, machine, peer),
    "conv": lambda rows, machine, peer: "\n".join(report.conv_sections(rows, machine, peer)),
}
# What a table without a recorded run asks for.
SECTION_NEEDS = {
    "gemm_ladder": ("it needs a machine with an NVIDIA GPU. There, run `triptych report --filter "
                    "'^gemm/'`"),
    "fusion": "run `triptych report --filter '^(dense_forward|copy)'`",
    "pool": ("run `triptych_bench --benchmark_filter='pool2d_(forward|backward)/(cpu_naive|"
             "cpu_eigen_omp)/' --benchmark_out=run.json` and `bench/pytorch_peer.py pool --out "
             "peer.json`"),
    "conv": ("run `triptych_bench --benchmark_filter='conv2d_forward' --benchmark_out=run.json` "
             "and `bench/pytorch_peer.py conv --out peer.json`"),
}


# The columns of a counted table, as bench/report.py's counted tables name them.
COUNTED_COLUMNS = ["global load requests", "global load sectors/request", "ideal",
                   "global store sectors/request", "store ideal", "shared load requests",
                   "shared load wavefronts/request", "shared bank conflicts", "lanes/request",
                   "barriers (per warp)"]


def short_kernel(name):
    """'void ns::(anonymous namespace)::gemm_kernel<64, 64>(long, float*)' -> 'gemm_kernel'."""
    depth, base = 0, ""
    for ch in name.replace("(anonymous namespace)", "anonymous"):
        if ch in "<(":
            if depth == 0 and base:
                break
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif depth == 0:
            base += ch
    return base.split("::")[-1].split(" ")[-1]


def short_instance(name):
    """'void ns::k<64, ns::(anonymous namespace)::Patches>(long)' -> 'k<64, Patches>': the short
    name with its template arguments, for instances of one template that a table tells apart."""
    base = short_kernel(name)
    start = name.find(base + "<")
    if start < 0:
        return base
    depth, args, current = 0, [], ""
    for ch in name[start + len(base):]:
        if ch == "<":
            depth += 1
            if depth == 1:
                continue
        elif ch == ">":
            depth -= 1
            if depth == 0:
                break
        elif ch == "," and depth == 1:
            args.append(current)
            current = ""
            continue
        current += ch
    args.append(current)
    plain = [re.sub(r"[\w:]*::", "", a.replace("(anonymous namespace)", "anonymous")).strip()
             for a in args]
    return f"{base}<{', '.join(plain)}>"


def value_of(args, flag):
    return args[args.index(flag) + 1] if flag in args else "—"


def counted_columns(source, source_path):
    """The columns a counted table shows: its source's "columns", or COUNTED_COLUMNS."""
    columns = source.get("columns", COUNTED_COLUMNS)
    known = COUNTED_COLUMNS + ["occupancy"]
    unknown = [c for c in columns if c not in known]
    if unknown:
        raise report.ReportError(f"{source_path}: no counted column {', '.join(unknown)}; the "
                                 f"columns are {', '.join(known)}")
    return columns


def counted_rows(source, source_path):
    """One row per kernel of each recorded `triptych profile` run."""
    columns = counted_columns(source, source_path)
    body = []
    for run in source["runs"]:
        if "kernels" not in run:
            raise report.ReportError(f"{source_path}: the run {' '.join(run['args'])} has no "
                                     "counts yet (tools/lesson_tables.py --count TRIPTYCH)")
        shown = run.get("show")  # the kernels the lesson is about, by short name; default all
        kernels = [k for k in run["kernels"]
                   if shown is None or short_kernel(k["kernel"]) in shown]
        # One row per kernel where the run says "by_kernel", else one row for the run's kernels.
        groups = [[k] for k in kernels] if run.get("by_kernel") else [kernels]
        # Instances of one template (the same short name twice) are named with their arguments.
        short_names = [short_kernel(k["kernel"]) for k in kernels]
        twins = {n for n in short_names if short_names.count(n) > 1} if run.get("by_kernel") else set()
        for group in groups:
            cells, _, _ = report.counted_cells({"kernels": group})
            names = dict.fromkeys(short_instance(k["kernel"]) if short_kernel(k["kernel"]) in twins
                                  else short_kernel(k["kernel"]) for k in group)
            body.append([value_of(run["args"], "--op"), value_of(run["args"], "--shape"),
                         value_of(run["args"], "--backend"),
                         ", ".join(f"`{n}`" for n in names),
                         *(cells[c] for c in columns)])
    return body


def render_counted(source_path, link):
    """A counted table, from its recorded source."""
    source = load_counted(source_path)
    body = counted_rows(source, source_path)
    return (f"Counted by the simulator (`triptych profile --op OP --backend V --shape S`, summed "
            f"over the launches of the op's check at that shape), recorded in "
            f"[{os.path.basename(link)}]({link}) by "
            "tools/lesson_tables.py --count; counts, not times.\n\n"
            + report.table(["op", "shape", "run as", "kernel",
                            *counted_columns(source, source_path)], body))


def read_source(path, what):
    """The JSON at `path`, or a ReportError naming it as `what` ("the bench table's source")."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError, RecursionError) as e:
        raise report.ReportError(f"cannot read {what} {path}: {e}")


def load_counted(path):
    doc = read_source(path, "the counted table's source")
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), list) or not all(
            isinstance(r, dict) and isinstance(r.get("args"), list) for r in doc["runs"]):
        raise report.ReportError(f"{path} is not a counted table's source ({{\"runs\": [{{\"args\": "
                                 "[...]}}, ...]}})")
    return doc


def profile(triptych, args):
    """What `triptych profile ARGS --seed 1 --json` counts: {'cases', 'nvcc', 'kernels'}, 'nvcc'
    the version whose registers the occupancy rests on (None without nvcc)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "counts.json")
        done = subprocess.run([triptych, "profile", *args, "--seed", "1", "--json", out],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise report.ReportError(f"triptych profile {' '.join(args)} failed:\n"
                                     f"{done.stdout}{done.stderr}")
        counted = profile_json(out, f"{triptych} profile {' '.join(args)} --seed 1 --json FILE")
    return {"cases": counted["cases"], "nvcc": counted.get("nvcc"), "kernels": counted["kernels"]}


def profile_json(path, command):
    """The counts `command` (a `triptych profile ... --json FILE`) wrote to `path`, or a
    ReportError naming the command and what is wrong with them: no file, not JSON, or not an
    object with its "cases" and "kernels"."""
    try:
        with open(path, encoding="utf-8") as f:
            counted = json.load(f)
    except OSError as e:
        raise report.ReportError(f"{command} wrote no counts to FILE ({e.strerror})")
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
        raise report.ReportError(f"{command} wrote counts that are not valid JSON ({e})")
    if not isinstance(counted, dict):
        raise report.ReportError(f"{command} wrote counts that are not a JSON object")
    missing = [key for key in ("cases", "kernels") if key not in counted]
    if missing:
        raise report.ReportError(f"{command} wrote counts without \"{missing[0]}\"")
    if not isinstance(counted["kernels"], list):
        raise report.ReportError(f"{command} wrote counts whose \"kernels\" is not a list")
    return counted


def counted_sources(lessons, kind="counted"):
    """The source of every table of `kind` ("counted" or "barriers") of the lessons."""
    for path in lesson_readmes(lessons):
        _, _, found = regenerated(path, render_tables=False)
        for section, source in found:
            if section == kind:
                yield source


def recount(triptych, lessons, write):
    """Reruns every counted table's profiles and every removed-barrier table's checks; returns
    the (source, recounted doc) to record (`write`), or the sources whose tables would change (a
    recount that only moves a counted table's source line is not stale; a removed-barrier
    table names its barriers' lines, so one that moved is)."""
    stale, writes = [], []
    for source in counted_sources(lessons):
        doc = load_counted(source)
        runs = [dict({k: v for k, v in run.items() if k in ("args", "show", "by_kernel")},
                     **profile(triptych, run["args"])) for run in doc["runs"]]
        recounted = dict(doc, runs=runs)  # the source's other settings ("columns") stay
        if write:
            writes.append((source, recounted))
            continue
        # The occupancy follows the registers ptxas reports, which another nvcc may change and
        # which are unknown without one: it is compared only where the same nvcc reported them.
        recorded_nvcc = {run.get("nvcc") for run in doc["runs"]}
        nvcc_here = {run["nvcc"] for run in runs}
        columns = counted_columns(doc, source)
        if "occupancy" in columns and recorded_nvcc != nvcc_here:
            print(f"lesson_tables.py: {os.path.relpath(source, ROOT)}: the occupancy is not "
                  f"compared: its registers were reported by nvcc "
                  f"{', '.join(sorted(str(v) for v in recorded_nvcc))}, and this build's by "
                  f"{', '.join(sorted(str(v) for v in nvcc_here if v)) or 'no nvcc'}")
            columns = [c for c in columns if c != "occupancy"]
        if (counted_rows(dict(recounted, columns=columns), source) !=
                counted_rows(dict(doc, columns=columns), source)):
            stale.append(os.path.relpath(source, ROOT))
    for source in counted_sources(lessons, "barriers"):
        recounted = lesson_barriers.recount(triptych, source)
        if write:
            writes.append((source, recounted))
        elif recounted != lesson_barriers.load(source):
            stale.append(os.path.relpath(source, ROOT))
    return writes if write else stale


def write_sources(writes, lessons):
    """Writes each (source path, doc), then makes every lesson's tables from them. If one cannot
    be made, every source is put back as it was before the error goes on: a bad run or count
    never replaces a good recorded source."""
    saved = {}
    for path, _ in writes:
        if path not in saved and os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                saved[path] = f.read()
    try:
        for path, doc in writes:
            write_json(path, doc)
        for readme in lesson_readmes(lessons):
            regenerated(readme)
    except BaseException:
        for path, _ in writes:
            if path in saved:
                write_whole(path, saved[path])
            elif os.path.exists(path):
                os.unlink(path)
        raise


def load_bench_source(path):
    """A bench table's source: {"command": the triptych_bench command, "rows": [row names], and,
    once a run is recorded, its "context" and "benchmarks" (the rows' median aggregates)}."""
    doc = read_source(path, "the bench table's source")
    if not isinstance(doc, dict) or not isinstance(doc.get("command"), str) or not isinstance(
            doc.get("rows"), list) or not all(isinstance(r, str) for r in doc["rows"]):
        raise report.ReportError(f"{path} is not a bench table's source ({{\"command\": \"...\", "
                                 "\"rows\": [\"op/variant/size\", ...]}})")
    build = doc.get("build", {})
    if not isinstance(build, dict) or not all(isinstance(v, str) for v in build.values()):
        raise report.ReportError(f"{path}: \"build\" names the run's context values the table "
                                 "needs, as strings ({\"triptych_eigen_blas\": \"off\"})")
    if "benchmarks" in doc:  # a recorded run: its context is quoted above the table
        if not isinstance(doc.get("context"), dict):
            raise report.ReportError(f"{path}: the recorded run has no \"context\" object")
        report.check_context(doc["context"], path, report.RUN_CONTEXT)
    return doc


def run_name(entry):
    """A benchmark entry's run name: 'relu_forward/cpu_naive/65536/real_time'."""
    return entry.get("run_name", entry.get("name", ""))


def is_row(entry, row):
    """Whether a benchmark entry measures `row` ('op/variant/size')."""
    name = run_name(entry)
    return name == row or name.startswith(row + "/")


def bench_entry(doc, row, source_path):
    """The median aggregate of `row` ('op/variant/size') in a recorded run."""
    for entry in doc.get("benchmarks", []):
        if is_row(entry, row) and entry.get("aggregate_name") == "median":
            return entry
    raise report.ReportError(f"{source_path}: the recorded run has no median of {row}")


def render_bench(source_path, link):
    """A bench table: each row's median time and rate, under the machine, date and command."""
    doc = load_bench_source(source_path)
    name = os.path.basename(link)
    command = doc["command"]
    if "benchmarks" not in doc:
        return (f"No run has been recorded for this table yet. Run, on a quiet machine:\n\n"
                f"    {command} --benchmark_out=run.json\n\nthen `tools/lesson_tables.py --from "
                f"run.json`, which records the rows in {name} and writes the table here.\n")
    c = doc["context"]
    ops = report.described_ops(c)
    body = []
    for row in doc["rows"]:
        entry = bench_entry(doc, row, source_path)
        op = row.split("/")[0]
        if op not in ops:
            raise report.ReportError(f"{source_path}: {op} is not an op of the recorded run")
        counter = ops[op]["counter"]
        rate = report.entry_rate(entry, counter) * 1e-9
        unit = "GFLOP/s" if counter == "flops" else "GB/s"
        body.append([f"`{row}`", report.fmt_ms(report.entry_seconds(entry)) + " ms",
                     f"{report.fmt_number(rate)} {unit}"])
    repetitions = bench_entry(doc, doc["rows"][0], source_path).get("repetitions", "?")
    flags = "".join(f", {k} {c.get(k, '?')}" for k in doc.get("build", {}))
    return (f"Measured on: host {c.get('host_name', '?')}, {cpu_text(c)}"
            f"{c.get('num_cpus', '?')} CPUs × {c.get('mhz_per_cpu', '?')} MHz, {c.get('date', '?')}, build "
            f"{c.get('triptych_build', '?')} ({c.get('triptych_build_type', '?')}{flags}), OpenMP "
            f"threads {c.get('triptych_omp_threads', '?')}, {start_text(c)} when the run started; "
            f"the median of {repetitions} repetitions of each row; recorded in [{name}]({link}) "
            "by tools/lesson_tables.py --from, from:\n\n"
            f"    {command}\n\n" + report.table(["row", "time", "rate"], body))


# ---- noted figures: written down from a run whose JSON was not kept

# What a noted figure may hold, and the units of its rate.
NOTED_VALUES = ("time_us", "rate", "of_copy", "train_loss", "test_accuracy")
NOTED_UNITS = ("GB/s", "GFLOP/s", "images/s")


def is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def load_noted(path):
    """A noted table's source: {"machine": ..., "kept": how the figures were kept, "runs": {id:
    {"date", "code", "build", "command", "written_down"}}, "figures": [{"row", "run", and some
    of "time_us", "rate" with "unit", "of_copy" (a share of the device copy), "train_loss",
    "test_accuracy", "code", "note"}]}; a time or a rate is a number or a range [low, high]."""
    doc = read_source(path, "the noted figures")
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), dict) or not isinstance(
            doc.get("figures"), list) or not isinstance(doc.get("machine"), str):
        raise report.ReportError(f"{path} is not a file of noted figures ({{\"machine\": ..., "
                                 "\"runs\": {...}, \"figures\": [...]}})")
    for figure in doc["figures"]:
        if not isinstance(figure, dict) or figure.get("run") not in doc["runs"] or not any(
                k in figure for k in NOTED_VALUES):
            raise report.ReportError(f"{path}: a figure needs a row, a run of \"runs\" and a time, "
                                     f"a rate, a share of the copy or a training run's loss or "
                                     f"accuracy: {figure}")
        if "rate" in figure and figure.get("unit") not in NOTED_UNITS:
            raise report.ReportError(f"{path}: {figure['row']}: a rate needs its unit, "
                                     f"{', '.join(NOTED_UNITS[:-1])} or {NOTED_UNITS[-1]}")
        for key in ("time_us", "rate"):
            value = figure.get(key, 0)
            if not is_number(value) and not (isinstance(value, list) and len(value) == 2 and all(
                    is_number(v) for v in value) and value[0] <= value[1]):
                raise report.ReportError(f"{path}: {figure['row']}: its {key} is a number or a "
                                         f"range [low, high], not {value}")
        for key in ("of_copy", "train_loss", "test_accuracy"):
            if not is_number(figure.get(key, 0)):
                raise report.ReportError(f"{path}: {figure['row']}: its {key} is a number, not "
                                         f"{figure[key]}")
    return doc


def noted_options(options):
    """', rows REGEX, run NAME, by variant, ratio A/B' -> (rows regex, run or None, by variant?,
    [(A, B)])."""
    rows, run, by_variant, ratios = None, None, False, []
    for option in filter(None, (o.strip() for o in options.split(", "))):
        if option.startswith("rows "):
            try:
                rows = re.compile(option[5:])
            except re.error as e:
                raise report.ReportError(f"a noted table's rows '{option[5:]}': {e}")
        elif option.startswith("run "):
            run = option[4:]
        elif option == "by variant":
            by_variant = True
        elif option.startswith("ratio ") and option.count("/") == 1:
            ratios.append(tuple(option[6:].split("/")))
        else:
            raise report.ReportError(f"a noted table takes 'rows REGEX', 'run NAME', 'by variant' "
                                     f"and 'ratio A/B', not '{option}'")
    if rows is None:
        raise report.ReportError("a noted table needs 'rows REGEX': which figures it shows")
    if ratios and not by_variant:
        raise report.ReportError("'ratio A/B' goes with 'by variant'")
    return rows, run, by_variant, ratios


def fmt_range(value, fmt):
    """fmt(value), or of a range [low, high]: '196–235 µs' (the unit once where both share it)."""
    if not isinstance(value, list):
        return fmt(value)
    low, high = fmt(value[0]), fmt(value[1])
    low_number, _, low_unit = low.partition(" ")
    return f"{low_number}–{high}" if low_unit == high.partition(" ")[2] else f"{low}–{high}"


def fmt_time(us):
    return fmt_range(us, lambda us: f"{report.fmt_number(us)} µs" if us < 1000
                     else f"{report.fmt_number(us / 1000)} ms")


def fmt_rate(figure):
    if "rate" in figure:
        return fmt_range(figure["rate"], lambda rate: f"{report.fmt_number(rate)} {figure['unit']}")
    if "of_copy" in figure:
        return f"{report.fmt_number(100 * figure['of_copy'])}% of the device copy"
    return "—"


def fmt_outcome(figure, key):
    """A training run's loss (as written down) or test accuracy, or '—'."""
    if key not in figure:
        return "—"
    return f"{figure[key]:g}%" if key == "test_accuracy" else f"{figure[key]:g}"


def noted_caption(doc, runs, link):
    """Where the figures come from: the machine, each run's date, build, command and code."""
    lines = [f"Measured on: {doc['machine']}. {doc.get('kept', '')}"]
    for name in runs:
        r = doc["runs"][name]
        lines.append(f"- run `{name}`, {r.get('date', '?')}, code of {r.get('code', '?')}: "
                     f"{r.get('build', '?')}; {r.get('command', '?')}; written down in "
                     f"{r.get('written_down', '?')}.")
    lines.append(f"\nRecorded in [{os.path.basename(link)}]({link}); tools/lesson_tables.py "
                 "writes this table from it.\n")
    return "\n".join(lines) + "\n"


def render_noted(source_path, link, options):
    """The figures whose row matches the marker's REGEX: one line each, or (by variant) one line
    per op and size with a column per variant and the ratios of the rates (or times) asked for."""
    doc = load_noted(source_path)
    pattern, run, by_variant, ratios = noted_options(options)
    if run is not None and run not in doc["runs"]:
        raise report.ReportError(f"{source_path} has no run '{run}' (it has "
                                 f"{', '.join(doc['runs'])})")
    figures = [f for f in doc["figures"]
               if pattern.search(f["row"]) and run in (None, f["run"])]
    if not figures:
        raise report.ReportError(f"{source_path}: no figure's row matches '{pattern.pattern}'"
                                 + (f" in run {run}" if run else ""))
    runs = list(dict.fromkeys(f["run"] for f in figures))
    if not by_variant:
        # A training run's loss and accuracy get columns of their own where a figure has them.
        outcomes = [k for k in ("train_loss", "test_accuracy") if any(k in f for f in figures)]
        body = [[f"`{f['row']}`", fmt_time(f["time_us"]) if "time_us" in f else "—",
                 fmt_rate(f), *(fmt_outcome(f, k) for k in outcomes), f["run"],
                 f.get("code", doc["runs"][f["run"]].get("code", "?")),
                 f.get("note", "")] for f in figures]
        return noted_caption(doc, runs, link) + report.table(
            ["row", "time", "rate", *(k.replace("_", " ") for k in outcomes), "run", "code of",
             "note"], body)
    cells, variants = {}, []
    for f in figures:
        parts = f["row"].split("/")
        if len(parts) != 3:
            raise report.ReportError(f"{source_path}: '{f['row']}' is not op/variant/size")
        op, variant, size = parts
        if (op, size, variant) in cells:
            raise report.ReportError(f"{source_path}: two figures of {f['row']} in one table")
        cells[(op, size, variant)] = f
        if variant not in variants:
            variants.append(variant)
    lines = list(dict.fromkeys((op, size) for op, size, _ in cells))

    def shown(f):
        if f is None:
            return "—"
        if "time_us" in f and "rate" in f:
            return f"{fmt_time(f['time_us'])} ({fmt_rate(f)})"
        return fmt_time(f["time_us"]) if "time_us" in f else fmt_rate(f)

    def ratio(a, b):  # how many times faster a is than b, on the same work
        if a is None or b is None:
            return "—"
        for key in ("time_us", "rate"):  # times first: they carry more digits than rates
            if key in a and key in b and not isinstance(a[key], list) and not isinstance(
                    b[key], list):  # a range has no one ratio
                return report.fmt_times(b[key] / a[key] if key == "time_us" else a[key] / b[key])
        return "—"
    for a, b in ratios:
        if a not in variants or b not in variants:
            raise report.ReportError(f"ratio {a}/{b}: the table's variants are "
                                     f"{', '.join(variants)}")
    several_ops = len({op for op, _ in lines}) > 1
    body = [[f"{op} {size}" if several_ops else size,
             *(shown(cells.get((op, size, v))) for v in variants),
             *(ratio(cells.get((op, size, a)), cells.get((op, size, b))) for a, b in ratios)]
            for op, size in lines]
    return noted_caption(doc, runs, link) + report.table(
        # A profile's rows are a model's layers or phases ("mlp update"), not sizes.
        ["op and size" if several_ops else
         lines[0][0] + ("" if lines[0][0].startswith("profile") else " size"), *variants,
         *(f"{a} over {b}" for a, b in ratios)], body)


def render(section, source_path, link, options=""):
    """The Markdown between the markers: the table of `section` from the run at `source_path`,
    which the README names `link` (relative to its folder: a lesson may quote another's run);
    `options` is what the marker says after the source (", rows REGEX, by variant")."""
    if section == "noted":
        return render_noted(source_path, link, options)
    if options:
        raise report.ReportError(f"a {section} table takes no options (the marker says "
                                 f"'{options.lstrip(', ')}')")
    if section == "counted":
        return render_counted(source_path, link)
    if section == "barriers":
        return lesson_barriers.render(source_path, link)
    if section == "bench":
        return render_bench(source_path, link)
    if section not in SECTION_OPS:
        raise report.ReportError(f"unknown generated table '{section}' (known: bench, counted, "
                                 f"barriers, noted, {', '.join(SECTION_OPS)})")
    if not os.path.exists(source_path):
        return (f"No run has been recorded for this table yet: {SECTION_NEEDS[section]}, then "
                "`tools/lesson_tables.py --from report/benchmarks.json`, which records the run "
                f"where this lesson names it ({link}) and writes the table "
                "here.\n")
    doc = report.load_json(source_path)
    rows, _ = report.parse_rows(doc)
    machine = report.Machine(doc["context"])
    c = doc["context"]
    peer = report.peer_figures(doc["peer"], source_path) if "peer" in doc else None
    text = SECTION_TABLES[section](rows, machine, peer).split("\n", 2)[2]  # without its heading
    if peer:
        text += f"\nPyTorch: {peer['header']}, {doc['peer']['context'].get('date', '?')}.\n"
    where = (machine.gpu if machine.has_gpu else
             f"{c.get('triptych_cpu', 'the CPU')} ({c.get('num_cpus', '?')} × "
             f"{c.get('mhz_per_cpu', '?')} MHz, OpenMP threads {c.get('triptych_omp_threads', '?')}, "
             f"{start_text(c)} when the run started)")
    return (f"Measured on: {where}, host {c.get('host_name', '?')}, {c.get('date', '?')}, "
            f"build {c.get('triptych_build', '?')} ({c.get('triptych_build_type', '?')}); "
            f"recorded in [{os.path.basename(link)}]({link}) by "
            "tools/lesson_tables.py.\n\n" + text)


def cpu_text(context):
    """'AMD EPYC (family 25, model 17), code compiled for AVX-512, ': the CPU a run was on, as
    triptych_bench records it (runs before it did have nothing here)."""
    return f"{context['triptych_cpu']}, " if context.get("triptych_cpu") else ""


def start_text(context):
    """'load average 0.10, 62 ns between CPU 0 and CPU 1 for a cache line's round trip': the
    machine as a run started (runs recorded before triptych_bench measured the round trip have
    only the load)."""
    load = context.get("load_avg")
    text = f"load average {load[0]:.2f}" if isinstance(load, list) and load else "load ?"
    if "triptych_cpu_round_trip" in context:
        text += f", {context['triptych_cpu_round_trip']} for a cache line's round trip"
    return text


def check_markers(path, text):
    """ReportError unless every "<!-- generated table" line of `text` starts a well-formed block
    that ends before the next one starts: a misspelt or missing end marker would otherwise make
    a block swallow the prose and the table after it, and --write delete them."""
    def line(position):
        return text.count("\n", 0, position) + 1
    blocks = list(BLOCK.finditer(text))
    for m in blocks:
        inner = m[5].find("<!-- generated table")
        if inner >= 0:
            raise report.ReportError(f"{path}:{line(m.start())}: the generated table has no end "
                                     "marker before the next one starts, at line "
                                     f"{line(m.start(5) + inner)}")
    matched = {m.start() for m in blocks}
    for start in (m.start() for m in re.finditer(r"<!-- generated table", text)):
        if start not in matched:
            raise report.ReportError(f"{path}:{line(start)}: a generated table marker that is "
                                     "not '<!-- generated table: SECTION, source FILE[, "
                                     "OPTIONS] -->', then the table, then '<!-- end of "
                                     "generated table -->'")


def regenerated(path, render_tables=True):
    """(old text, new text, [(section, source path)]) of one README."""
    old = read_readme(path)
    check_markers(path, old)
    folder, found = os.path.dirname(path), []

    def replace(m):
        source = os.path.join(folder, m[3])
        found.append((m[2], source))
        return m[1] + (render(m[2], source, m[3], m[4]) if render_tables else m[5]) + m[6]
    return old, BLOCK.sub(replace, old), found


def record(run_path, lessons, peer_path=None):
    """The rows each lesson's tables need from `run_path` (and the peer's results of the same
    ops from `peer_path`), as (source path, doc) to record."""
    doc = report.load_json(run_path)
    writes = []
    peer = report.json_or_none(peer_path, "the peer figures") if peer_path else None
    if peer_path:
        report.peer_figures(peer, peer_path)  # refused here if it is not the peer's JSON
    for path in lesson_readmes(lessons):
        _, _, found = regenerated(path, render_tables=False)
        for section, source in found:
            if section in ("counted", "barriers", "noted"):
                continue
            if section == "bench":
                source_doc = load_bench_source(source)
                other = {k: v for k, v in source_doc.get("build", {}).items()
                         if str(doc["context"].get(k, "?")) != v}
                if other:  # a table of another build: this run is not its run
                    print(f"{os.path.relpath(source, ROOT)}: kept as it was, it records a build "
                          "with " + ", ".join(f"{k} {v} (the run's: "
                                              f"{doc['context'].get(k, '?')})"
                                              for k, v in other.items()))
                    continue
                missing = [row for row in source_doc["rows"]
                           if not any(is_row(e, row) for e in doc["benchmarks"])]
                if missing:  # a table is measured by one run: all its rows, or it is kept
                    print(f"{os.path.relpath(source, ROOT)}: kept as it was, {run_path} lacks "
                          f"{len(missing)} of its {len(source_doc['rows'])} rows ({missing[0]}, "
                          "...)" if len(missing) > 1 else f"{os.path.relpath(source, ROOT)}: "
                          f"kept as it was, {run_path} lacks its row {missing[0]}")
                    continue
                kept = [bench_entry(doc, row, run_path) for row in source_doc["rows"]]
                writes.append((source, dict({k: v for k, v in source_doc.items()
                                             if k in ("command", "rows", "build")},
                                            context=doc["context"], benchmarks=kept)))
                continue
            wanted = SECTION_OPS[section]
            if section in SECTIONS_OF_A_GPU and not report.Machine(doc["context"]).has_gpu:
                print(f"{os.path.relpath(source, ROOT)}: {run_path} ran on no GPU; kept as it was")
                continue
            kept = [e for e in doc["benchmarks"]
                    if run_name(e).split("/")[0] in wanted]
            # The table's own op must be in the run: the copy rows alone are not its run.
            if not any(run_name(e).split("/")[0] == wanted[0] for e in kept):
                print(f"{os.path.relpath(source, ROOT)}: {run_path} has no rows of "
                      f"{wanted[0]}; kept as it was")
                continue
            if os.path.exists(source):  # a new run must measure every row the table has
                had = {run_name(e) for e in report.load_json(source).get("benchmarks", [])}
                lacking = had - {run_name(e) for e in kept}
                if lacking:
                    print(f"{os.path.relpath(source, ROOT)}: kept as it was, {run_path} lacks "
                          f"{len(lacking)} of the {len(had)} rows it records "
                          f"({sorted(lacking)[0]}, ...)")
                    continue
            recorded = {"context": doc["context"], "benchmarks": kept}
            peer_ops = SECTION_PEER_OPS.get(section, wanted)
            peer_results = [r for r in (peer or {}).get("results", []) if r.get("op") in peer_ops]
            if peer_results:
                recorded["peer"] = dict(peer, results=peer_results)
            writes.append((source, recorded))
    return writes


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--check", action="store_true", help="fail if a table is out of date")
    group.add_argument("--write", action="store_true",
                       help="rewrite every table from its recorded source (after editing one)")
    group.add_argument("--from", dest="run", metavar="JSON", help="record this benchmark run")
    parser.add_argument("--peer", metavar="JSON",
                        help="with --from: bench/pytorch_peer.py's figures of the same machine")
    group.add_argument("--count", metavar="TRIPTYCH",
                       help="recount and record every counted table with this sim build's triptych")
    parser.add_argument("--triptych", metavar="TRIPTYCH",
                        help="with --check: also recount, and fail if a recorded count differs")
    parser.add_argument("--lessons", default=os.path.join(ROOT, "lessons"),
                        help="the folder of lesson folders (default: the project's lessons/)")
    args = parser.parse_args(argv)
    try:
        if args.peer and not args.run:
            parser.error("--peer goes with --from")
        if args.triptych and not args.check:
            parser.error("--triptych goes with --check")
        if args.run:
            write_sources(record(args.run, args.lessons, args.peer), args.lessons)
        if args.count:
            write_sources(recount(args.count, args.lessons, write=True), args.lessons)
        stale = []
        if args.check and args.triptych:
            recounted = recount(args.triptych, args.lessons, write=False)
            if recounted:
                print("lesson_tables.py: the simulator no longer counts what " +
                      ", ".join(recounted) + " records (tools/lesson_tables.py --count "
                      "build/tools/triptych records the new counts)", file=sys.stderr)
                return 1
        for path in lesson_readmes(args.lessons):
            old, new, _ = regenerated(path)
            if old == new:
                continue
            if args.check:
                stale.append(os.path.relpath(path, ROOT))
            else:
                write_whole(path, new)
                print(f"rewrote the generated tables of {os.path.relpath(path, ROOT)}")
        if stale:
            print("lesson_tables.py: generated tables out of date in " + ", ".join(stale) +
                  " (tools/lesson_tables.py --from <run.json> or --count <triptych> rewrites them)", file=sys.stderr)
            return 1
    except report.ReportError as e:
        print(f"lesson_tables.py: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # a program or a file that cannot be run, read or written
        print(f"lesson_tables.py: {e}", file=sys.stderr)
        return 1
    except (KeyError, TypeError, AttributeError, IndexError, ValueError, ZeroDivisionError,
            OverflowError, RecursionError) as e:
        # A recorded source (or a run) of the wrong form: nothing was written (write_sources).
        print(f"lesson_tables.py: a recorded figure cannot be made into its table "
              f"({type(e).__name__}: {e})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
