"""The table of removed barriers (lesson 03): what each thread order and the race checker make of
a kernel with one of its barriers left out, counted by the simulator rather than typed by hand.

A barrier is named by its kernel and its place there, {"file": "gpu/tiled/gemm.cu", "function":
"gemm_double_buffer_kernel", "barrier": 2} for the second __syncthreads() or __syncwarp() of that
function's body (comments are not code), and run as {"backend": "gpu_tiled@8"}. The source JSON
holds the rows and what the check is ({"check": ["--op", "gemm", "--seed", "5"], "orders":
["forward", "reverse", "random:1"], "rows": [...]}); each row, once counted, holds the line that
barrier was on and what `triptych check` printed with it removed (TRIPTYCH_SIM_SKIP_SYNC=FILE:LINE),
once per order and once under --racecheck. Used by tools/lesson_tables.py (the `barriers` table);
standard library only (and bench/report.py).
"""
import os
import re
import subprocess

import report  # bench/report.py, on the path lesson_tables.py sets

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth"]
BARRIER = re.compile(r"\b(__syncthreads|__syncwarp)\s*\(")
SUMMARY = re.compile(r"^(\d+) passed, (\d+) failed", re.M)


def without_comments(text):
    """`text` with its // and /* */ comments blanked and its line breaks kept, so that positions
    still give line numbers; string literals with comment marks in them are not expected here."""
    return re.sub(r"//[^\n]*|/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m[0]), text, flags=re.S)


def matching(code, start, opening, closing):
    """The position just after the bracket that closes the one at `start`."""
    depth = 0
    for i in range(start, len(code)):
        depth += {opening: 1, closing: -1}.get(code[i], 0)
        if depth == 0:
            return i + 1
    raise report.ReportError(f"a '{opening}' with no '{closing}' to close it")


def function_body(code, function):
    """(start, end) of the body of the definition of `function` in `code`: the first `name(...)`
    followed, after its qualifiers, by `{` rather than `;`."""
    for m in re.finditer(r"\b" + re.escape(function) + r"\s*\(", code):
        if re.search(r"(?<!:)[(,=!&|?:]\s*$", code[max(0, m.start() - 200):m.start()]):
            continue  # a call inside an expression, `if (f(x)) {`, is no definition
        after = matching(code, m.end() - 1, "(", ")")
        brace = re.match(r"[^;{}]*\{", code[after:])
        if brace:
            start = after + brace.end() - 1
            return start, matching(code, start, "{", "}")
    return None


def barrier_line(row):
    """(line, 'barrier as written') of the row's barrier; ReportError if its file, function or
    barrier is not there."""
    path = os.path.join(ROOT, row["file"])
    try:
        with open(path, encoding="utf-8") as f:
            code = without_comments(f.read())
    except OSError as e:
        raise report.ReportError(f"the removed-barrier table names {row['file']}: {e}")
    body = function_body(code, row["function"])
    if body is None:
        raise report.ReportError(f"{row['file']} defines no function {row['function']}")
    found = list(BARRIER.finditer(code, *body))
    n = row["barrier"]
    if not 1 <= n <= len(found):
        raise report.ReportError(f"{row['function']} in {row['file']} has {len(found)} barriers, "
                                 f"not a barrier number {n}")
    m = found[n - 1]
    return code.count("\n", 0, m.start()) + 1, m[1] + "()"


def site(row, line):
    return f"{row['file']}:{line}"


def run_check(triptych, args, row, line, order, racecheck=False):
    """`triptych check ARGS --backend V` with the row's barrier removed: (passed, failed, rows),
    rows the (shape, verdict) of each printed case. ReportError if the check did not run to its
    summary, or if no barrier ran at that line (so nothing was removed)."""
    env = dict(os.environ, TRIPTYCH_SIM_ORDER=order, TRIPTYCH_SIM_SKIP_SYNC=site(row, line))
    for setting in ("TRIPTYCH_SIM_RACECHECK", "TRIPTYCH_SIM_PROFILE", "TRIPTYCH_SIM_GRID_ROWS"):
        env.pop(setting, None)  # the counts are of the simulator's defaults
    command = [triptych, "check", *args, "--backend", row["backend"]]
    command += ["--racecheck"] if racecheck else []
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    summary = SUMMARY.search(done.stdout)
    what = f"TRIPTYCH_SIM_SKIP_SYNC={site(row, line)} {' '.join(command)}"
    if done.returncode not in (0, 1) or summary is None:
        raise report.ReportError(f"{what} failed (exit status {done.returncode}):\n"
                                 f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    # The simulator names the line from the source tree's root, or in full if it lies elsewhere.
    if not re.search(rf"the barrier at \S*{re.escape(site(row, line))} is removed", done.stderr):
        raise report.ReportError(f"{what}: no barrier ran at {site(row, line)}, so nothing was "
                                 "removed (is the backend one whose kernel has it?)")
    # Each case's row: op, variant, device (26 columns), then the shape up to the first space.
    rows = []
    for text in done.stdout.splitlines():
        m = re.match(r"(\S+) +(\S+) +.{26} (\S+).*? (PASS|FAIL)(:.*)?$", text)
        if m and m[2] == row["backend"]:
            rows.append((m[3], "race" if "race check" in (m[5] or "") else m[4]))
    return int(summary[1]), int(summary[2]), rows


def shapes_passing(rows):
    """The shapes (in the order printed) every case of which passed."""
    shapes = list(dict.fromkeys(shape for shape, _ in rows))
    return [s for s in shapes if all(v == "PASS" for shape, v in rows if shape == s)]


def count_row(triptych, source, row):
    """What the checks print with the row's barrier removed, to record under its "counted"."""
    line, call = barrier_line(row)
    failed, passing, shapes = {}, None, None
    args = source["check"]
    for order in source["orders"]:
        passed, failed[order], rows = run_check(triptych, args, row, line, order)
        if not rows or passed + failed[order] != len(rows):
            raise report.ReportError(f"triptych check {' '.join(args)} printed "
                                     f"{len(rows)} cases of {row['backend']} but counted "
                                     f"{passed + failed[order]}")
        cases = len(rows)
        shapes = shapes or list(dict.fromkeys(shape for shape, _ in rows))
        here = shapes_passing(rows)
        passing = here if passing is None else [s for s in passing if s in here]
    _, _, race_rows = run_check(triptych, args, row, line, "forward", racecheck=True)
    return {"line": line, "call": call, "cases": cases, "failed": failed,
            "passing_shapes": passing, "shapes": len(shapes),
            "shapes_with_a_race": len({s for s, verdict in race_rows if verdict == "race"})}


def load(path):
    doc = report.json_or_none(path, "the removed-barrier table's source")
    if (not isinstance(doc, dict) or not isinstance(doc.get("rows"), list)
            or not isinstance(doc.get("check"), list) or not isinstance(doc.get("orders"), list)):
        raise report.ReportError(f"{path} is not a removed-barrier table's source ({{\"check\": "
                                 "[...], \"orders\": [...], \"rows\": [...]}})")
    return doc


def recount(triptych, path):
    """The source at `path` with every row counted again."""
    doc = load(path)
    rows = [dict({k: v for k, v in row.items() if k != "counted"},
                 counted=count_row(triptych, doc, row)) for row in doc["rows"]]
    return dict(doc, rows=rows)


def shape_text(shape):
    return shape.replace("x", "×").replace(",", "×")


def render(path, link):
    """The table, from the recorded source. A row's barrier that has moved to another line since
    it was counted shows the new line, so that the table no longer matches the README."""
    doc = load(path)
    orders = doc["orders"]
    body = []
    for row in doc["rows"]:
        if "counted" not in row:
            raise report.ReportError(f"{path}: the barrier {row['barrier']} of {row['function']} "
                                     "has no counts yet (tools/lesson_tables.py --count TRIPTYCH)")
        c = row["counted"]
        line, call = barrier_line(row)
        line_text = (f"{os.path.basename(row['file'])}:{line}" if line == c["line"] else
                     f"{os.path.basename(row['file'])}:{line}, counted at line {c['line']}")
        counts = [f"{c['failed'][orders[0]]} of {c['cases']} fail",
                  *(str(c["failed"][o]) for o in orders[1:])]
        passing = ", ".join(shape_text(s) for s in c["passing_shapes"]) or "none"
        races = f"a race in {c['shapes_with_a_race']} of {c['shapes']} shapes"
        n = row["barrier"]
        nth = ORDINALS[n - 1] if n <= len(ORDINALS) else f"{n}th"
        body.append([f"the {nth} `{call}` of `{row['function']}`",
                     line_text, row["backend"], *counts, passing, races])
    command = f"triptych check {' '.join(doc['check'])} --backend V"
    return ("Counted with `TRIPTYCH_SIM_SKIP_SYNC=FILE:LINE TRIPTYCH_SIM_ORDER=ORDER "
            f"build/tools/triptych {command[len('triptych '):]}`, once per order, then once with "
            "`--racecheck`; recorded in "
            f"[{os.path.basename(link)}]({link}) by tools/lesson_tables.py --count.\n\n"
            + report.table(["barrier removed", "at", "run as", *orders,
                            "shapes that pass in every order", "race check"], body))
