"""Builds one program of a CMake build again with some of the source edited, without touching the
source tree or the build: what a lesson's exercise asks a learner to try ("replace this line by
that one, rebuild, run"), so that what the lesson says then happens can be checked in CI.

    program = build_edited(build, "tools/triptych", [Edit("gpu/naive/losses.cu", old, new)],
                           source, work)

An edit replaces text that occurs exactly once in a file of the source tree. The edited copies go
to a folder of their own in `work`, put first on every compiler's include path: every #include in
triptych names its file from the root of the tree ("gpu/naive/losses.cu"), so an edited file,
a header or a .cu that the simulator build includes from a generated wrapper, is found there
first. Only the object files that depend on an edited file are compiled again (with the build's
own command, from compile_commands.json; which files an object depends on is the compiler's
dependency list, which Ninja keeps in its log and Makefiles in a .d file beside the object), then
each static library holding one of them and the program are linked again (with the build's own
commands: `ninja -t commands`, or the link.txt files of a Makefiles build), everything written
into `work`. Standard library only.

A program that records memory accesses (`triptych profile`, `triptych check --racecheck`) runs its
instrumented twin instead, build/<folder>/instrumented/<name> beside it (cmake/gpu.cmake), found
next to the program that runs: build_edited(..., instrumented=True) builds that twin again with
the same edits and puts it at work/instrumented/<name>, beside the edited program.
"""
import glob
import json
import os
import shlex
import subprocess
from concurrent.futures import ThreadPoolExecutor


class EditError(Exception):
    pass


class Edit:
    """Replace `old`, which must occur exactly once in `path` (relative to the source tree), by
    `new`."""

    def __init__(self, path, old, new):
        self.path, self.old, self.new = path, old, new

    def key(self):
        return (self.path, self.old, self.new)


def _run(command, cwd):
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        shown = command if isinstance(command, str) else shlex.join(command)
        raise EditError(f"`{shown}` (in {cwd}) failed with exit status {done.returncode}:\n"
                        f"{done.stdout}{done.stderr}")
    return done.stdout


def _absolute(cwd, path):
    return os.path.realpath(os.path.join(cwd, path))


def _subcommands(command):
    """A Ninja link command (": && cmake -E rm -f lib.a && ar qc lib.a ... && :") as its parts,
    each a list of words."""
    parts = []
    for part in command.split(" && "):
        words = shlex.split(part)
        if words and words != [":"]:
            parts.append(words)
    return parts


def _archives(parts):
    """Whether a link step makes a static library (`ar qc LIBRARY OBJECTS...`)."""
    return any(len(words) > 2 and words[1] == "qc" for words in parts)


def _output(folder, parts):
    """What a link step makes: the file after -o, or the library of `ar qc LIBRARY ...`."""
    for words in parts:
        if len(words) > 2 and words[1] == "qc":
            return _absolute(folder, words[2])
        for flag, word in zip(words, words[1:]):
            if flag == "-o":
                return _absolute(folder, word)
    raise EditError(f"a link step in {folder} makes nothing: {parts}")


def _link_steps(build, program):
    """[(folder, [command words, ...])] that link the program from its objects: one step for each
    static library a step links, then the program's own step (last)."""
    if os.path.isfile(os.path.join(build, "build.ninja")):
        lines = _run(["ninja", "-C", build, "-t", "commands", program], build).splitlines()
        steps = [(build, _subcommands(line)) for line in lines]
        return _linked_by([step for step in steps if _archives(step[1])], steps[-1])
    if not os.path.isfile(os.path.join(build, "Makefile")):
        raise EditError(f"{build}: neither build.ninja nor Makefile: not a CMake build folder "
                        "of a generator this tool reads (Ninja, Unix Makefiles)")
    steps, program_step = [], None
    target = _absolute(build, program)
    for link in glob.glob(os.path.join(build, "**", "CMakeFiles", "*.dir", "link.txt"),
                          recursive=True):
        folder = os.path.dirname(os.path.dirname(os.path.dirname(link)))
        with open(link, encoding="utf-8") as f:
            parts = [shlex.split(line) for line in f if line.strip()]
        if _archives(parts):
            steps.append((folder, parts))
        elif any(_absolute(folder, word) == target
                 for words in parts for flag, word in zip(words, words[1:]) if flag == "-o"):
            program_step = (folder, parts)
    if program_step is None:
        raise EditError(f"{build}: no link.txt links {program}")
    return _linked_by(steps, program_step)


