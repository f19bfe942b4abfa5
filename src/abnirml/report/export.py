"""CSV and LaTeX renderings of report tables, for spreadsheets and papers.

CSV is for programs, so it holds numbers, not display strings (see :func:`tidy_table`): no
thousands separators, signs or ``%``, label cells the report merges repeated on every row,
intervals split into low and high columns, compound cells (``0.96 (0.00)``, ``a / b / c``,
named by ``Table.parts`` or ``Table.row_parts``) into a column or row per number, and the
report's not-significant star moved into a ``<column> significant`` column of
``true``/``false``. A yes/no column is written as ``true``/``false`` too, the report's dash
for a missing value as an empty cell, and a column of ``reason count`` lists
(``Table.tallied``: the transfer table's *Discarded*) as one count column per reason. A
count column where rankers scored different numbers of samples (``36/39``) becomes
``<column> min`` and ``<column> max``, equal on the rows where every ranker agrees.
LaTeX puts numbers in math mode (a real minus sign) and the not-significant mark as a
superscript star, and escapes every special character of user text (probe and ranker
names may hold ``_``, ``%``, ``&``…).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable

from abnirml.report.tables import ZERO_MARK, Table

_NUMBER = re.compile(r"^(\* )?([+\-−]?\d[\d,]*(?:\.\d+)?)(%?)(†?)$")
_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
}


def to_csv(table: Table) -> str:
    header, rows = tidy_table(table)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


_PLAIN_NUMBER = re.compile(r"^[+\-−]?(\d[\d,]*(\.\d+)?|\.\d+)([eE][+\-]?\d+)?$")
_INTERVAL = re.compile(r"^\[\s*(\S+)\s*,\s*(\S+)\s*\]$")
_PLUS_MINUS = re.compile(r"^(\S+)\s*±\s*(\S+)$")
_MISSING = {"", "–", "-", "—"}
#: the report's yes/no cells, written as the true/false of the significance columns
_YES_NO = {"yes": "true", "no": "false"}
_PARENTHESISED = re.compile(r"^(\S+) \((\S+)\)$")
#: the sample-count cell of rankers that scored different numbers (``36/39``, ``1,204/1,210``)
_COUNT_RANGE = re.compile(r"^\d[\d,]*(/\d[\d,]*)*$")


def _number(text: str) -> str | None:
    """``+1,234.5`` / ``−0.05`` / ``0.00†`` → ``1234.5`` / ``-0.05`` / ``0.00``; None when
    ``text`` is no number (the report's exact-zero mark is display only)."""
    text = text.strip().removesuffix(ZERO_MARK)
    if not _PLAIN_NUMBER.match(text):
        return None
    return text.replace(",", "").replace("−", "-").lstrip("+")


def _pieces(text: str, count: int) -> list[str] | None:
    """The ``count`` numbers of a compound cell (``0.96 (0.00)``, ``1,234 / 56 / 0``),
    each as :func:`_number` writes it; None when ``text`` is not such a cell."""
    match = _PARENTHESISED.match(text.strip())
    pieces = [match[1], match[2]] if match else text.strip().split(" / ")
    numbers = [_number(p) for p in pieces]
    if len(numbers) != count or any(n is None for n in numbers):
        return None
    return [n for n in numbers if n is not None]


def _split_rows(table: Table, rows: list[list[str]]) -> list[list[str]]:
    """Rows named in ``table.row_parts`` become one row per number, labelled by its part."""
    out: list[list[str]] = []
    for i, row in enumerate(rows):
        parts = table.row_parts.get(i)
        if not parts:
            out.append(row)
            continue
        for k, label in enumerate(parts):
            cells = [label]
            for cell in row[1:]:
                pieces = _pieces(cell, len(parts))
                cells.append(cell if pieces is None else pieces[k])
            out.append(cells)
    return out


_TALLY = re.compile(r"^([A-Za-z][\w -]*?) (\d[\d,]*)$")


def _tallies(cell: str) -> dict[str, str] | None:
    """``duplicate 1, identical 2,996`` → {duplicate: 1, identical: 2996}; ``0`` → {};
    None when ``cell`` is not such a list (items are split at a comma *and* a space, so a
    thousands separator stays inside its number)."""
    if cell == "0":
        return {}
    out: dict[str, str] = {}
    for item in re.split(r",\s+", cell):
        match = _TALLY.match(item.strip())
        if match is None or match[1] in out:
            return None
        out[match[1]] = match[2].replace(",", "")
    return out


def _tally_columns(table: Table, rows: list[list[str]]
                   ) -> dict[int, list[dict[str, str] | None]]:
    """Each ``table.tallied`` column whose present cells all parse as reason-count lists:
    per row its counts, or None for a missing cell."""
    out: dict[int, list[dict[str, str] | None]] = {}
    for j in table.tallied:
        column = [None if r[j].strip() in _MISSING else _tallies(r[j].strip()) for r in rows]
        if all(found is not None for r, found in zip(rows, column, strict=True)
               if r[j].strip() not in _MISSING):
            out[j] = column
    return out


def _kind(cells: list[str], parts: int = 0) -> str:
    """What a column holds: 'interval', 'pm' (mean ± sd), 'percent', 'number', 'parts'
    (compound cells of ``parts`` numbers), 'range' (counts, some ``36/39``), 'boolean' (the
    report's yes/no), 'empty' (nothing present: every cell blank or the report's dash) or
    'text'."""
    present = [c.strip() for c in cells if c.strip() not in _MISSING]
    if not present:
        return "empty"
    if all(c.lower() in _YES_NO for c in present):
        return "boolean"
    bare = [c[2:] if c.startswith("* ") else c for c in present]
    if parts and all(_pieces(c, parts) is not None for c in bare):
        return "parts"
    if any("/" in c for c in bare) and all(_COUNT_RANGE.match(c) for c in bare):
        return "range"
    tests: tuple[tuple[str, Callable[[str], bool]], ...] = (
        ("interval", lambda c: (m := _INTERVAL.match(c)) is not None
         and _number(m[1]) is not None and _number(m[2]) is not None),
        ("pm", lambda c: (m := _PLUS_MINUS.match(c)) is not None
         and _number(m[1]) is not None and _number(m[2]) is not None),
        ("percent", lambda c: c.endswith("%") and _number(c[:-1]) is not None),
        ("number", lambda c: _number(c) is not None))
    for kind, test in tests:
        if all(test(c) for c in bare):
            return kind
    return "text"


def tidy_table(table: Table) -> tuple[list[str], list[list[str]]]:
    """The table as machine-readable columns (the CSV export; see the module docstring).

    A score column (``table.scored``, or any column with a not-significant star such as
    ``* -0.05``) gets a ``<header> significant`` column of ``true``/``false``.
    """
    width = len(table.header)
    rows = _split_rows(table, [list(r) + [""] * (width - len(r)) for r in table.rows])
    tallies = _tally_columns(table, rows)
    kinds = ["tallies" if j in tallies else _kind([r[j] for r in rows], len(table.parts))
             for j in range(width)]
    labels = next((j for j, kind in enumerate(kinds) if kind not in ("text", "empty")),
                  width)
    for j in range(labels):                      # merged label cells → repeated values
        previous = ""
        for row in rows:
            if row[j].strip():
                previous = row[j]
            else:
                row[j] = previous
    starred = [kinds[j] == "number" and (j in table.scored or any(
        r[j].strip().startswith("* ") for r in rows)) for j in range(width)]
    tally_names = {j: sorted({reason for found in column if found for reason in found})
                   for j, column in tallies.items()}
    header: list[str] = []
    for j, name in enumerate(table.header):
        if kinds[j] in ("interval", "pm", "range"):
            low, high = {"interval": ("low", "high"), "pm": ("mean", "sd"),
                         "range": ("min", "max")}[kinds[j]]
            header += [f"{name} {low}", f"{name} {high}"]
        elif kinds[j] == "parts":
            header += [f"{name} {part}" for part in table.parts]
        elif kinds[j] == "tallies":      # no reason anywhere: one column of zeros
            header += [f"{name} {reason}" for reason in tally_names[j]] or [name]
        else:
            header.append(f"{name} (%)" if kinds[j] == "percent" else name)
        if starred[j]:
            header.append(f"{name} significant")
    out = []
    for i, row in enumerate(rows):
        cells: list[str] = []
        for j, raw in enumerate(row):
            text = raw.strip()
            star = text.startswith("* ")
            text = text[2:] if star else text
            missing = text in _MISSING
            kind = kinds[j]
            if kind in ("interval", "pm"):
                m = (_INTERVAL if kind == "interval" else _PLUS_MINUS).match(text)
                cells += ["", ""] if m is None else [_number(m[1]) or "", _number(m[2]) or ""]
            elif kind == "range":
                counts = [int(c.replace(",", "")) for c in text.split("/")] if not missing else []
                cells += [str(min(counts)), str(max(counts))] if counts else ["", ""]
            elif kind == "parts":
                cells += [""] * len(table.parts) if missing else (
                    _pieces(text, len(table.parts)) or [""] * len(table.parts))
            elif kind == "percent":
                cells.append("" if missing else _number(text[:-1]) or "")
            elif kind == "number":
                cells.append("" if missing else _number(text) or "")
            elif kind == "tallies":
                found = tallies[j][i]
                cells += ["" if found is None else found.get(reason, "0")
                          for reason in tally_names[j] or ("",)]
            elif kind == "boolean":
                cells.append("" if missing else _YES_NO[text.lower()])
            elif kind == "empty":
                cells.append("")
            else:           # text: the report's dash for "none" is an empty cell here too
                cells.append("" if missing and j >= labels else raw)
            if starred[j]:
                cells.append("" if missing else ("false" if star else "true"))
        out.append(cells)
    return header, out


def latex_escape(text: str) -> str:
    return "".join(_SPECIAL.get(ch, ch) for ch in text)


def latex_cell(text: str, mark: str | None = None) -> str:
    """A cell in math mode; a score cell (``mark`` given: the table's significance mark)
    gets its star where the mark puts it — after a significant score by default, before
    one that is not under ABNIRML's convention."""
    from abnirml.report.tables import MARK_SIGNIFICANT

    match = _NUMBER.match(text.strip())
    if match is None:
        return latex_escape(text)
    star, number, percent, zero = match.groups()
    number = number.replace("−", "-").replace(",", "{,}")
    before = "^{*}" if star and mark != MARK_SIGNIFICANT else ""
    after = "^{*}" if mark == MARK_SIGNIFICANT and not star else ""
    pct = r"\%" if percent else ""
    dagger = r"^{\dagger}" if zero else ""
    return f"${before}{number}{pct}{dagger}{after}$"


def to_latex(table: Table, label: str = "") -> str:
    """A ``table`` environment with booktabs rules (``\\usepackage{booktabs}``)."""
    text = text_columns(table)
    spec = "".join("l" if j in text else "r" for j in range(len(table.header)))
    lines = [r"\begin{table}[t]", r"\centering", r"\small", rf"\begin{{tabular}}{{{spec}}}",
             r"\toprule",
             " & ".join(latex_escape(h) for h in table.header) + r" \\", r"\midrule"]
    scored = set(table.scored)
    lines += [" & ".join(latex_cell(c, table.mark if j in scored else None)
                         for j, c in enumerate(row)) + r" \\" for row in table.rows]
    lines += [r"\bottomrule", r"\end{tabular}"]
    caption = latex_escape(table.title + (f". {table.note}" if table.note else ""))
    lines.append(rf"\caption{{{caption}}}")
    if label:
        lines.append(rf"\label{{{latex_escape(label)}}}")
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def _holds_text(table: Table, j: int) -> bool:
    """Column ``j`` is text: not a score column, and some present cell is not a number (or
    no cell is present at all)."""
    if j in table.scored:
        return False
    present = [c for c in (row[j].strip() for row in table.rows if j < len(row))
               if c not in _MISSING]
    return not present or not all(_NUMBER.match(c) for c in present)


def label_columns(table: Table) -> int:
    """How many leading columns of ``table`` are labels: those before the first column of
    numbers. A score column counts as numbers even when some rankers have no score
    (``–``), and so does any column whose present cells are all numbers."""
    count = 0
    while count < len(table.header) and _holds_text(table, count):
        count += 1
    return count


def text_columns(table: Table) -> frozenset[int]:
    """Columns of ``table`` that hold text, aligned left in HTML and LaTeX: the leading
    labels, and any later column that is not a score column and whose present cells are
    not all numbers (a fingerprint, a δ source, a note) — right-aligning those made long
    text ragged on the left."""
    return frozenset(j for j in range(len(table.header)) if _holds_text(table, j))
