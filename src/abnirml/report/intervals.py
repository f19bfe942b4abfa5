"""The report's statistics: intervals, effect sizes, error bars and per-query probe scores.

The paper-layout tables keep the papers' cells (score, ``*`` when not significant); this
module adds what a reviewer asks next. *How sure?* — the query-clustered bootstrap interval
of each score. *How large?* — Cohen's d_z, by which the table is sorted so the largest
shifts come first and "significant but negligible" is visible. *Driven by whom?* — each
probe's score per query (``tables/per-query.csv``) and, in the page, the queries that
contribute most to each significant effect.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from abnirml.report.tables import SMALL_N, Table, anchor, signed_text
from abnirml.run_record import RunInfo, alpha_of, statistics_of

if TYPE_CHECKING:
    from abnirml.evaluation.execution.score_file import ScoreStore

#: Probes with more distinct queries than this (e.g. transfer probes, one query per
#: sample) are left out of the per-query table: there a query is not a meaningful group.
MAX_QUERIES = 2000
PER_QUERY_FILE = "per-query.csv"
PER_QUERY_FIELDS = ("probe", "ranker", "query", "n", "score", "mean_diff", "contribution")


def size_label(effect_size: float | None) -> str:
    """Cohen's rule of thumb for |d|: negligible < 0.2 ≤ small < 0.5 ≤ medium < 0.8 ≤ large."""
    if effect_size is None:
        return "–"
    d = abs(effect_size)
    return ("large" if d >= 0.8 else "medium" if d >= 0.5 else "small" if d >= 0.2
            else "negligible")


def caption(run_info: RunInfo) -> str:
    from abnirml.evaluation.stats.significance import caption as stats_caption

    statistics = statistics_of(run_info)
    return stats_caption(statistics["test"], statistics["correction"], alpha_of(run_info),
                         statistics["ci"], statistics["bootstrap"],
                         statistics.get("test_rounds"))


def _num(value: float | None, signed: bool = True, digits: int = 2) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    return signed_text(value, digits) if signed else f"{value:.{digits}f}"


def _interval(low: float | None, high: float | None, signed: bool = True) -> str:
    if low is None or high is None:
        return "–"
    return f"[{_num(low, signed)}, {_num(high, signed)}]"


def _adjusted_p(record: Mapping[str, Any]) -> str:
    """The adjusted p, marked when it is the least the row's queries allow (``p_floor``):
    its queries, not the effect, set it."""
    if record.get("p_adjusted") is None:
        return "–"
    text = f"{record['p_adjusted']:.2g}"
    return text + " (floor)" if record.get("p_floor") is not None else text


def _order(record: Mapping[str, Any]) -> tuple[bool, bool, float, str, str]:
    """Largest |d_z| first; rows from fewer than SMALL_N samples after all others, so a
    two-sample row with a huge d_z never leads the table."""
    effect = record.get("effect_size")
    return (record["n"] < SMALL_N, effect is None, -abs(effect or 0.0), record["probe"],
            record["ranker"])


def intervals_table(records: Sequence[Mapping[str, Any]], run_info: RunInfo,
                    with_examples: Collection[str] = ()) -> Table | None:
    """One row per probe × ranker (subset ``all``), largest |effect size| first; rows of
    probes in ``with_examples`` link to their example samples on the page."""
    chosen = [r for r in records if r.get("subset") == "all" and "effect_size" in r]
    if not chosen:
        return None
    chosen.sort(key=_order)
    rows = []
    for r in chosen:
        signed = not r.get("symmetric")
        rows.append([
            r["probe"], r["ranker"], str(r.get("family", "")), _num(r.get("score"), signed),
            _interval(r.get("ci_low"), r.get("ci_high"), signed),
            _num(r.get("mean_diff"), True, 3),
            _interval(r.get("mean_diff_ci_low"), r.get("mean_diff_ci_high")),
            _num(r.get("effect_size")), size_label(r.get("effect_size")),
            _adjusted_p(r), "yes" if r.get("significant") else "no", f"{r['n']:,}",
            "–" if r.get("queries") is None else f"{r['queries']:,}"])
    header = ["Probe", "Ranker", "Family", "Score", "Score CI", "Mean diff", "Mean diff CI",
              "Effect size d_z", "Size", "p (adjusted)", "Significant", "Samples", "Queries"]
    return Table("Intervals and effect sizes", header, rows,
                 caption(run_info) + " Sorted by |d_z| (mean paired difference / SD of the "
                 "differences; none for symmetric probes, whose score is already a rate), "
                 f"rows from fewer than {SMALL_N} samples last. "
                 "Size: Cohen's thresholds 0.2 / 0.5 / 0.8. Queries: the distinct queries "
                 "of the row's samples; \"(floor)\" after a p: it is the least that "
                 "many queries allow.",
                 row_ids=tuple(anchor("row", r["probe"], r["ranker"]) for r in chosen),
                 row_examples=tuple(anchor("ex", r["probe"]) if r["probe"] in with_examples
                                    else "" for r in chosen))


