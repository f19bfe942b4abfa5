"""Paper-layout tables built from result records (markdown here; other formats reuse rows).

A cell shows the probe score with sign (``+0.40``) and whether it is significant after the
run's correction. The cells are built in one canonical form — a leading ``* `` on a score
that is *not* significant, ABNIRML's convention — which the CSV and LaTeX exports and the
page read; what a reader sees follows the table's :attr:`Table.mark`: by default a ``*``
after each significant score (``+0.40*``), as most papers mark them, or ABNIRML's leading
star on the others (``--significance-mark not-significant``). Rows are probes (and
breakdown subsets), columns are rankers, the last column is the sample count.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from abnirml.markup import escape_md as escape_md  # re-exported
from abnirml.markup import escape_md_code as escape_md_code  # re-exported
from abnirml.probes.layouts import TABLE_LAYOUT, LayoutTest, ReportLayout, layout_of
from abnirml.run_record import RunInfo


@dataclass(frozen=True)
class FamilyView:
    """A family as the report sees it: the labels run.json carries (see Family.describe)."""

    key: str
    title: str
    positive: str = ""
    row_header: tuple[str, ...] = ("Probe",)
    layout: str = TABLE_LAYOUT
    skips_counted: str = "samples"

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> FamilyView:
        return cls(str(value["key"]), str(value.get("title", value["key"])),
                   str(value.get("positive", "")),
                   tuple(value.get("row_header") or ("Probe",)),
                   str(value.get("layout", TABLE_LAYOUT)),
                   str(value.get("skips_counted", "samples")))

    @property
    def report_layout(self) -> ReportLayout:
        """The record of the family's layout (a name this process does not know: a table)."""
        return layout_of(self.layout)


#: probe → ranker → that ranker's record of the probe
ProbeGrid = dict[str, dict[str, Mapping[str, Any]]]


def all_samples_grid(records: Sequence[Mapping[str, Any]], field: str
                     ) -> tuple[list[str], ProbeGrid] | None:
    """The all-samples records that carry ``field``, laid out for a probe × ranker table:
    the rankers in the order they first appear, and each probe's records by ranker (probes
    in the order they first appear); None when no record carries it."""
    chosen = [r for r in records if r.get("subset") == "all" and field in r]
    if not chosen:
        return None
    rankers = list(dict.fromkeys(r["ranker"] for r in chosen))
    grid: ProbeGrid = {}
    for r in chosen:
        grid.setdefault(r["probe"], {})[r["ranker"]] = r
    return rankers, grid


def family_views(records: Sequence[Mapping[str, Any]], run_info: RunInfo
                 ) -> list[FamilyView]:
    """The families to render, in run order, labelled from run.json.

    Output folders written before run.json carried the labels fall back to the families
    registered in this process, then to the bare key.
    """
    views = [FamilyView.from_json(v) for v in run_info.get("families") or []]
    seen = {v.key for v in views}
    missing = [k for k in dict.fromkeys(r["family"] for r in records) if k not in seen]
    if missing:
        from abnirml.probes.family_registry import family_keys, get_family

        registered = family_keys()
        for key in sorted(missing, key=lambda k: registered.index(k) if k in registered
                          else len(registered)):
            views.append(FamilyView.from_json(get_family(key).describe()) if key in registered
                         else FamilyView(key, key))
    return views


def layout_keys(records: Sequence[Mapping[str, Any]], run_info: RunInfo,
                test: LayoutTest) -> set[str]:
    """The keys of the run's families whose layout's record passes ``test`` (see
    :func:`family_views`)."""
    return {view.key for view in family_views(records, run_info) if test(view.report_layout)}


