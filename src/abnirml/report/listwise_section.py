"""The report's listwise section: how much of a listwise ranker's verdicts is position.

Built from run.json's ``listwise`` entry (the identical-document null test and the
position-response curve of each listwise ranker) and from the records' ``position_bias``
and window subsets; renders only. A served ranker's request and token counts (run.json's
``usage``) get their own table in the rankers section (:func:`usage_table`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from abnirml.evaluation.analyses.listwise_probing import WINDOW_SUBSETS
from abnirml.report.html import Figure, Section
from abnirml.report.tables import Table, all_samples_grid
from abnirml.run_record import RunInfo

TITLE = "Listwise rankers: position bias"
FIGURE_CAPTION = ("Mean output rank of a relevant passage per input position, per ranker, "
                  "rank 1 at the top: a flat line along the top is blind to position, a line "
                  "falling to the right favours early passages (primacy), one climbing at the "
                  "right end late ones (recency)")


def _percent(value: Any) -> str:
    return "–" if value is None else f"{100 * float(value):.1f} %"


def null_test_table(info: Mapping[str, Any]) -> Table | None:
    rows = []
    for ranker, entry in info.items():
        null = entry.get("null_test")
        if not null:
            continue
        low, high = null.get("ci_low"), null.get("ci_high")
        interval = "–" if low is None or high is None else \
            f"{_percent(low)} – {_percent(high)}"
        rows.append([ranker, str(null.get("list_size", "")), f"{null.get('lists', 0):,}",
                     f"{null.get('queries', 0):,}", _percent(null.get("first_rate")),
                     interval])
    if not rows:
        return None
    level = next((e["null_test"].get("ci") for e in info.values() if e.get("null_test")), 0.95)
    return Table("Identical-document null test", ["Ranker", "List size", "Lists", "Queries",
                                                   "Earlier copy first",
                                                   f"{100 * float(level):g} % interval"],
                 rows, "A passage and its exact copy at two positions of one list: an "
                       "unbiased ranker puts either copy first half the time (50 %); 100 % "
                       "means the earlier position always wins. Interval: Wilson score "
                       "interval over the lists counted at their effective number — all of "
                       "them when the queries differ no more than their lists do, one per "
                       "query when each query's lists agree (Kish's design effect of the "
                       "queries' intraclass correlation).")


def position_response_table(info: Mapping[str, Any]) -> Table | None:
    curves = {r: e["position_response"] for r, e in info.items() if e.get("position_response")}
    if not curves:
        return None
    width = max(len(c["mean_rank"]) for c in curves.values())
    rows = [[ranker, f"{c.get('queries', 0):,}",
             *[f"{x:.2f}" for x in c["mean_rank"]],
             *["–"] * (width - len(c["mean_rank"]))] for ranker, c in curves.items()]
    return Table("Position-response curve", ["Ranker", "Queries",
                                             *[f"at {p}" for p in range(1, width + 1)]],
                 rows, "Mean output rank (1 = top) of one judged-relevant passage inserted "
                       "at each input position of one fixed list of the query's candidates. "
                       "A ranker blind to position has the same rank in every column.")


def position_bias_table(records: Sequence[Mapping[str, Any]]) -> Table | None:
    found = all_samples_grid(records, "position_bias")
    if found is None:
        return None
    rankers, cells = found
    rows = [[probe, *[_bias_cell(by[ranker]) if ranker in by else "–" for ranker in rankers]]
            for probe, by in cells.items()]
    return Table("Position bias per probe", ["Probe", *rankers], rows,
                 "Share of samples whose verdict followed the position in both orders (the "
                 "two documents at positions (i, j), then (j, i)): such a sample counts as a "
                 "tie in the probe score. In brackets, the part that went to the earlier-"
                 "placed (or, pairwise, the first) document both times: all of it is "
                 "primacy, none of it recency.")


def _bias_cell(record: Mapping[str, Any]) -> str:
    """``62.5 % (earlier 50.0 %)``: the share that followed the position and the part of it
    that favoured the earlier place."""
    bias, earlier = record.get("position_bias"), record.get("position_bias_earlier")
    if bias is None or earlier is None:
        return _percent(bias)
    return f"{_percent(bias)} (earlier {_percent(earlier)})"


def window_table(records: Sequence[Mapping[str, Any]]) -> Table | None:
    chosen = [r for r in records if r.get("subset") in WINDOW_SUBSETS]
    if not chosen:
        return None
    cells: dict[tuple[str, str], dict[str, Mapping[str, Any]]] = {}
    for r in chosen:
        cells.setdefault((r["probe"], r["ranker"]), {})[r["subset"]] = r
    rows = []
    for (probe, ranker), by in cells.items():
        row = [probe, ranker]
        for subset in WINDOW_SUBSETS:
            shown = by.get(subset)
            row.append("–" if shown is None or shown.get("score") is None else
                       f"{shown['score']:+.3f} ({shown['n']:,})")
        rows.append(row)
    return Table("Sliding-window boundaries", ["Probe", "Ranker", "Both in one window",
                                               "Straddling windows"], rows,
                 "Probe lists longer than the ranker's window are ranked by one "
                 "back-to-front sliding-window pass; score (samples) of the pairs whose two "
                 "positions share a window of that pass, and of those that do not.")


def usage_table(run_info: RunInfo) -> Table | None:
    usage: Mapping[str, Mapping[str, int]] = run_info.get("usage") or {}
    if not usage:
        return None
    keys = ["requests", "prompt_tokens", "completion_tokens"]
    keys += sorted({k for counts in usage.values() for k in counts} - set(keys))
    rows = [[ranker, *[f"{counts[k]:,}" if k in counts else "–" for k in keys]]
            for ranker, counts in usage.items()]
    return Table("Requests and tokens", ["Ranker", *[k.replace("_", " ").capitalize()
                                                      for k in keys]], rows,
                 "Requests and tokens this run sent to served rankers (tokens as the "
                 "server reported them); answers read from the score cache cost nothing.")


def listwise_section(records: Sequence[Mapping[str, Any]], run_info: RunInfo
                     ) -> tuple[Section | None, Any]:
    """The section and a figure drawer (None when there is no curve to draw)."""
    info: Mapping[str, Any] = (run_info.get("listwise") or {}).get("rankers") or {}
    tables = [(slug, t) for slug, t in (
        ("listwise-null-test", null_test_table(info)),
        ("listwise-position-response", position_response_table(info)),
        ("listwise-position-bias", position_bias_table(records)),
        ("listwise-windows", window_table(records))) if t is not None]
    if not tables:
        return None, None
    section = Section("listwise", TITLE,
                      "A listwise ranker returns a permutation, so each sample's two documents "
                      "are placed in a list of the query's candidates, once in each order; "
                      "a verdict that follows the position both times is a tie.")
    section.tables += tables
    curves = {r: e["position_response"]["mean_rank"] for r, e in info.items()
              if e.get("position_response")}
    if not curves:
        return section, None

    def draw() -> Figure:
        from abnirml.report.plots import position_response

        return Figure("Position-response curve", position_response(curves),
                      FIGURE_CAPTION)

    return section, draw