def interval_figure(records: Sequence[Mapping[str, Any]], family: str) -> bytes | None:
    """Probe scores of one family with their intervals as horizontal error bars."""
    chosen = [r for r in records if r.get("family") == family and r.get("subset") == "all"
              and r.get("ci_low") is not None and r.get("score") is not None]
    if not chosen:
        return None
    from abnirml.report.plots import cached_png

    rows = [(r["probe"], r["ranker"], r["score"], r["ci_low"], r["ci_high"]) for r in chosen]
    # kept in the figure cache like the δ curves: a rerun with the same intervals never
    # imports matplotlib for them
    return cached_png("intervals", lambda: _draw_intervals(rows), rows)


def _draw_intervals(rows: Sequence[tuple[str, str, float, float, float]]) -> bytes:
    """The error-bar figure of (probe, ranker, score, ci_low, ci_high) rows."""
    from abnirml.report.plots import _figure, _png

    chosen: list[dict[str, Any]] = [
        {"probe": p, "ranker": k, "score": s, "ci_low": lo, "ci_high": hi}
        for p, k, s, lo, hi in rows]
    probes = list(dict.fromkeys(r["probe"] for r in chosen))
    rankers = list(dict.fromkeys(r["ranker"] for r in chosen))
    figure = _figure(7.5, 0.8 + 0.28 * len(probes) * max(1, len(rankers)) ** 0.5)
    ax = figure.subplots()
    step = 0.7 / max(1, len(rankers))
    position = {p: i for i, p in enumerate(probes)}
    for k, ranker in enumerate(rankers):
        mine = [r for r in chosen if r["ranker"] == ranker]
        ys = [position[r["probe"]] + (k - (len(rankers) - 1) / 2) * step for r in mine]
        xs = [r["score"] for r in mine]
        low = [r["score"] - r["ci_low"] for r in mine]
        high = [r["ci_high"] - r["score"] for r in mine]
        ax.errorbar(xs, ys, xerr=[low, high], fmt="o", markersize=3, linewidth=1,
                    capsize=2, label=ranker)
    ax.axvline(0.0, color="0.6", linewidth=0.7)
    ax.set_yticks(range(len(probes)), probes, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(-1.05, 1.05)
    ax.set_xlabel("probe score with bootstrap interval", fontsize=8)
    ax.tick_params(labelsize=7)
    if rankers:
        ax.legend(fontsize=7, frameon=False, loc="best")
    return _png(figure)


def per_query_rows(store: ScoreStore) -> list[dict[str, Any]]:
    """Every probe's score per query (subset ``all``) for every ranker, from scores.npz.

    ``contribution`` is the query's summed effect divided by the probe's sample count: the
    contributions of a probe's queries add up to its score, so they say which queries drive it.
    """
    from abnirml.evaluation.stats.statistics import effects

    out: list[dict[str, Any]] = []
    for probe in store.probes:
        for ranker in store.ranker_names:
            ps = store.scores.get((probe.name, ranker))
            if ps is None or ps.cluster is None or not ps.queries or not ps.score1.size:
                continue
            if len(ps.queries) > MAX_QUERIES:
                continue
            k = len(ps.queries)
            diff = ps.score1 - ps.score2
            eff = effects(diff, store.calibrations[ranker].delta, probe.symmetric)
            n = np.bincount(ps.cluster, minlength=k)
            eff_sum = np.bincount(ps.cluster, weights=eff.astype(np.float64), minlength=k)
            diff_sum = np.bincount(ps.cluster, weights=diff, minlength=k)
            total = float(diff.shape[0])
            for q in np.flatnonzero(n):
                out.append({"probe": probe.name, "ranker": ranker, "query": ps.queries[q],
                            "n": int(n[q]), "score": float(eff_sum[q] / n[q]),
                            "mean_diff": float(diff_sum[q] / n[q]),
                            "contribution": float(eff_sum[q] / total)})
    return out


def per_query_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    """The text of ``tables/per-query.csv``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(PER_QUERY_FIELDS)
    for row in rows:
        writer.writerow([row["probe"], row["ranker"], row["query"], row["n"],
                         f"{row['score']:.6f}", f"{row['mean_diff']:.6g}",
                         f"{row['contribution']:.6f}"])
    return buffer.getvalue()


def driving_queries_table(rows: Sequence[Mapping[str, Any]],
                          records: Sequence[Mapping[str, Any]], top: int = 3) -> Table | None:
    """For each significant probe × ranker: the ``top`` queries with the largest contribution
    in the direction of the score, and the share of the score they make up."""
    significant = {(r["probe"], r["ranker"]): r for r in records
                   if r.get("subset") == "all" and r.get("significant") and r.get("score")}
    grouped: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for row in rows:
        key = (row["probe"], row["ranker"])
        if key in significant:
            grouped.setdefault(key, []).append(row)
    table_rows = []
    for key, mine in grouped.items():
        score = float(significant[key]["score"])
        sign = 1.0 if score >= 0 else -1.0
        best = sorted(mine, key=lambda r: (-sign * r["contribution"], r["query"]))[:top]
        share = sum(r["contribution"] for r in best) / score if score else 0.0
        cells = "; ".join(f"{_short(r['query'])} ({signed_text(r['score'])}, n={r['n']})"
                          for r in best)
        table_rows.append([key[0], key[1], signed_text(score), str(len(mine)), cells,
                           f"{100 * share:.0f} %"])
    if not table_rows:
        return None
    return Table("Queries that drive each significant effect",
                 ["Probe", "Ranker", "Score", "Queries", f"Top {top} queries (score, samples)",
                  "Share of the score"], table_rows,
                 f"Every query's score is in tables/{PER_QUERY_FILE}.")


def _short(text: str, limit: int = 48) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def significance_phrase(run_info: RunInfo) -> str:
    """The test behind the tables' ``*`` (:func:`~abnirml.evaluation.stats.significance.test_words`)
    — read from run.json, so a rebuilt report names the run's choices."""
    from abnirml.evaluation.stats.significance import test_words

    statistics = statistics_of(run_info)
    return test_words(statistics["test"], statistics["correction"], alpha_of(run_info))


def statistics_section(store: Any, records: Sequence[Mapping[str, Any]],
                       run_info: RunInfo, with_examples: Collection[str] = ()
                       ) -> tuple[Any, str | None] | None:
    """The page's "Statistics" section and, given the run's scores (``store``), the text of
    tables/per-query.csv; None without interval records."""
    from abnirml.report.html import Figure, Section

    table = intervals_table(records, run_info, with_examples)
    if table is None:
        return None
    section = Section("statistics", "Statistics: intervals, effect sizes, queries",
                      caption(run_info))
    section.tables.append(("intervals", table))
    per_query = None
    if store is not None:
        rows = per_query_rows(store)
        per_query = per_query_csv(rows)
        driving = driving_queries_table(rows, records)
        if driving is not None:
            section.tables.append(("driving-queries", driving))
    for family in dict.fromkeys(r["family"] for r in records):
        try:
            png = interval_figure(records, family)
        except ImportError:
            from abnirml.errors import install_hint

            section.intro += (" (Error bars need matplotlib: "
                              f"{install_hint('report', located=False)}.)")
            break
        if png is not None:
            section.figures.append(Figure(f"Intervals: {family}", png,
                                          f"{family}: probe scores with their intervals"))
    return section, per_query
