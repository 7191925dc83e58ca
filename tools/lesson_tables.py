#!/usr/bin/env python3
"""Keeps the measured tables the lessons quote equal to the benchmark runs they come from.

    tools/lesson_tables.py --check              exit 1 if a lesson's table differs from its source
    tools/lesson_tables.py --from run.json      record a new run (triptych report's
                                                report/benchmarks.json, or triptych_bench JSON)
                                                as every table's source, then rewrite the tables

A lesson's README marks each generated table:

    <!-- generated table: gemm_ladder, source ladder.json -->
    ...
    <!-- end of generated table -->

`source` is a benchmark JSON next to the README. The table between the markers is what
bench/report.py writes for that section from the source (its machine, date and GPU stated above
it); while no source has been recorded, it says so and how to record one. Nobody types the numbers.
Standard library only (and bench/report.py).
"""
import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import report  # noqa: E402  (bench/report.py)

BLOCK = re.compile(r"(<!-- generated table: (\w+), source ([\w./-]+) -->\n)(.*?)"
                   r"(<!-- end of generated table -->)", re.S)
# The rows each table needs from a run, so that a recorded source stays small.
SECTION_OPS = {"gemm_ladder": ("gemm",)}


def render(section, source_path):
    """The Markdown between the markers: the table of `section` from the run at `source_path`."""
    if section not in SECTION_OPS:
        raise report.ReportError(f"unknown generated table '{section}' (known: "
                                 f"{', '.join(SECTION_OPS)})")
    if not os.path.exists(source_path):
        return ("No run has been recorded for this table yet: it needs a machine with an NVIDIA "
                "GPU. There, run `triptych report --filter '^gemm/'`, then "
                "`tools/lesson_tables.py --from report/benchmarks.json`, which records the run "
                f"next to this lesson ({os.path.basename(source_path)}) and writes the table "
                "here.\n")
    doc = report.load_json(source_path)
    rows, _ = report.parse_rows(doc)
    machine = report.Machine(doc["context"])
    c = doc["context"]
    text = report.ladder_section(rows, machine).split("\n", 2)[2]  # without its heading
    return (f"Measured on: {machine.gpu}, host {c.get('host_name', '?')}, {c.get('date', '?')}, "
            f"build {c.get('triptych_build', '?')} ({c.get('triptych_build_type', '?')}); "
            f"recorded in [{os.path.basename(source_path)}]({os.path.basename(source_path)}) by "
            "tools/lesson_tables.py.\n\n" + text)


def readmes(lessons):
    for name in sorted(os.listdir(lessons)):
        path = os.path.join(lessons, name, "README.md")
        if os.path.isfile(path):
            yield path


def regenerated(path):
    """(old text, new text, [(section, source path)]) of one README."""
    with open(path, encoding="utf-8") as f:
        old = f.read()
    folder, found = os.path.dirname(path), []

    def replace(m):
        source = os.path.join(folder, m[3])
        found.append((m[2], source))
        return m[1] + render(m[2], source) + m[5]
    return old, BLOCK.sub(replace, old), found


def record(run_path, lessons):
    """Copies the rows each lesson's tables need from `run_path` to their sources."""
    doc = report.load_json(run_path)
    for path in readmes(lessons):
        _, _, found = regenerated(path)
        for section, source in found:
            wanted = SECTION_OPS[section]
            kept = [e for e in doc["benchmarks"]
                    if e.get("run_name", e.get("name", "")).split("/")[0] in wanted]
            if not kept:
                raise report.ReportError(f"{run_path} has no rows of {', '.join(wanted)} for "
                                         f"{os.path.relpath(path, ROOT)}")
            with open(source + ".tmp", "w", encoding="utf-8") as f:
                json.dump({"context": doc["context"], "benchmarks": kept}, f, indent=1)
                f.write("\n")
            os.replace(source + ".tmp", source)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--check", action="store_true", help="fail if a table is out of date")
    group.add_argument("--from", dest="run", metavar="JSON", help="record this benchmark run")
    parser.add_argument("--lessons", default=os.path.join(ROOT, "lessons"),
                        help="the folder of lesson folders (default: the project's lessons/)")
    args = parser.parse_args(argv)
    try:
        if args.run:
            record(args.run, args.lessons)
        stale = []
        for path in readmes(args.lessons):
            old, new, _ = regenerated(path)
            if old == new:
                continue
            if args.check:
                stale.append(os.path.relpath(path, ROOT))
            else:
                with open(path + ".tmp", "w", encoding="utf-8") as f:
                    f.write(new)
                os.replace(path + ".tmp", path)
                print(f"rewrote the generated tables of {os.path.relpath(path, ROOT)}")
        if stale:
            print("lesson_tables.py: generated tables out of date in " + ", ".join(stale) +
                  " (tools/lesson_tables.py --from <run.json> rewrites them)", file=sys.stderr)
            return 1
    except report.ReportError as e:
        print(f"lesson_tables.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
