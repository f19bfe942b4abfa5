"""Paper-layout tables built from result records (markdown here; other formats reuse rows).

A cell shows the probe score with sign (``+0.40``) and a leading ``*`` when the effect is
not significant after the Bonferroni correction — the papers' convention. Rows are probes
(and breakdown subsets), columns are rankers, the last column is the sample count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

FAMILY_TITLES = {
    "mmp": "Measure-and-Match probes",
    "tmp": "Textual-manipulation probes",
    "dtp": "Dataset-transfer probes",
    "axiom": "Axiomatic diagnostic datasets (probe scores)",
}
FAMILY_NOTES = {
    "mmp": "Positive scores: the ranker prefers the document with the higher variable.",
    "tmp": "Positive scores: the ranker prefers the manipulated document (d2 is the original).",
    "dtp": "Positive scores: the ranker prefers d1 (e.g. the fluent, formal or simpler text). "
           "Symmetric probes (paraphrase) are unsigned, in [0, 1].",
    "axiom": "Positive scores: the ranker prefers the document the axiom favours.",
}


@dataclass(frozen=True)
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]
    note: str = ""


def format_score(record: Mapping[str, Any]) -> str:
    score = record.get("score")
    if score is None:
        return "–"
    text = f"{score:.2f}" if record.get("symmetric") else f"{score:+.2f}"
    if text in ("+0.00", "-0.00"):
        text = "0.00"
    return text if record.get("significant") else f"* {text}"


def row_label(record: Mapping[str, Any]) -> list[str]:
    """Row label cells of a record: MMP rows are (variable, control), others the probe name."""
    probe = record["probe"]
    if record["family"] == "mmp":
        from abnirml.probes.measure_match import LABELS

        _, variable, control = probe.split(":")
        return [LABELS.get(variable, variable), LABELS.get(control, control)]
    return [probe]


def family_table(records: Sequence[Mapping[str, Any]], family: str) -> Table | None:
    chosen = [r for r in records if r["family"] == family]
    if not chosen:
        return None
    rankers = list(dict.fromkeys(r["ranker"] for r in chosen))
    subsets = list(dict.fromkeys(r["subset"] for r in chosen))
    with_subsets = len(subsets) > 1
    label_width = len(row_label(chosen[0]))
    header = (["Variable", "Control"] if family == "mmp" else ["Probe"])[:label_width]
    if with_subsets:
        header.append("Subset")
    header += [*rankers, "Samples"]
    cells: dict[tuple[str, str], dict[str, Mapping[str, Any]]] = {}
    for record in chosen:
        cells.setdefault((record["probe"], record["subset"]), {})[record["ranker"]] = record
    rows: list[list[str]] = []
    previous_first = None
    for (_probe, subset), by_ranker in cells.items():
        any_record = next(iter(by_ranker.values()))
        label = row_label(any_record)
        if family == "mmp" and label[0] == previous_first:
            label = ["", *label[1:]]
        else:
            previous_first = label[0]
        if with_subsets and subset != subsets[0]:
            label = [""] * len(label)
        row = list(label) + ([subset] if with_subsets else [])
        row += [format_score(by_ranker[r]) if r in by_ranker else "–" for r in rankers]
        counts = sorted({by_ranker[r]["n"] for r in by_ranker})
        row.append("/".join(f"{c:,}" for c in counts))
        rows.append(row)
    return Table(FAMILY_TITLES.get(family, family), header, rows, FAMILY_NOTES.get(family, ""))


def to_markdown(table: Table) -> str:
    lines = ["| " + " | ".join(_escape_md(h) for h in table.header) + " |",
             "|" + "|".join("---" for _ in table.header) + "|"]
    lines += ["| " + " | ".join(_escape_md(c) for c in row) + " |" for row in table.rows]
    return "\n".join(lines)


def escape_md(text: object) -> str:
    """User text (names, paths, specs) made inert in Markdown: no raw HTML, no broken tables.

    ``&`` and ``<`` become entities, so ``<script>`` or ``<img onerror=…>`` in a collection
    directory, ranker spec or probe name is shown, never interpreted (a lone ``>`` opens no
    tag and stays, so headers like ``>100`` are unchanged); ``|`` is escaped so it cannot
    split a table cell.
    """
    return (str(text).replace("&", "&amp;").replace("<", "&lt;")
            .replace("|", "\\|").replace("\n", " "))


def escape_md_code(text: object) -> str:
    """Text for inside a Markdown code span in a table: backticks and ``|`` made harmless."""
    return str(text).replace("`", "'").replace("|", "\\|").replace("\n", " ")


_escape_md = escape_md