def probe_labels(records: Sequence[Mapping[str, Any]], run_info: RunInfo
                 ) -> dict[str, list[str]]:
    """Row label cells per probe: run.json's, else (older folders) the registered probes'."""
    labels = {k: list(v) for k, v in (run_info.get("probe_labels") or {}).items()}
    wanted = {r["probe"] for r in records} - set(labels)
    if wanted:
        from abnirml.probes.family_registry import get_family
        from abnirml.probes.probe_registry import all_probes

        for probe in all_probes():
            if probe.name in wanted:
                labels[probe.name] = get_family(probe.family).label_cells(probe)
    return labels


#: the default: a ``*`` after each significant score (``+0.40*``), as most papers print it
MARK_SIGNIFICANT = "significant"
#: ABNIRML's convention: a ``*`` before each score that is not significant (``* +0.40``)
MARK_NOT_SIGNIFICANT = "not-significant"
MARKS = (MARK_SIGNIFICANT, MARK_NOT_SIGNIFICANT)


def report_mark(run_info: RunInfo) -> str:
    """The significance mark the run's report uses (run.json's ``report``; the default)."""
    mark = (run_info.get("report") or {}).get("significance_mark", MARK_SIGNIFICANT)
    return mark if mark in MARKS else MARK_SIGNIFICANT


def shown_score(cell: str, mark: str) -> str:
    """A canonical score cell (:func:`format_score`) as the tables print it under ``mark``:
    ``+0.40*`` / ``+0.40`` (significant / not) by default, unchanged for ABNIRML's mark."""
    if mark == MARK_NOT_SIGNIFICANT:
        return cell
    text = cell.strip()
    if text.startswith("* "):
        return text[2:]
    return cell if text in ("", "–") else text + "*"


def mark_words(mark: str) -> str:
    """What the star means under ``mark``, for captions and legends."""
    return ("* after a score: significant" if mark == MARK_SIGNIFICANT
            else "* before a score: not significant")


@dataclass(frozen=True)
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]
    note: str = ""
    #: columns of :func:`format_score` cells (starred when not significant): the CSV export
    #: gives each a ``<header> significant`` column, whether or not any cell is starred
    scored: tuple[int, ...] = ()
    #: what each number of a compound value cell stands for (``0.96 (0.00)`` → satisfied,
    #: ties; ``1,234 / 56 / 0`` → three names): the CSV export splits every value column
    #: whose cells all hold that many numbers into ``<header> <part>`` columns
    parts: tuple[str, ...] = ()
    #: rows of compound cells (``a / b / c``) in a table whose columns are measures: row
    #: index → one label per number; the CSV export writes one row per number instead
    row_parts: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    #: columns of ``reason count, …`` lists (``duplicate 1, identical 2,996``; ``0`` for
    #: none): the CSV export writes one ``<header> <reason>`` count column per reason
    tallied: tuple[int, ...] = ()
    #: the page only: an ``id`` per row ("" for none), so a sentence elsewhere can link to it
    row_ids: tuple[str, ...] = ()
    #: the page only: per row, the ``id`` of its example samples ("" for none)
    row_examples: tuple[str, ...] = ()
    #: how the ``scored`` columns are printed (:data:`MARKS`); the cells stay canonical
    mark: str = MARK_SIGNIFICANT


#: marks a significant score of exactly 0 (see :data:`SCORE_LEGEND`)
ZERO_MARK = "†"
def score_legend(mark: str = MARK_SIGNIFICANT) -> str:
    """The legend every report prints under its score tables."""
    untested = ("carries no mark" if mark == MARK_SIGNIFICANT else "is starred too")
    return ("A significant score that rounds to 0.00 is shown with more digits (+0.004); "
            f"0.00{ZERO_MARK} is a significant score of exactly 0: as many differences "
            "beyond ±δ favour d1 as d2 (often none), yet the raw score differences, which "
            "the test uses, lean one way. A score from fewer than 2 samples is never tested "
            f"(no p-value) and {untested}.")


SCORE_LEGEND = score_legend()


