"""Câmara & Hauff's Tables 2 and 3 for the axiomatic diagnostic datasets, from result records.

Table 2 describes the datasets (ranker-independent): instances, instances before the
per-query cap, instances holding a judged relevant document, and the fraction of those
whose axiom order agrees with the relevance grades. Table 3 gives, per ranker, the fraction
of instances satisfied — once under strict order (ties = equal scores, as the papers
count) and once with the ranker's δ (score differences within δ are ties). Ties are shown
in parentheses: for the axioms that claim S(d1) ≥ S(d2), satisfied + ties is the fraction
that meets the claim.

Every function here takes the records of one family rendered with the axiom layout; the
report picks them by the family's layout, so a user's axiom-layout family gets the same
tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from abnirml.counts import counted_or_unknown
from abnirml.report.tables import Table, count_text, to_markdown


def _label(probe: str, record: Mapping[str, Any] | None = None) -> str:
    """The axiom's short name: a user's axiom carries its own (``axiom_label``)."""
    from abnirml.probes.axioms.ir_axioms_mining import DEFINITIONS
    from abnirml.probes.axioms.probe import AXIOM_BY_KEY

    if record is not None and record.get("axiom_label"):
        return str(record["axiom_label"])

    suffix = probe.split(":", 1)[-1]
    if suffix in AXIOM_BY_KEY:
        return AXIOM_BY_KEY[suffix].label
    return DEFINITIONS[suffix][0] if suffix in DEFINITIONS else suffix


def _order(probes: Sequence[str]) -> list[str]:
    from abnirml.probes.axioms.probe import AXIOM_BY_KEY

    known = list(AXIOM_BY_KEY)
    return sorted(probes, key=lambda p: known.index(p.split(":", 1)[-1])
                  if p.split(":", 1)[-1] in known else len(known))


def _fraction(part: Any, whole: Any) -> str:
    if part is None or not whole:
        return "–"
    return f"{part / whole:.2f}"


def dataset_table(records: Sequence[Mapping[str, Any]]) -> Table | None:
    """Câmara & Hauff Table 2: one column per axiom."""
    first = _first_per_probe(records)
    if not first:
        return None
    probes = _order(list(first))
    header = ["", *(_label(p, first[p]) for p in probes)]
    rows = [
        ["Diagnostic dataset size", *(count_text(first[p].get("instances", first[p]["n"]))
                                      for p in probes)],
        ["Instances before the per-query cap",
         *(count_text(first[p].get("instances_uncapped")) for p in probes)],
        ["Instances with a relevant document",
         *(count_text(first[p].get("instances_relevant")) for p in probes)],
        ["Fraction agreeing with relevance",
         *("–" if first[p].get("relevance_agreement") is None
           else f"{first[p]['relevance_agreement']:.2f}" for p in probes)],
    ]
    row_parts: dict[int, tuple[str, ...]] = {}
    if any(first[p].get("relevance_ties") is not None for p in probes):
        row_parts[len(rows)] = ("Agree with relevance", "Disagree with relevance",
                                "Tie with relevance")
        rows += [
            ["Agree / disagree / tie with relevance",
             *("–" if first[p].get("relevance_ties") is None else
               f"{first[p]['relevance_agree']:,} / {first[p]['relevance_disagree']:,} / "
               f"{first[p]['relevance_ties']:,}" for p in probes)],
            ["Fraction agreeing, equal grades left out",
             *("–" if first[p].get("relevance_agreement_decided") is None
               else f"{first[p]['relevance_agreement_decided']:.2f}" for p in probes)],
        ]
    return Table("Axiomatic diagnostic datasets (Câmara & Hauff, Table 2)", header, rows,
                 row_parts=row_parts)


def satisfaction_table(records: Sequence[Mapping[str, Any]], with_delta: bool) -> Table | None:
    """Câmara & Hauff Table 3: rankers × axioms, fraction satisfied (ties)."""
    chosen = [r for r in records if r["subset"] == "all"]
    if not chosen:
        return None
    probes = _order(list(dict.fromkeys(r["probe"] for r in chosen)))
    rankers = list(dict.fromkeys(r["ranker"] for r in chosen))
    cell = {(r["ranker"], r["probe"]): r for r in chosen}
    sat, tie = ("satisfied_delta", "ties_delta") if with_delta else ("satisfied", "ties")
    rows = []
    for ranker in rankers:
        row = [ranker]
        for probe in probes:
            record = cell.get((ranker, probe))
            if record is None or not record.get("n"):
                row.append("–")
                continue
            row.append(f"{_fraction(record.get(sat), record['n'])} "
                       f"({_fraction(record.get(tie), record['n'])})")
        rows.append(row)
    title = ("Fraction of instances satisfied, ties within the ranker's δ"
             if with_delta else "Fraction of instances satisfied, strict order "
             "(Câmara & Hauff, Table 3)")
    labelled = {r["probe"]: r for r in chosen}
    return Table(title, ["Ranker", *(_label(p, labelled[p]) for p in probes)], rows,
                 parts=("satisfied", "ties"))


def _first_per_probe(records: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    first: dict[str, Mapping[str, Any]] = {}
    for r in records:
        if r["subset"] == "all":
            first.setdefault(r["probe"], r)
    return first


@dataclass(frozen=True)
class NotedTable:
    """A report table with its export slug and the paragraph that explains it."""

    slug: str
    table: Table
    intro: str = ""
    level: int = 3          # markdown heading level


def axiom_report_tables(records: Sequence[Mapping[str, Any]]) -> list[NotedTable]:
    """Câmara & Hauff's Tables 2 and 3 and the breakdowns, for both report.md and the page
    (empty when the run had no axiom probe)."""
    datasets = dataset_table(records)
    if datasets is None:
        return []
    first = _first_per_probe(records)
    any_record = next(iter(first.values()))
    intro = ""
    pool = any_record.get("axiom_pool")
    if pool is not None:
        intro = (f"Instances mined from each query's {pool} "
                 f"(δ_len = {any_record.get('length_tolerance')} analysed tokens) in "
                 f"{counted_or_unknown(any_record.get('axiom_queries'), 'query')}. Agreement: the "
                 "axiom's "
                 "document order matches the relevance grades (unjudged = 0), among the "
                 "instances holding a relevant document; LNC2's documents are copies, so it "
                 "has none.")
    out = [NotedTable("axiom-datasets", datasets, intro, level=2)]
    for with_delta, slug in ((False, "axiom-satisfied"), (True, "axiom-satisfied-delta")):
        table = satisfaction_table(records, with_delta)
        if table is not None:
            out.append(NotedTable(
                slug, table, "Cells: fraction satisfied (fraction of ties). TFC2 compares "
                "the score increases d1→d2 and d2→d3; for M-TDC, LNC1, LNC2 and STMC2 the "
                "axiom claims ≥, so satisfied + ties meets it."))
    from abnirml.report.axiom_breakdown_tables import breakdown_tables

    out += [NotedTable(slug, table, intro)
            for slug, table, intro in breakdown_tables(records, _order(list(first)), _label)]
    return out


def axiom_sections(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """Markdown lines for report.md (empty when the run had no axiom probe)."""
    lines: list[str] = []
    for noted in axiom_report_tables(records):
        lines += ["", f"{'#' * noted.level} {noted.table.title}", ""]
        if noted.intro:
            lines += [noted.intro, ""]
        lines.append(to_markdown(noted.table))
    return lines
