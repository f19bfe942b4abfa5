"""The report's rank-origin section: one table per informative comparison, one figure.

Rau & Kamps' figure 1 asks where a ranking's documents sat in a reference ranking. A report
shows it for each ranker's re-ranking of the candidates, and for ``rank_origin.csv`` left in
the folder by ``abnirml rank-origin --out``. Two kinds of cell say nothing and are left out:

* a *self-comparison*, where every document stays in its rank range (the ranker that made
  the candidates re-ranking them): an identity matrix, named in the section's note instead;
* *empty ranges*: columns no document came from in any comparison (a re-ranking of the top
  100 never draws from ``>100`` or ``absent``); ranges deeper than the runs never appear.

All remaining comparisons share one compact figure, one panel each, on one colour scale.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from abnirml.report.tables import Table

Fractions = Mapping[str, Mapping[str, float]]      # run range → reference column → share


@dataclass(frozen=True)
class Comparison:
    """One rank-origin matrix: ``slug`` names its exported table."""

    slug: str
    title: str
    fractions: Fractions


def is_self_comparison(fractions: Fractions) -> bool:
    """Every document of every run range came from the same range of the reference."""
    return bool(fractions) and all(abs(row.get(label, 0.0) - 1.0) < 1e-12
                                   for label, row in fractions.items())


def shown_columns(comparisons: Sequence[Comparison]) -> list[str]:
    """Reference columns holding a document in at least one comparison, in order."""
    columns = list(dict.fromkeys(c for comp in comparisons for row in comp.fractions.values()
                                 for c in row))
    return [c for c in columns if any(row.get(c, 0.0) > 0.0 for comp in comparisons
                                      for row in comp.fractions.values())]


def origin_table(comparison: Comparison, columns: Sequence[str]) -> Table:
    rows = [[row, *[f"{100 * values.get(c, 0.0):.1f}%" for c in columns]]
            for row, values in comparison.fractions.items()]
    return Table(comparison.title, ["Run rank", *columns], rows,
                 "Each row: where the documents at these ranks came from in the reference run "
                 "(row sums to 100%).")


def section_note(skipped: Sequence[str]) -> str:
    """The sentence naming the comparisons left out as self-comparisons."""
    if not skipped:
        return ""
    return ("Left out as self-comparisons (every document stays in its rank range of the "
            "reference, as when a ranker re-ranks its own candidates): "
            f"{', '.join(skipped)}.")


def origin_figure_png(comparisons: Sequence[Comparison], columns: Sequence[str]) -> bytes:
    """All comparisons as panels of one figure (matplotlib, cached)."""
    from abnirml.report import plots

    panels = [(c.title, [[row.get(col, 0.0) for col in columns] for row in c.fractions.values()],
               list(c.fractions)) for c in comparisons]
    return plots.heatmap_grid(panels, list(columns), "reference rank", "run rank")


def comparisons_from_runs(reference: Any, reranked: Mapping[str, Any]
                          ) -> list[tuple[str, Fractions]]:
    """(ranker, fractions) of each re-ranking against the candidate run ``reference``, over
    the default ranges the candidates are deep enough to fill."""
    from abnirml.evaluation.analyses.rank_origin import ranges_for_depth, rank_origin, run_depth

    ranges = ranges_for_depth(run_depth(reference))
    out: list[tuple[str, Mapping[str, Mapping[str, float]]]] = []
    for ranker, run in reranked.items():
        origin = rank_origin(reference, run, None, ranges)
        out.append((ranker, {row: {c: origin.fraction("all", row, c) for c in origin.columns}
                             for row in origin.rows("all")}))
    return out
