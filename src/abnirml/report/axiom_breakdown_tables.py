"""Report tables for ir_axioms' preference consistency and Câmara & Hauff's overlap split
(see :mod:`abnirml.evaluation.analyses.axiom_breakdown`), rendered from result records alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from abnirml.counts import counted
from abnirml.report.tables import Table, count_text


def _axiom_records(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in records if r.get("subset") == "all"]


def consistency_table(records: Sequence[Mapping[str, Any]], order: Sequence[str],
                      label: Any) -> Table | None:
    """Rankers × axioms: satisfied / (satisfied + violated)."""
    from abnirml.evaluation.analyses.axiom_breakdown import preference_consistency

    chosen = _axiom_records(records)
    if not chosen:
        return None
    rankers = list(dict.fromkeys(r["ranker"] for r in chosen))
    cell = {(r["ranker"], r["probe"]): r for r in chosen}
    rows = []
    for ranker in rankers:
        row = [ranker]
        for probe in order:
            record = cell.get((ranker, probe))
            value = None if record is None else preference_consistency(record)
            row.append("–" if value is None else f"{value:.2f}")
        rows.append(row)
    return Table("Preference consistency (ir_axioms)", ["Ranker", *(label(p) for p in order)],
                 rows)


def overlap_table(records: Sequence[Mapping[str, Any]], order: Sequence[str],
                  label: Any) -> Table | None:
    """(ranker, overlap group) × (nDCG@10, axioms): the ranker's effectiveness on the
    group's queries — what Câmara & Hauff's Fig. 1 plots — when the run evaluated it, then
    the fraction of the group's instances satisfied."""
    chosen = [r for r in _axiom_records(records) if r.get("overlap_split")]
    if not chosen:
        return None
    rankers = list(dict.fromkeys(r["ranker"] for r in chosen))
    cell = {(r["ranker"], r["probe"]): r for r in chosen}
    by_ranker = {r["ranker"]: r for r in chosen}
    first = chosen[0]["overlap_split"]
    effectiveness = any("ndcg10" in g for r in chosen for g in r["overlap_split"])
    rows = []
    for ranker in rankers:
        for k, group in enumerate(first):
            lo, hi = group["overlap_min"], group["overlap_max"]
            span = "–" if lo is None else _span(lo, hi)
            row = [ranker if k == 0 else "", f"{group['bucket']} ({span}, "
                                             f"{counted(group['queries'], 'query')})"]
            if effectiveness:
                own = by_ranker[ranker]["overlap_split"][k]
                row += [_number(own.get("ndcg10")), _number(own.get("ndcg10_retrieved")),
                        count_text(own.get("retrieved_queries"))]
            for probe in order:
                record = cell.get((ranker, probe))
                parts = None if record is None else record["overlap_split"][k]
                row.append("–" if not parts or not parts["n"]
                           else f"{parts['satisfied'] / parts['n']:.2f} ({parts['n']:,})")
            rows.append(row)
    ndcg = (["nDCG@10", "nDCG@10, relevant document in candidates",
             "Queries with relevant document in candidates"] if effectiveness else [])
    what = "nDCG@10 and fraction satisfied" if effectiveness else "Fraction satisfied"
    return Table(f"{what} by query–document term overlap (Câmara & Hauff, Fig. 1)",
                 ["Ranker", "Overlap group", *ndcg, *(label(p) for p in order)], rows,
                 parts=("satisfied", "instances"))


def _span(low: float, high: float) -> str:
    """``0.40–0.60``; one figure when both ends print alike (a group of one overlap)."""
    low_text, high_text = f"{low:.2f}", f"{high:.2f}"
    return low_text if low_text == high_text else f"{low_text}–{high_text}"


def _number(value: Any) -> str:
    return "–" if value is None else f"{value:.3f}"


def breakdown_tables(records: Sequence[Mapping[str, Any]], order: Sequence[str],
                     label: Any) -> list[tuple[str, Table, str]]:
    """(export slug, table, explanation) of the preference-consistency and overlap tables."""
    out: list[tuple[str, Table, str]] = []
    table = consistency_table(records, order, label)
    if table is not None:
        out.append(("axiom-consistency", table,
                    "Of the ordered pairs on which the axiom has a preference (its instances), "
                    "the fraction the ranker orders the axiom's way; pairs it scores equally "
                    "are left out."))
    table = overlap_table(records, order, label)
    if table is not None:
        out.append(("axiom-overlap", table,
                    "Queries split into three near-equal groups by the fraction of their "
                    "analysed terms found in one relevant document (seeded choice); queries "
                    "with no relevant document, if any, form a last group. nDCG@10 "
                    "(when effectiveness was evaluated): the ranker re-ranking the "
                    "candidates, mean over the group's queries, then over those whose chosen "
                    "relevant document is among the candidates — Câmara & Hauff's Fig. 1 "
                    "(left, right). Axiom cells: fraction of the group's instances "
                    "satisfied, strict order (instances)."))
    return out
