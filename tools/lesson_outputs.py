#!/usr/bin/env python3
"""Keeps the outputs the lessons quote equal to what their programs print.

    tools/lesson_outputs.py --check --bin DIR    exit 1 if a quoted output is not what the program
                                                 prints now (DIR: a sim build's build/lessons)
    tools/lesson_outputs.py --check --only NAME --bin DIR
                                                 the same for program NAME's blocks alone
                                                 (a lesson program, or triptych)
    tools/lesson_outputs.py --write --bin DIR    run every marked program and quote what it prints
                                                 where the quote is stale
    tools/lesson_outputs.py --write --only NAME --bin DIR
                                                 quote program NAME's output anew, stale or not
                                                 (its errors, say, after a change that rounds
                                                 differently, when it was recorded on another
                                                 kind of machine, where they are not compared)
    tools/lesson_outputs.py ... --root R         the lessons of the source tree R (default: this one)

A lesson's README marks each output it quotes with the program and its arguments:

    <!-- output: lesson_07_kernel_fusion 7 -->           the whole output
    <!-- output: lesson_09_conv_im2col 7; part -->        some of its lines
    <!-- output: triptych train --epochs 1; part -->    the command-line tool, build/tools/triptych
    <!-- output: OMP_NUM_THREADS=1 lesson_06_losses_reductions 7 -->
                                                          with this environment
    <!-- output: triptych train --limit 99999999 2>&1; part -->
                                                          its error output too, after the
                                                          standard output (else only that)
    ```
    seed 7 (replay: build/lessons/lesson_07_kernel_fusion 7)
    ...
    ```

An exercise that asks for an edit to the source ("replace this line by that one, rebuild, run")
states it in edit marks (one per replacement) right above the output mark of what the program
then prints:

    <!-- edit: gpu/naive/losses.cu: `row_loss[row] = (max - in[target]) + logf(sum);` → `row_loss[row] = 0;` -->
    <!-- output: triptych check --op softmax_cross_entropy --backend gpu_naive --seed 7; part -->

The check builds the program again with the edits made (OLD, up to the first "` → `", must
occur once in the file; tools/edited_build.py compiles only what depends on it, into a
temporary folder, and leaves the source and the build as they are) and compares the block with
what that program prints; it may exit with an error status, but not be killed by a signal. A
command that records memory accesses (triptych profile, triptych check --racecheck) runs the
program's instrumented twin, which is then built again with the edits too.

Besides the lessons' READMEs, the check reads the project's README.md. It runs the program (as
build/lessons/NAME, or build/tools/triptych, with OMP_NUM_THREADS=2 unless the mark sets it, so
the thread counts it prints are the same on every machine, in an empty temporary folder) and
compares the block with its output line by line, column by column, except where the program
says a field varies. Its lines must be printed one after another, and a line "..." skips printed
lines; a block marked "part" may start and end anywhere in the output. Under
TRIPTYCH_LESSON_OUTPUT=marked a lesson program prints each field that varies between marks
(lessons/lesson.hpp):

    \u27e6 ... \u27e7   measured: a time, a rate, a ratio of times; never compared
    \u27e8 ... \u27e9   the machine's: an error that depends on the instruction set the CPU code was
               compiled for (-march=native) and on the CPU; compared only on a machine of the kind
               the output was recorded on, which --write notes in the mark ("recorded on
               AMD EPYC (family 26, model 2), x86-64 AVX-512")

A stale block fails the check with the first line that differs. --write rewrites each stale block
with the program's whole output, times included (say next to a block where its times were taken),
and leaves the blocks that are up to date as they are. A block whose ``` fence is never closed, or
whose program fails (exits with an error status where the block has no edits, or is killed),
fails the check too, though it is not called stale, and --write leaves its README as it was.
Standard library only.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

from edited_build import Edit, EditError, build_edited
from lesson_files import project_readmes, read_readme, write_whole

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MARK = re.compile(r"^<!-- output: ((?:[A-Z][A-Z0-9_]*=\S* )*)([^\s;]+)((?: [^;]+?)?)((?:; part)?)"
                  r"(?:; recorded on (.+?))? -->$")
EDIT = re.compile(r"^<!-- edit: (\S+): `(.+?)` \u2192 `(.*)` -->$")
MEASURED = ("\u27e6", "\u27e7")
MACHINE = ("\u27e8", "\u27e9")
FIELD = re.compile("(\u27e6.*?\u27e7|\u27e8.*?\u27e9)")


class OutputError(Exception):
    pass


class ProgramFailed(OutputError):
    """A marked program that exited with an error status, or was killed, where its block expects
    no failure: what it printed is not what its block quotes, so the block is not called stale.
    `command` as a reader would type it, `ended` how it ended ("exit status 2"), `errors` the
    lines of its error output."""

    SHOWN = 5  # the lines of its error output the message shows

    def __init__(self, command, ended, errors):
        self.command, self.ended, self.errors = command, ended, errors
        super().__init__(self.saying())

    def saying(self, then=""):
        """'COMMAND failed (exit status 2)THEN; its error output begins:' and its first lines."""
        if not self.errors:
            return f"{self.command} failed ({self.ended}){then}, with no error output"
        shown = self.errors[:self.SHOWN] + (["..."] if len(self.errors) > self.SHOWN else [])
        return (f"{self.command} failed ({self.ended}){then}; its error output begins:"
                + "".join(f"\n    {line}" for line in shown))


def machine_kind():
    """The CPU here, its family and model, and the instruction set the CPU code is compiled for
    (-march=native), e.g. 'AMD EPYC (family 26, model 2), x86-64 AVX-512'. The family and model
    matter: OpenBLAS picks its kernels by them, so two CPUs of one name and instruction set (a
    Zen 4 and a Zen 5 EPYC, both AVX-512) still round differently."""
    flags, fields = set(), {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "cpu family", "model") and key not in fields:
                    fields[key] = " ".join(value.split())
                if key == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    cpu = fields.get("model name", "unknown CPU")
    if "cpu family" in fields and "model" in fields:
        cpu += f" (family {fields['cpu family']}, model {fields['model']})"
    arch = os.uname().machine.replace("_", "-")
    isa = next((f"{arch} {name}" for flag, name in
                (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX")) if flag in flags), arch)
    return f"{cpu}, {isa}"


def plain(line):
    """A marked output line as a reader sees it: the marks removed."""
    return FIELD.sub(lambda m: m.group(0)[1:-1], line)


def pattern(line, compare_machine):
    """A regex that a quoted line must match: the program's line with its varying fields free.
    Spacing is free too (one space or more between words, any next to a varying field), because a
    wider time shifts the columns after it."""
    items = []  # (spaces before it: "" | "some", is it varying, regex)
    spaces = ""
    for piece in FIELD.split(line.rstrip()):
        if not piece:
            continue
        marked = piece[0] in (MEASURED[0], MACHINE[0])
        text = piece[1:-1] if marked else piece
        varying = piece[0] == MEASURED[0] or (piece[0] == MACHINE[0] and not compare_machine)
        if varying:
            if text.strip():
                items.append((spaces or text[:1].isspace(), True, r"\S+(?:\s+\S+)*?"))
                spaces = ""
            continue
        for word in re.split(r"(\s+)", text):
            if not word:
                continue
            if word.isspace():
                spaces = "some"
            else:
                items.append((spaces, False, re.escape(word)))
                spaces = ""
    regex = r"\s*"
    for i, (space, varying, piece) in enumerate(items):
        if i > 0:
            if varying or items[i - 1][1]:
                regex += r"\s*"
            elif space:
                regex += r"\s+"
        regex += piece
    return re.compile(regex + r"\s*")


class Block:
    """A marked output block: the index of its mark line, the environment and the command it
    quotes, whether it is a part, the machine it was recorded on (or None), lines[first:end]
    its body, and the edits to the source made before its program is built (an exercise's)."""

    def __init__(self, mark, env, program, args, part, recorded_on, first, end, edits):
        self.mark, self.env, self.program, self.args = mark, env, program, args
        self.part, self.recorded_on, self.first, self.end, self.edits = (part, recorded_on, first,
                                                                          end, edits)

    def command(self, program=None):
        """The command the block quotes, with its program called `program` if one is given."""
        return " ".join([*(f"{k}={v}" for k, v in self.env.items()), program or self.program,
                         *self.args])


def closing_fence(lines, first):
    """The index of the ``` line that closes the block whose body starts at lines[first]. A block
    left open, to the end of the README or to the next output mark, is an OutputError naming the
    line of its opening fence: its body would run on over the prose and blocks after it, which
    the check would call stale and --write replace."""
    for end in range(first, len(lines)):
        if lines[end].startswith("```"):
            return end
        if re.match(r"<!--\s*output\b", lines[end]):
            raise OutputError(f"line {first}: the output block has no closing ``` fence before "
                              f"the next output mark, at line {end + 1}")
    raise OutputError(f"line {first}: the output block has no closing ``` fence")


def blocks(text):
    """Each marked output block of a README, as a Block."""
    lines = [line.strip() for line in text.split("\n")]  # a block may be a list item's
    for i, line in enumerate(lines):
        if re.match(r"<!--\s*edit\b", line):
            if not EDIT.match(line):
                raise OutputError(f"line {i + 1}: an edit mark not of the form '<!-- edit: FILE: "
                                  "`OLD` \u2192 `NEW` -->'")
            below = i + 1
            while below < len(lines) and EDIT.match(lines[below]):
                below += 1
            if below >= len(lines) or not MARK.match(lines[below]):
                raise OutputError(f"line {i + 1}: an edit mark must stand above an output mark "
                                  "(or another edit mark above one): the output it changes")
        mark = MARK.match(line)
        if not mark:
            if re.match(r"<!--\s*output\b", line):  # skipped, its block would go unchecked
                raise OutputError(f"line {i + 1}: an output mark not of the form '<!-- output: "
                                  "[NAME=VALUE ...] PROGRAM [ARGS][; part][; recorded on "
                                  "MACHINE] -->'")
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            raise OutputError(f"line {i + 1}: an output mark must stand right above a ``` block")
        end = closing_fence(lines, i + 2)
        edits, above = [], i - 1
        while above >= 0 and EDIT.match(lines[above]):
            edits.insert(0, Edit(*EDIT.match(lines[above]).groups()))
            above -= 1
        env = dict(word.split("=", 1) for word in mark.group(1).split())
        yield Block(i, env, mark.group(2), mark.group(3).split(), bool(mark.group(4)),
                    mark.group(5), i + 2, end, edits)


def command_of(bin_dir, program):
    """(the executable, the name it is quoted by) of a marked program: build/lessons/PROGRAM, or,
    for `triptych`, the command-line tool next to the lessons (build/tools/triptych)."""
    if program == "triptych":
        return os.path.join(bin_dir, os.pardir, "tools", "triptych"), "build/tools/triptych"
    return os.path.join(bin_dir, program), f"build/lessons/{program}"


class EditedPrograms:
    """The programs built again with an exercise's edits (tools/edited_build.py), each once, in a
    temporary folder removed at the end."""

    def __init__(self, root, bin_dir):
        self.root, self.build = root, os.path.dirname(os.path.abspath(bin_dir))
        self.folder, self.made = None, {}

    def __enter__(self):
        return self

    def __exit__(self, *exception):
        if self.folder:
            shutil.rmtree(self.folder)

    def path(self, program_path, edits, instrumented):
        key = (program_path, tuple(e.key() for e in edits), instrumented)
        if key not in self.made:
            if self.folder is None:
                self.folder = tempfile.mkdtemp(prefix="lesson-edits-")
            work = os.path.join(self.folder, str(len(self.made)))
            os.makedirs(work)
            relative = os.path.relpath(os.path.abspath(program_path), self.build)
            try:
                self.made[key] = build_edited(self.build, relative, edits, self.root, work,
                                              instrumented)
            except EditError as e:
                raise OutputError(f"building {relative} with the edits above the block: {e}")
        return self.made[key]


def records_accesses(block):
    """Whether the block's command runs the simulator's access recorder, which runs the program's
    instrumented twin: `triptych profile`, `triptych check --racecheck`, or the environment's
    TRIPTYCH_SIM_PROFILE or TRIPTYCH_SIM_RACECHECK."""
    return (block.program == "triptych" and block.args[:1] == ["profile"]
            or "--racecheck" in block.args
            or any(block.env.get(k) == "1"
                   for k in ("TRIPTYCH_SIM_PROFILE", "TRIPTYCH_SIM_RACECHECK")))


def run(bin_dir, block, edited, marked=True):
    """What `build/lessons/PROGRAM ARGS` (or `build/tools/triptych ARGS`) prints, as lines:
    marked, or as a reader sees it (the marks would take up room in the program's aligned
    columns). It runs in an empty temporary folder, where the files a command writes (triptych
    train's loss curve, say) go and are removed, with the block's environment, and, where the
    block has edits, as built with them (`edited`, EditedPrograms): then it may exit with an error,
    as an edit that breaks a kernel means it to. Its standard output only, unless the command
    ends with `2>&1`: then its error output too, after the standard output. (A terminal shows
    them as they come; into a pipe a program's standard output goes in blocks, at exit at the
    latest, so no order is kept but the one chosen here, which is a terminal's for a program that
    stops at its error.)"""
    path, name = command_of(bin_dir, block.program)
    args, with_errors = block.args, block.args[-1:] == ["2>&1"]
    if with_errors:
        args = args[:-1]
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise OutputError(f"no program {path}: build it first (cmake --build build --target "
                          f"{'triptych_cli' if block.program == 'triptych' else block.program})")
    if block.edits:
        path = edited.path(path, block.edits, records_accesses(block))
    env = dict(os.environ, OMP_NUM_THREADS="2")
    env.pop("TRIPTYCH_SIM_ORDER", None)
    env.update(block.env)
    env["TRIPTYCH_LESSON_OUTPUT"] = "marked" if marked else "plain"  # whatever the mark says
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run([name, *args], executable=os.path.abspath(path), env=env,
                              cwd=folder, capture_output=True, text=True, timeout=900)
    # An edited program may fail (that is often the exercise), but not crash.
    if done.returncode < 0 or (done.returncode != 0 and not block.edits):
        raise failure(block, name, done)
    printed = done.stdout + done.stderr if with_errors else done.stdout
    return printed.rstrip("\n").split("\n")


def failure(block, name, done):
    """The ProgramFailed of a run (`done`) of the block's program, quoted as `name`."""
    command = block.command(name)
    if block.edits:
        command += " (built with the edits above it)"
    ended = (f"killed by signal {-done.returncode}" if done.returncode < 0
             else f"exit status {done.returncode}")
    errors = done.stderr.rstrip().split("\n") if done.stderr.strip() else []
    return ProgramFailed(command, ended, errors)


def compare(quoted, printed, compare_machine, part):
    """None when the quoted lines are what was printed, in order and one after another (a "..."
    line of the block skips any number of printed lines); a block that is not `part` must also
    start at the first printed line and end at the last. Else what differs first."""
    patterns = [pattern(line, compare_machine) for line in printed]
    position, searching = 0, part
    for number, line in enumerate(quoted, start=1):
        if line.strip() == "...":
            searching = True
            continue
        if searching:
            found = next((i for i in range(position, len(printed))
                          if patterns[i].fullmatch(line)), None)
            if found is None:
                return (f"line {number} of the block is not printed"
                        f"{' after the lines before it' if position else ''}:\n"
                        f"      quoted:  {line.strip()}")
            position, searching = found + 1, False
        elif position >= len(printed):
            return f"line {number} of the block is past the end of the output: {line.strip()}"
        elif not patterns[position].fullmatch(line):
            return (f"line {number} of the block:\n      quoted:  {line.strip()}\n"
                    f"      printed: {plain(printed[position]).strip()}")
        else:
            position += 1
    if not part and not searching and position < len(printed):
        return (f"the program prints more than the block quotes, from: "
                f"{plain(printed[position]).strip()}")
    return None


def check(root, bin_dir, only=None):
    """Compares every block (or, given `only`, that program's) with what its program prints."""
    here, problems, count, skipped = machine_kind(), [], 0, 0
    with EditedPrograms(root, bin_dir) as edited:
        for path in project_readmes(root):
            text = read_readme(path, root)
            where = os.path.relpath(path, root)
            lines = text.split("\n")
            try:
                for block in blocks(text):
                    if only is not None and block.program != only:
                        continue
                    count += 1
                    recorded_on = block.recorded_on
                    if recorded_on and "x86-64" in recorded_on and "(family " not in recorded_on:
                        # machine_kind() names the family and model of an x86 CPU: no machine is
                        # of this kind, so the block's errors would never be compared anywhere.
                        problems.append(("other", f"{where}:{block.mark + 1}: 'recorded on "
                                         f"{recorded_on}' names no CPU family and model, so no "
                                         "machine is of its kind and its errors are never "
                                         "compared; record it again (tools/lesson_outputs.py "
                                         f"--write --only {block.program} --bin DIR)"))
                        continue
                    same_machine = recorded_on == here
                    skipped += recorded_on is not None and not same_machine
                    try:
                        printed = run(bin_dir, block, edited)
                    except ProgramFailed as e:  # nothing to compare: not a stale quote
                        problems.append(("failed", f"{where}:{block.mark + 1}: {e}"))
                        continue
                    differs = compare(lines[block.first:block.end], printed, same_machine,
                                      block.part)
                    if differs:
                        edits = " (built with the edits above it)" if block.edits else ""
                        problems.append(("stale", f"{where}:{block.mark + 1}: the output quoted "
                                         f"for {block.command()}{edits} is stale, {differs}\n    "
                                         "(rerun tools/lesson_outputs.py --write --bin DIR, and "
                                         "read the prose around it again)"))
            except OutputError as e:
                problems.append(("other", f"{where}: {e}"))
    if count == 0 and not problems:  # a misspelt --only, say: checking nothing must not pass
        raise OutputError(f"no quoted output of {only}" if only else "no quoted output at all")
    if problems:
        report_problems(problems, count)
        return 1
    note = (f"; on this {here} machine the errors of {skipped} recorded elsewhere were not "
            "compared" if skipped else "")
    print(f"lesson_outputs: all {count} quoted outputs are what their programs print, times "
          f"excepted{note}")
    return 0


def report_problems(problems, count):
    """Prints each (kind, message) of `problems` and how many of the `count` quoted outputs each
    kind holds: "stale", "failed" (its program failed, so nothing was compared) or "other" (a
    malformed mark or block, or a program that is not there)."""
    for _, message in problems:
        print(message, file=sys.stderr)
    counts = {kind: sum(k == kind for k, _ in problems) for kind in ("stale", "failed", "other")}
    if counts["stale"]:
        print(f"lesson_outputs: {counts['stale']} of {count} quoted outputs are stale",
              file=sys.stderr)
    if counts["failed"]:
        print(f"lesson_outputs: {counts['failed']} of {count} quoted outputs were not compared: "
              "their programs failed", file=sys.stderr)
    if counts["other"]:
        print(f"lesson_outputs: {counts['other']} other problems kept quoted outputs from being "
              "checked", file=sys.stderr)


def write(root, bin_dir, only=None):
    """Rewrites each stale block with the whole output (a block that is up to date keeps its
    times), or, given `only`, every block of that program. A stale block marked "part" quotes only
    some of the output: it is left to be edited by hand."""
    here, partial = machine_kind(), []
    with EditedPrograms(root, bin_dir) as edited:
        for path in project_readmes(root):
            text = read_readme(path, root)
            lines = text.split("\n")
            rewritten = 0
            try:
                marked = list(blocks(text))
            except OutputError as e:
                raise OutputError(f"{os.path.relpath(path, root)}: {e}")
            for block in reversed(marked):
                if only is not None and block.program != only:
                    continue
                try:
                    printed = run(bin_dir, block, edited)
                except ProgramFailed as e:  # its output is no quote: the README stays as it is
                    raise OutputError(f"{os.path.relpath(path, root)}:{block.mark + 1}: "
                                      + e.saying(", so the README is left as it was"))
                if only is None and compare(lines[block.first:block.end], printed,
                                            block.recorded_on == here, block.part) is None:
                    continue
                if block.part:
                    partial.append(f"{os.path.relpath(path, root)}:{block.mark + 1}")
                    continue
                mark = lines[block.mark]
                indent = mark[:len(mark) - len(mark.lstrip())]  # a list item's block
                lines[block.first:block.end] = [(indent + line).rstrip()
                                                for line in run(bin_dir, block, edited, False)]
                lines[block.mark] = (f"{indent}<!-- output: {block.command()}; recorded on "
                                     f"{here} -->")
                rewritten += 1
            if rewritten:
                write_whole(path, "\n".join(lines))
                print(f"{os.path.relpath(path, root)}: {rewritten} stale outputs rewritten; read "
                      "the prose around them again")
    for where in partial:
        print(f"{where}: a stale block that quotes part of the output, not rewritten: edit it "
              "by hand", file=sys.stderr)
    return 1 if partial else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--write", action="store_true")
    parser.add_argument("--bin", required=True, help="the lesson programs (build/lessons)")
    parser.add_argument("--root", default=ROOT, help="the source tree (default: this one)")
    parser.add_argument("--only", metavar="NAME", help="this program's blocks alone (with "
                        "--write: stale or not)")
    args = parser.parse_args()
    try:
        return (check(args.root, args.bin, args.only) if args.check
                else write(args.root, args.bin, args.only))
    except OutputError as e:
        print(f"lesson_outputs: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