def _linked_by(library_steps, program_step):
    """The steps of the libraries the program's step names, then the program's."""
    folder, parts = program_step
    libraries = {_absolute(folder, w) for words in parts for w in words}
    return [step for step in library_steps if _output(*step) in libraries] + [program_step]


def _compile_commands(build):
    path = os.path.join(build, "compile_commands.json")
    if not os.path.isfile(path):
        raise EditError(f"{path} is missing: configure the build with CMake again (the project "
                        "sets CMAKE_EXPORT_COMPILE_COMMANDS)")
    with open(path, encoding="utf-8") as f:
        entries = json.load(f)
    commands = {}
    for entry in entries:
        words = shlex.split(entry["command"])
        if "-o" not in words and "output" not in entry:
            raise EditError(f"{path}: a compile command without -o: {entry['command']}")
        output = entry.get("output") or words[words.index("-o") + 1]
        commands[_absolute(entry["directory"], output)] = (entry["directory"], words)
    return commands


def _dependencies(build, objects, commands):
    """{object: set of the files it was compiled from}, for the objects given."""
    found = {}
    if os.path.isfile(os.path.join(build, "build.ninja")):
        current = None
        # -n: a dry run opens Ninja's logs for reading only (else it may rewrite them).
        for line in _run(["ninja", "-C", build, "-n", "-t", "deps"], build).splitlines():
            if line and not line[0].isspace():
                current = _absolute(build, line.split(": #deps")[0])
                found[current] = set()
            elif line.strip() and current is not None:
                found[current].add(_absolute(build, line.strip()))
        return {o: found.get(o, set()) for o in objects}
    for obj in objects:
        folder, words = commands[obj]
        depfile = words[words.index("-MF") + 1] if "-MF" in words else obj + ".d"
        try:
            found[obj] = _read_depfile(_absolute(folder, depfile), folder)
        except OSError:
            raise EditError(f"{obj}: no dependency file {depfile}: build the program first")
    return found


def _read_depfile(path, folder):
    """The files a Make dependency file (`object: source header...`, lines continued with a
    backslash) lists after its target, as absolute paths from `folder`."""
    with open(path, encoding="utf-8") as f:
        text = f.read().replace("\\\n", " ")
    names = text.split(":", 1)[1].split() if ":" in text else []
    return {_absolute(folder, name) for name in names}


