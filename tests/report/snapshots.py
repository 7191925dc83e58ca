"""A folder's files as they are now, to prove later that a command changed none of them. Shared by
the report and tool tests."""
import os


def snapshot(folder, times=False):
    """{path relative to folder: its bytes} of every file under folder; with `times`, {path:
    (bytes, modification time in ns)}, so that a file rewritten with the same bytes counts as
    changed too."""
    found = {}
    for where, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(where, name)
            with open(path, "rb") as f:
                data = f.read()
            found[os.path.relpath(path, folder)] = ((data, os.stat(path).st_mtime_ns) if times
                                                    else data)
    return found
