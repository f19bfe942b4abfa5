"""Foil win rates: how often a ranker puts a foil above the judged-relevant passage.

A *foil* probe (one whose probe object says ``foil = True``, such as ``bias:biased-foil``)
pairs a passage judged non-relevant, edited to exploit a bias (d1), with a judged-relevant
passage of the same query (d2). Its probe score counts wins and losses beyond δ; what the
papers report — Fayyaz et al.'s "accuracy", the share of pairs the answer-bearing document
wins — is the plain share of pairs each side wins. Every record of a foil probe gets:

* ``foil_wins``: samples whose foil scored strictly above the relevant passage (no δ: a
  win by any margin, as the papers count it); for a pairwise or listwise ranker, samples it
  preferred the foil in (p > ½: a listwise ranker put it above the relevant passage in both
  orders, so a verdict that follows the position is not a win);
* ``foil_win_rate`` = ``foil_wins`` / n;
* ``foil_win_rate_ci_low`` / ``_high``: its query-clustered percentile bootstrap interval
  (the run's ``--bootstrap`` resamples and ``--ci`` level, seeded by the run's seed, the
  probe and the subset, so every ranker of a probe sees the same resampled queries); when
  every sample agrees, the exact Clopper–Pearson bound over the queries instead
  (:func:`~abnirml.evaluation.stats.bootstrap.unanimous_range`); None with fewer than two queries
  or with intervals off.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import numpy as np

from abnirml.evaluation.stats.bootstrap import cluster_codes, clustered_ci, unanimous_range
from abnirml.result_fields import ResultRow

#: the key that seeds the win rates' resamples apart from the score intervals'
SEED_TAG = "foil-wins"


def is_foil(probe: Any) -> bool:
    return bool(getattr(probe, "foil", False))


def wins(score1: np.ndarray, score2: np.ndarray) -> np.ndarray:
    """1.0 where the foil (d1) won, else 0.0 (ties and losses)."""
    return (np.asarray(score1) > np.asarray(score2)).astype(np.float64)


def win_rate_fields(won: np.ndarray, cluster: np.ndarray | None, resamples: int,
                    level: float, seed: int, key: tuple[object, ...]) -> dict[str, Any]:
    """The four ``foil_*`` fields of one record (see the module docstring)."""
    n = int(won.shape[0])
    count = int(won.sum())
    out: dict[str, Any] = {"foil_wins": count,
                           "foil_win_rate": None if n == 0 else _round(count / n),
                           "foil_win_rate_ci_low": None, "foil_win_rate_ci_high": None}
    if n == 0 or resamples <= 0:
        return out
    _, clusters = cluster_codes(cluster, n)
    if clusters < 2:
        return out
    if count in (0, n):
        low, high = unanimous_range(count / n, clusters, level, 0.0, 1.0)
    else:
        found = clustered_ci(won, cluster, resamples, level, seed, (SEED_TAG, *key))
        if found is None:
            return out
        low, high = float(found[0]), float(found[1])
    out["foil_win_rate_ci_low"], out["foil_win_rate_ci_high"] = _round(low), _round(high)
    return out


def attach_foil_wins(records: Sequence[ResultRow], probes: Sequence[Any],
                     probe_scores: Mapping[tuple[str, str], Any],
                     masks: Callable[[Any], list[tuple[str, np.ndarray]]],
                     resamples: int, level: float, seed: int) -> None:
    """Add the foil fields to every record of a foil probe; ``masks(probe_scores)`` gives
    a ranker's subsets (name → sample mask) as the records were built."""
    foils = {p.name for p in probes if is_foil(p)}
    if not foils:
        return
    subsets: dict[tuple[str, str], dict[str, np.ndarray]] = {}
    for record in records:
        probe, ranker = record["probe"], record["ranker"]
        if probe not in foils:
            continue
        scores = probe_scores[(probe, ranker)]
        if (probe, ranker) not in subsets:
            subsets[(probe, ranker)] = dict(masks(scores))
        mask = subsets[(probe, ranker)].get(record["subset"])
        if mask is None:
            continue
        cluster = None if scores.cluster is None else scores.cluster[mask]
        won = wins(scores.score1[mask], scores.score2[mask])
        cast(dict[str, Any], record).update(win_rate_fields(
            won, cluster, resamples, level, seed, (probe, record["subset"])))


def _round(value: float) -> float:
    return float(f"{value:.12g}")
