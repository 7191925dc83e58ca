"""What the three lesson tools (lesson_excerpts.py, lesson_outputs.py, lesson_tables.py) share:
which READMEs they read and how, and how they rewrite a file (plot_training.py writes its chart
that way too)."""
import json
import os
import sys
import tempfile


def fail(message):
    """Ends the tool with `message`, one line on stderr after the tool's name, and exit status 1."""
    sys.exit(f"{os.path.basename(sys.argv[0])}: {message}")


def lesson_readmes(lessons):
    """The README.md of each lesson folder under `lessons`, in lesson order. A `lessons` that is
    not a folder ends the tool with a one-line error: checking nothing must not pass."""
    if not os.path.isdir(lessons):
        fail(f"{lessons}: no such folder of lessons")
    return [os.path.join(lessons, name, "README.md") for name in sorted(os.listdir(lessons))
            if os.path.isfile(os.path.join(lessons, name, "README.md"))]


def project_readmes(root):
    """The project's README.md under `root` (where there is one), then each lesson's."""
    top = os.path.join(root, "README.md")
    return ([top] if os.path.isfile(top) else []) + lesson_readmes(os.path.join(root, "lessons"))


def read_readme(path, root=os.curdir):
    """A README's text. One that cannot be read as UTF-8 ends the tool with a one-line error
    naming it, relative to `root`."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        fail(f"{os.path.relpath(path, root)}: cannot be read as UTF-8 text ({e})")


def replace_file(path, write, suffix=""):
    """Calls write(temporary path) for a temporary file of its own beside `path` (ending in
    `suffix`, for programs that choose a format by it), then renames it over `path`: an
    interrupted or failed write never leaves a file half-written, and the temporary file is
    removed. The new file keeps the old one's mode, or takes the umask's."""
    folder, name = os.path.split(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(prefix=f".{name}.tmp-", suffix=suffix, dir=folder)
    os.close(fd)
    try:
        write(temporary)
        # mkstemp's 0600 would hide the file from others.
        umask = os.umask(0)
        os.umask(umask)
        mode = os.stat(path).st_mode & 0o777 if os.path.exists(path) else 0o666 & ~umask
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def write_whole(path, text):
    """replace_file with `text`."""
    def write(temporary):
        with open(temporary, "w", encoding="utf-8") as f:
            f.write(text)
    replace_file(path, write)


def write_json(path, doc):
    """write_whole of `doc` as indented JSON."""
    write_whole(path, json.dumps(doc, indent=1) + "\n")
