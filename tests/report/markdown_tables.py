"""Reads the tables of a Markdown report the way a person does: find the heading, then look a cell
up by its row's first cell and its column's header. Shared by the report tests."""


def tables(markdown):
    """{heading text: [row dicts keyed by column header]} for the first table under each heading
    ('## GEMM throughput (GFLOP/s)' -> 'GEMM throughput (GFLOP/s)')."""
    found, heading, lines = {}, None, markdown.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif line.startswith("|") and heading is not None and heading not in found:
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append([c.strip() for c in lines[i].strip().strip("|").split("|")])
                i += 1
            header, rows = block[0], block[2:]
            found[heading] = [dict(zip(header, row)) for row in rows]
            continue
        i += 1
    return found


def cell(table, row_label, column):
    """The cell in the row whose first cell is `row_label`, under header `column`."""
    for row in table:
        if next(iter(row.values())) == row_label:
            return row[column]
    raise KeyError(f"no row '{row_label}' in table with columns {list(table[0]) if table else []}")


def cell_where(table, column, **where):
    """The cell under `column` in the one row whose cells match `where` (header: text), for tables
    whose rows are told apart by more than their first cell (op and size, variant and shape)."""
    found = [row for row in table if all(row.get(k) == v for k, v in where.items())]
    if len(found) != 1:
        raise KeyError(f"{len(found)} rows match {where} in table with columns "
                       f"{list(table[0]) if table else []}")
    return found[0][column]


def column(table, name):
    return [row[name] for row in table]
