"""The report's bias section: foil win rates per ranker, and each bias probe's direction
beside the direction its source paper reports.

Built from the records alone (renders only): the ``foil_*`` fields that foil probes' records
carry (:mod:`abnirml.evaluation.analyses.foil_wins`) and the ``paper_direction`` a probe declares
(+1: the reported bias shows as a positive score, −1: as a negative one). Nothing here names
a family, so a plugin's foil probe gets the same table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from abnirml.report.html import Section
from abnirml.report.tables import Table, all_samples_grid
from abnirml.run_record import RunInfo, statistics_of

TITLE = "Ranking biases: foil win rates and directions"
ALL = "all"


def _percent(value: Any) -> str:
    return "–" if value is None else f"{100 * float(value):.1f}"


def foil_table(records: Sequence[Mapping[str, Any]], level: float) -> Table | None:
    chosen = [r for r in records if r.get("subset") == ALL and "foil_win_rate" in r]
    if not chosen:
        return None
    rows: list[list[str]] = []
    previous = None
    for r in chosen:
        low, high = r.get("foil_win_rate_ci_low"), r.get("foil_win_rate_ci_high")
        interval = "–" if low is None or high is None else \
            f"[{_percent(low)}, {_percent(high)}]"
        rows.append(["" if r["probe"] == previous else r["probe"], r["ranker"],
                     f"{r.get('foil_wins', 0):,}", f"{r['n']:,}",
                     _percent(r.get("foil_win_rate")), interval])
        previous = r["probe"]
    return Table("Foil win rates", ["Probe", "Ranker", "Foil wins", "Pairs", "Win rate (%)",
                                    f"{100 * level:g} % interval (%)"], rows,
                 "d1 is a foil (a passage judged non-relevant, edited to exploit a bias), d2 "
                 "a judged-relevant passage of the same query. Win rate: the share of pairs "
                 "whose foil the ranker scored above the relevant passage by any margin "
                 "(pairwise and listwise rankers: preferred it in both orders); 50 % is a "
                 "coin toss, an unbiased ranker stays near 0 %. Interval: query-clustered "
                 "bootstrap (exact bound when every pair agrees).")


def _verdict(record: Mapping[str, Any], direction: int) -> str:
    score = record.get("score")
    if score is None:
        return "–"
    shown = f"{score:+.3f}"
    if not record.get("significant") or score == 0:
        return f"no effect ({shown})"
    same = (score > 0) == (direction > 0)
    return f"{'shows the bias' if same else 'the opposite'} ({shown})"


def direction_table(records: Sequence[Mapping[str, Any]]) -> Table | None:
    found = all_samples_grid(records, "paper_direction")
    if found is None:
        return None
    rankers, cells = found
    rows = []
    for probe, by in cells.items():
        direction = int(next(iter(by.values()))["paper_direction"])
        rows.append([probe, "positive" if direction > 0 else "negative",
                     *[_verdict(by[k], direction) if k in by else "–" for k in rankers]])
    return Table("Directions beside the papers'", ["Probe", "Bias shows as", *rankers], rows,
                 "The sign a score takes when the ranker has the bias the probe's source "
                 "paper reports, and each ranker's all-samples score: it shows the bias or "
                 "the opposite when significant, else no effect.")


def foil_section(records: Sequence[Mapping[str, Any]], run_info: RunInfo
                 ) -> Section | None:
    level = statistics_of(run_info)["ci"]
    tables = [(slug, t) for slug, t in (("foil-win-rates", foil_table(records, level)),
                                        ("bias-directions", direction_table(records)))
              if t is not None]
    if not tables:
        return None
    section = Section("biases", TITLE,
                      "Probes of the shortcuts rankers were shown to take — short, early, "
                      "repeated and literal evidence, stuffed keywords, instructions inside a "
                      "passage — with the direction each source paper reports.")
    section.tables += tables
    return section
