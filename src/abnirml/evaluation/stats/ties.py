"""Evaluating rankings whose scores tie, without letting document ids decide.

``trec_eval`` (and ``ir_measures``) order tied scores by document id. When a ranker gives
many candidates the same score — BM25 gives every Drop-Q document 0 — that order is an
accident of the collection's docno scheme, and on TREC DL 2019 it scores ~4 SD above a random
ordering. Here ties are broken at random instead: each tie-break is one seeded random
order within every group of equal scores, the run is evaluated once per tie-break, and the
reported value is the mean over ``DEFAULT_TIE_BREAKS`` of them (with their SD). Runs
without ties are evaluated exactly once, unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from abnirml.evaluation.stats.bootstrap import stable_seed

DEFAULT_TIE_BREAKS = 10

Run = dict[str, dict[str, float]]


@dataclass(frozen=True)
class TieBrokenValues:
    mean: dict[str, float]
    sd: dict[str, float]          # over the tie-breaks (0 when there were no ties)
    tied: float                   # share of ranked documents whose score ties with another's
    tie_breaks: int               # evaluations averaged (1 without ties)


def tied_share(run: Mapping[str, Mapping[str, float]]) -> float:
    """Share of (query, document) entries whose score equals another entry of that query."""
    total = tied = 0
    for docs in run.values():
        scores = np.fromiter(docs.values(), dtype=np.float64, count=len(docs))
        total += scores.shape[0]
        if scores.shape[0] > 1:
            _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
            tied += int((counts[inverse] > 1).sum())
    return tied / total if total else 0.0


def break_ties(run: Mapping[str, Mapping[str, float]], rng: np.random.Generator) -> Run:
    """The same ranking with every group of equal scores put in a random order.

    Scores are replaced by descending integers (n, n−1, …), so no ties remain and the
    order between different scores is kept.
    """
    out: Run = {}
    for qid in sorted(run):
        docs = run[qid]
        names = sorted(docs)
        scores = np.array([docs[d] for d in names], dtype=np.float64)
        order = np.lexsort((rng.random(len(names)), -scores))
        out[qid] = {names[i]: float(len(names) - rank) for rank, i in enumerate(order)}
    return out


def evaluate_without_tie_order(run: Mapping[str, Mapping[str, float]],
                               evaluate: Callable[[Run], Mapping[str, float]],
                               measures: Sequence[str], seed: int = 0,
                               tie_breaks: int = DEFAULT_TIE_BREAKS, key: str = ""
                               ) -> TieBrokenValues:
    """``evaluate`` once when no scores tie, else the mean over seeded random tie-breaks."""
    share = tied_share(run)
    if share == 0.0:
        values = evaluate(dict(run))  # type: ignore[arg-type]
        return TieBrokenValues({m: float(values[m]) for m in measures},
                               {m: 0.0 for m in measures}, 0.0, 1)
    rng = np.random.default_rng(stable_seed(seed, "ties", key))
    rows = [evaluate(break_ties(run, rng)) for _ in range(max(1, tie_breaks))]
    table = np.array([[row[m] for m in measures] for row in rows], dtype=np.float64)
    sd = table.std(axis=0, ddof=1) if len(rows) > 1 else np.zeros(len(measures))
    return TieBrokenValues(dict(zip(measures, table.mean(axis=0).tolist(), strict=True)),
                           dict(zip(measures, sd.tolist(), strict=True)), share, len(rows))
