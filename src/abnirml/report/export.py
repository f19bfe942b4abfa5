"""CSV and LaTeX renderings of report tables, for spreadsheets and papers.

CSV keeps each cell as the report shows it (so ``* -0.05`` still says "not significant");
LaTeX puts numbers in math mode (a real minus sign) and the not-significant mark as a
superscript star, and escapes every special character of user text (probe and ranker
names may hold ``_``, ``%``, ``&``…).
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from abnirml.report.tables import Table

_NUMBER = re.compile(r"^(\* )?([+\-−]?\d[\d,]*(?:\.\d+)?)(%?)$")
_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
}


def to_csv(table: Table) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(table.header)
    writer.writerows(table.rows)
    return buffer.getvalue()


def latex_escape(text: str) -> str:
    return "".join(_SPECIAL.get(ch, ch) for ch in text)


def latex_cell(text: str) -> str:
    match = _NUMBER.match(text.strip())
    if match is None:
        return latex_escape(text)
    star, number, percent = match.groups()
    number = number.replace("−", "-").replace(",", "{,}")
    mark = "^{*}" if star else ""
    pct = r"\%" if percent else ""
    return f"${mark}{number}{pct}$"


def to_latex(table: Table, label: str = "") -> str:
    """A ``table`` environment with booktabs rules (``\\usepackage{booktabs}``)."""
    spec = "l" * _label_columns(table) + "r" * (len(table.header) - _label_columns(table))
    lines = [r"\begin{table}[t]", r"\centering", r"\small", rf"\begin{{tabular}}{{{spec}}}",
             r"\toprule",
             " & ".join(latex_escape(h) for h in table.header) + r" \\", r"\midrule"]
    lines += [" & ".join(latex_cell(c) for c in row) + r" \\" for row in table.rows]
    lines += [r"\bottomrule", r"\end{tabular}"]
    caption = latex_escape(table.title + (f". {table.note}" if table.note else ""))
    lines.append(rf"\caption{{{caption}}}")
    if label:
        lines.append(rf"\label{{{latex_escape(label)}}}")
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def _label_columns(table: Table) -> int:
    """Leading columns that hold labels (left-aligned): those with no number in any row."""
    count = 0
    for j in range(len(table.header)):
        cells = [row[j] for row in table.rows if j < len(row) and row[j].strip()]
        if cells and all(_NUMBER.match(c.strip()) for c in cells):
            break
        count += 1
    return count


def write_table(directory: Path, slug: str, table: Table) -> list[Path]:
    """Write ``slug.csv`` and ``slug.tex`` under ``directory``; returns the paths."""
    directory.mkdir(parents=True, exist_ok=True)
    csv_path, tex_path = directory / f"{slug}.csv", directory / f"{slug}.tex"
    csv_path.write_text(to_csv(table), encoding="utf-8")
    tex_path.write_text(to_latex(table, label=f"tab:{slug}"), encoding="utf-8")
    return [csv_path, tex_path]
