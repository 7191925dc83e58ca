#!/usr/bin/env python3
"""Keeps the code the lessons quote equal to the code they quote it from.

    tools/lesson_excerpts.py            exit 1 if a lesson's code block no longer matches its
                                        source, or names none
    tools/lesson_excerpts.py --root R   the same for the source tree R (R/lessons/*/README.md,
                                        R/README.md)

Every C++ block of a README (a fence opened with ```cpp, indented too, as in a list item) is
preceded by a comment that names where it comes from, a path from the root of the source tree and, optionally, an anchor:

    <!-- excerpt: gpu/naive/gemm.cu gemm_naive_kernel -->      quoted as it is written
    <!-- simplified: cpu/naive/gemm.hpp gemm -->                 shortened or rewritten to teach

An excerpt must be found in its file, from the first line that contains the anchor (or the
`template <...>` line right above it, which belongs to what it names): its lines
in the same order, each run of them consecutive in the file. Only code is compared: blank lines,
// comments (on either side: an excerpt may annotate a line), #pragma lines and the amount of
spacing do not count, and a line "..." or "// ..." (which may go on to say what it leaves out) stands for lines
the excerpt leaves out. A simplified block is not compared, but its file and anchor must
still exist, so that a reader can find what it teaches. Standard library only.
"""
import argparse
import os
import re
import sys

from lesson_files import project_readmes, read_readme

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FENCE = re.compile(r"^\s*```(\S*)")  # indented too: a block inside a list item
MARK = re.compile(r"^<!-- (excerpt|simplified): (\S+)(?: (.+?))? -->$")
CODE_LANGUAGES = {"cpp", "c++", "cuda", "c"}


def code_of(line):
    """The line without its // comment, spacing normalised ('' for a comment, a blank line or a
    #pragma, which an excerpt may leave out)."""
    if line.lstrip().startswith("#pragma"):
        return ""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote and line[i - 1] != "\\":
                quote = None
        elif ch in "\"'":
            quote = ch
        elif line.startswith("//", i):
            line = line[:i]
            break
    return " ".join(line.split())


def is_elision(line):
    return line == "..." or line.startswith("// ...")


def runs(lines):
    """The excerpt's lines, normalised, in runs that must be consecutive in the source."""
    out = [[]]
    for raw in lines:
        if is_elision(" ".join(raw.split())):
            out.append([])
        elif code_of(raw):
            out[-1].append(code_of(raw))
    return [r for r in out if r]


def find_run(run, lines, start):
    """The index after the first occurrence of `run` in lines[start:], or None."""
    for i in range(start, len(lines) - len(run) + 1):
        if lines[i:i + len(run)] == run:
            return i + len(run)
    return None


def first_mismatch(excerpt, source_lines):
    """None when every run of the excerpt is found in order; else the first run not found."""
    position = 0
    for run in runs(excerpt):
        found = find_run(run, source_lines, position)
        if found is None:
            return run
        position = found
    return None


def code_blocks(text):
    """(line number of the fence, language, mark line or None, the block's lines) of each block."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        end = i + 1
        while end < len(lines) and not lines[end].lstrip().startswith("```"):
            end += 1
        mark = lines[i - 1].strip() if i > 0 and MARK.match(lines[i - 1].strip()) else None
        yield i + 1, fence.group(1).lower(), mark, lines[i + 1:end]
        i = end + 1


def check_readme(root, path):
    """The problems of one README's code blocks, as 'file:line: what' strings."""
    problems = []
    text = read_readme(path, root)
    where = os.path.relpath(path, root)
    for line, language, mark, block in code_blocks(text):
        if language not in CODE_LANGUAGES:
            if mark:
                problems.append(f"{where}:{line}: a ```{language or ' '} block is marked as code; "
                                "only ```cpp blocks are compared")
            continue
        if mark is None:
            problems.append(f"{where}:{line}: this ```{language} block names no source: put "
                            "<!-- excerpt: PATH [ANCHOR] --> (or simplified:) on the line above")
            continue
        kind, source, anchor = MARK.match(mark).groups()
        source_path = os.path.join(root, source)
        if not os.path.isfile(source_path):
            problems.append(f"{where}:{line}: {source} (named by its {kind} mark) does not exist")
            continue
        with open(source_path, encoding="utf-8", errors="replace") as f:
            source_lines = [code_of(x) for x in f]
        start = 0
        if anchor:
            start = next((i for i, x in enumerate(source_lines) if anchor in x), None)
            # (an anchor is looked for in the code, not in comments)
            if start is None:
                problems.append(f"{where}:{line}: no line of {source} contains the anchor "
                                f"'{anchor}'")
                continue
            # A template header right above the anchor's line belongs to what the anchor names.
            while start > 0 and source_lines[start - 1].startswith("template"):
                start -= 1
        if kind == "simplified":
            continue
        missing = first_mismatch(block, [x for x in source_lines[start:] if x])
        if missing is not None:
            shown = "\n      ".join(missing[:6])
            problems.append(f"{where}:{line}: the excerpt is no longer in {source}"
                            f"{f' after {anchor!r}' if anchor else ''}; these lines are not, "
                            f"in this order:\n      {shown}\n    (quote the code as it is now, or "
                            "mark the block simplified: if it is meant to differ)")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=ROOT, help="the source tree (default: this one)")
    args = parser.parse_args()
    problems, blocks = [], 0
    for path in project_readmes(args.root):
        problems += check_readme(args.root, path)
        blocks += sum(1 for _, lang, _, _ in code_blocks(read_readme(path, args.root))
                      if lang in CODE_LANGUAGES)
    if blocks == 0 and not problems:  # no README with code: checking nothing must not pass
        print(f"lesson_excerpts: no code block in {args.root}'s READMEs", file=sys.stderr)
        return 1
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"lesson_excerpts: {len(problems)} of {blocks} code blocks do not match their source",
              file=sys.stderr)
        return 1
    print(f"lesson_excerpts: all {blocks} code blocks match their sources (or name them, "
          "where simplified)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
