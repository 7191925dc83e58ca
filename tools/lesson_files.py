"""What the three lesson tools (lesson_excerpts.py, lesson_outputs.py, lesson_tables.py) share:
which READMEs they read, and how they rewrite a file."""
import json
import os
import sys
import tempfile


def lesson_readmes(lessons):
    """The README.md of each lesson folder under `lessons`, in lesson order. A `lessons` that is
    not a folder ends the tool with a one-line error: checking nothing must not pass."""
    if not os.path.isdir(lessons):
        sys.exit(f"{os.path.basename(sys.argv[0])}: {lessons}: no such folder of lessons")
    return [os.path.join(lessons, name, "README.md") for name in sorted(os.listdir(lessons))
            if os.path.isfile(os.path.join(lessons, name, "README.md"))]


def write_whole(path, text):
    """Writes `text` to `path` through a temporary file of its own beside it, renamed over it once
    written, so that an interrupted or failed write never leaves a file half-written (the
    temporary file is removed)."""
    folder, name = os.path.split(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(prefix=f".{name}.tmp-", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        # mkstemp's 0600 would hide the file from others: the old file's mode, or the umask's.
        umask = os.umask(0)
        os.umask(umask)
        mode = os.stat(path).st_mode & 0o777 if os.path.exists(path) else 0o666 & ~umask
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def write_json(path, doc):
    """write_whole of `doc` as indented JSON."""
    write_whole(path, json.dumps(doc, indent=1) + "\n")
