"""δ calibration (ABNIRML §3.3) and the δ sensitivity sweep (journal version §4.1).

For each query, the ranker re-scores the query's candidates (a first-stage run's top 100);
among its top 10 the differences between adjacent scores are collected. δ is the median of
all those gaps over all queries, so an effect of at least δ changes the order of the top
results at least half the time. Other percentiles of the same gaps give the sweep.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

TOP = 10


@dataclass(frozen=True)
class Calibration:
    delta: float
    gaps: np.ndarray          # every adjacent gap used, for sweeps
    queries: int
    source: str               # "calibrated" or "given"

    def at_percentile(self, percentile: float) -> float:
        if self.gaps.size == 0:
            return self.delta
        return float(np.percentile(self.gaps, percentile))


def adjacent_gaps(scores: Sequence[float] | np.ndarray, top: int = TOP) -> np.ndarray:
    """Gaps between adjacent scores of the ``top`` highest scores (non-negative)."""
    ordered = np.sort(np.asarray(scores, dtype=np.float64))[::-1][:top]
    return -np.diff(ordered)


def calibrate(per_query_scores: Mapping[str, np.ndarray], top: int = TOP) -> Calibration:
    """δ = median of the adjacent top-``top`` gaps pooled over all queries."""
    gaps = [adjacent_gaps(per_query_scores[qid], top) for qid in sorted(per_query_scores)]
    pooled = np.concatenate(gaps) if gaps else np.zeros(0)
    delta = float(np.median(pooled)) if pooled.size else 0.0
    if not pooled.size:
        import warnings

        warnings.warn(f"δ calibrated from no score gaps ({len(gaps)} candidate queries, none "
                      "with two or more candidates): δ = 0, so every score difference counts "
                      "as an effect; give --delta or a deeper candidate run", stacklevel=2)
    return Calibration(delta=delta, gaps=pooled, queries=len(gaps), source="calibrated")


def fixed(delta: float) -> Calibration:
    return Calibration(delta=delta, gaps=np.zeros(0), queries=0, source="given")