def _edited_copies(source, edits, overlay):
    """Writes each edited file under `overlay`, at its path in the tree; returns their paths in
    the tree (absolute)."""
    by_file = {}
    for edit in edits:
        by_file.setdefault(edit.path, []).append(edit)
    originals = set()
    for path, file_edits in by_file.items():
        if os.path.isabs(path) or os.path.normpath(path).startswith(os.pardir):
            raise EditError(f"edit of {path}: name a file inside the source tree, relative to it")
        original = os.path.join(source, path)
        try:
            with open(original, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise EditError(f"edit of {path}: {e.strerror}")
        for edit in file_edits:
            count = text.count(edit.old)
            if count != 1:
                raise EditError(f"edit of {path}: `{edit.old}` occurs {count} times there, "
                                "not once")
            text = text.replace(edit.old, edit.new)
        copy = os.path.join(overlay, path)
        os.makedirs(os.path.dirname(copy), exist_ok=True)
        with open(copy, "w", encoding="utf-8") as f:
            f.write(text)
        originals.add(os.path.realpath(original))
    return originals


def build_edited(build, program, edits, source, work, instrumented=False):
    """The path of `program` (relative to the build folder: "tools/triptych") built again in
    `work` with `edits` made to the source tree `source`; with `instrumented`, its instrumented
    twin as well, where the edited program looks for it."""
    if instrumented:
        folder, name = os.path.split(program)
        twin = os.path.join(folder, "instrumented", name)
        if not os.path.isfile(os.path.join(build, twin)):
            raise EditError(f"{program} has no instrumented copy {twin} in {build} (a sim build "
                            "compiled by GCC, without TRIPTYCH_SANITIZE, makes one)")
        twin_work = os.path.join(work, "twin")
        os.makedirs(twin_work)
        os.makedirs(os.path.join(work, "instrumented"))
        os.replace(build_edited(build, twin, edits, source, twin_work),
                   os.path.join(work, "instrumented", name))
    source = os.path.realpath(source)
    overlay = os.path.join(work, "source")
    edited = _edited_copies(source, edits, overlay)
    steps = _link_steps(build, program)
    commands = _compile_commands(build)

    # The objects the program is linked from, directly or through a static library.
    linked = set()
    for folder, parts in steps:
        for words in parts:
            linked.update(o for o in (_absolute(folder, w) for w in words) if o in commands)
    dependencies = _dependencies(build, linked, commands)
    stale = sorted(o for o in linked if dependencies[o] & edited)
    if not stale:
        raise EditError(f"no object of {program} is compiled from "
                        f"{', '.join(sorted(e.path for e in edits))}")

    replaced = {}  # a path of the build -> its edited stand-in in `work`

    def copy_of(path):
        """The edited copy, under `overlay`, of a file of the tree (absolute)."""
        return os.path.join(overlay, os.path.relpath(path, source))

    def recompile(index, obj):
        folder, words = commands[obj]
        # The edited copies first on the include path; the file names the program prints
        # (__FILE__, std::source_location) those of the source tree.
        words = [words[0], "-I" + overlay, f"-ffile-prefix-map={overlay}={source}"] + words[1:]
        stand_in = os.path.join(work, f"object{index}.o")
        words[words.index("-o") + 1] = stand_in
        if "-MF" in words:
            words[words.index("-MF") + 1] = stand_in + ".d"
        else:
            words += ["-MD", "-MF", stand_in + ".d"]
        words = [copy_of(_absolute(folder, w)) if _absolute(folder, w) in edited else w
                 for w in words]
        _run(words, folder)
        # An #include resolved beside the including file rather than on the include path would
        # have compiled the tree's file, not the edited copy: then the edit did nothing.
        used = _read_depfile(stand_in + ".d", folder)
        if not any(os.path.realpath(copy_of(e)) in used for e in edited & dependencies[obj]):
            raise EditError(f"{obj} was compiled again without the edited copy of "
                            f"{', '.join(sorted(os.path.relpath(e, source) for e in edited))}")
        return obj, stand_in

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        replaced.update(pool.map(lambda item: recompile(*item), enumerate(stale)))

    def relink(folder, parts, output):
        """Runs a link step with the replaced paths swapped in and its output (a `-o` file, or
        the library of an `ar qc`) going to `output`, in every part of the step: a Ninja step
        removes the old library first, which must not be the build's."""
        made = _output(folder, parts)
        for words in parts:
            swapped = []
            for word in words:
                path = _absolute(folder, word)
                swapped.append(output if path == made else replaced.get(path, word))
            _run(swapped, folder)
        return made

    for index, (folder, parts) in enumerate(steps[:-1]):
        members = {_absolute(folder, w) for words in parts for w in words}
        if members & replaced.keys():
            archive = os.path.join(work, f"library{index}.a")
            replaced[relink(folder, parts, archive)] = archive
    result = os.path.join(work, os.path.basename(program))
    relink(*steps[-1], result)
    return result