def format_score(record: Mapping[str, Any]) -> str:
    """The canonical cell: ``+0.40``; ``* +0.40`` when not significant (printed as the
    table's :attr:`~Table.mark` says: :func:`shown_score`).

    A significant score that rounds to ``0.00`` would read as a contradiction, so it keeps
    one significant digit (``+0.004``), and an exact 0 carries :data:`ZERO_MARK`.
    """
    score = record.get("score")
    if score is None:
        return "–"
    symmetric = bool(record.get("symmetric"))
    text = f"{score:.2f}" if symmetric else signed_text(score)
    if text == "-0.00":
        text = "0.00"
    if not record.get("significant"):
        return f"* {text}"
    if text == "0.00":
        text = _small_score(float(score), symmetric)
    return text


def signed_text(value: float, digits: int = 2) -> str:
    """``+0.40`` / ``-0.40``, but a value that rounds to zero is ``0.00``: a sign on zero
    would claim a direction the figure does not show (the report, ``compare`` and their
    CSVs print zero the same way)."""
    text = f"{value:+.{digits}f}"
    return text[1:] if float(text) == 0 else text


#: rows from fewer samples than this are marked on the page and sorted after the others
SMALL_N = 10


def anchor(kind: str, *names: str) -> str:
    """A page ``id`` for a row or block (``row-axiom:tfc1--bm25``): the names with every
    character outside letters, digits and ``.:_-`` replaced, so it needs no escaping in a
    link; rows and their example blocks are found by the same function."""
    return kind + "-" + "--".join(re.sub(r"[^A-Za-z0-9.:_-]", "_", n) for n in names)


def count_text(value: int | None) -> str:
    """A count with thousands separators (``3,913``); the report's dash when absent."""
    return "–" if value is None else f"{value:,}"


def _small_score(score: float, symmetric: bool) -> str:
    """A significant |score| < 0.005 with one significant digit; exact 0 marked."""
    if score == 0.0:
        return "0.00" + ZERO_MARK
    digits = min(8, max(3, -math.floor(math.log10(abs(score)))))
    return f"{score:.{digits}f}" if symmetric else f"{score:+.{digits}f}"


def family_table(records: Sequence[Mapping[str, Any]], view: FamilyView,
                 labels: Mapping[str, Sequence[str]]) -> Table | None:
    """Rows: probes (× subsets), columns: rankers; the first row label cell is shown once
    per run of equal values (the papers' grouping of MMP variables)."""
    from abnirml.evaluation.analyses.listwise_probing import WINDOW_SUBSETS

    family = view.key
    # one listwise ranker's window subsets have their own table (the listwise section)
    chosen = [r for r in records if r["family"] == family and r["subset"] not in WINDOW_SUBSETS]
    if not chosen:
        return None

    def row_label(record: Mapping[str, Any]) -> list[str]:
        return list(labels.get(record["probe"]) or [record["probe"]])

    rankers = list(dict.fromkeys(r["ranker"] for r in chosen))
    subsets = list(dict.fromkeys(r["subset"] for r in chosen))
    with_subsets = len(subsets) > 1
    label_width = len(row_label(chosen[0]))
    header = list(view.row_header)[:label_width]
    header += [""] * (label_width - len(header))
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
        if label_width > 1 and label[0] == previous_first:
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
    first = len(header) - len(rankers) - 1
    return Table(view.title, header, rows, view.positive,
                 scored=tuple(range(first, first + len(rankers))))


def to_markdown(table: Table) -> str:
    scored = set(table.scored)
    lines = ["| " + " | ".join(_escape_md(h) for h in table.header) + " |",
             "|" + "|".join("---" for _ in table.header) + "|"]
    lines += ["| " + " | ".join(_escape_md(shown_score(c, table.mark) if j in scored else c)
                                for j, c in enumerate(row)) + " |" for row in table.rows]
    return "\n".join(lines)


_escape_md = escape_md   # defined in abnirml.markup (masking uses it too)
