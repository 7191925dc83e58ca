"""What the three lesson tools (lesson_excerpts.py, lesson_outputs.py, lesson_tables.py) share:
which READMEs they read, and how they rewrite a file."""
import json
import os


def lesson_readmes(lessons):
    """The README.md of each lesson folder under `lessons`, in lesson order."""
    if not os.path.isdir(lessons):
        return []
    return [os.path.join(lessons, name, "README.md") for name in sorted(os.listdir(lessons))
            if os.path.isfile(os.path.join(lessons, name, "README.md"))]


def write_whole(path, text):
    """Writes `text` to `path` through a temporary file beside it, renamed over it once written,
    so that an interrupted run never leaves a file half-written."""
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def write_json(path, doc):
    """write_whole of `doc` as indented JSON."""
    write_whole(path, json.dumps(doc, indent=1) + "\n")
