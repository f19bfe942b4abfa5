"""δ sensitivity (journal ABNIRML §4.1): probe scores with δ at other percentiles of the gaps.

A ranker's δ is the median of the adjacent top-10 score gaps seen during calibration; the
sweep replaces it by the p-th percentile of the same gaps, p = 0…100, and recomputes every
probe score. A curve that stays flat around p = 50 (the operating point) means the reported
score does not hinge on the exact choice of δ.

Rankers whose δ was given rather than calibrated have no gaps, so they have no curve.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from abnirml.evaluation.execution.experiment import subset_masks
from abnirml.evaluation.execution.score_file import ScoreStore
from abnirml.evaluation.stats.calibration import Calibration
from abnirml.result_fields import ResultRow

OPERATING_POINT = 50.0
DEFAULT_PERCENTILES: tuple[float, ...] = tuple(float(p) for p in range(0, 101, 5))


@dataclass(frozen=True)
class SweepPoint:
    probe: str
    family: str
    ranker: str
    subset: str
    percentile: float
    delta: float
    score: float | None
    n: int


def delta_at(calibration: Calibration, percentile: float) -> float | None:
    """δ at ``percentile`` of the calibration gaps; None when δ was given (no gaps).

    At the operating point this is the calibrated δ itself (the median), not a re-derived
    percentile, so that the sweep's 50th percentile is the main table bit for bit.
    """
    if not 0.0 <= percentile <= 100.0:
        raise ValueError(f"percentile must be in [0, 100], got {percentile}")
    if calibration.gaps.size == 0:
        return None
    if percentile == OPERATING_POINT and calibration.source == "calibrated":
        return calibration.delta
    return float(np.percentile(calibration.gaps, percentile))


def parse_percentiles(text: str) -> tuple[float, ...]:
    """``0-100:5`` (start-stop:step) or ``0,25,50,75,100``."""
    from abnirml.errors import ConfigError

    try:
        if ":" in text:
            span, _, step_text = text.partition(":")
            lo_text, _, hi_text = span.partition("-")
            lo, hi, step = float(lo_text), float(hi_text), float(step_text)
            if step <= 0 or lo > hi:
                raise ValueError
            values = list(np.arange(lo, hi + step / 2, step))
        else:
            values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ConfigError(f"percentiles {text!r}: expected 'LOW-HIGH:STEP' or a list") from None
    if not values or any(not 0 <= v <= 100 for v in values):
        raise ConfigError(f"percentiles {text!r}: values must lie in [0, 100]")
    return tuple(sorted({round(float(v), 6) for v in values}))


def sweep(store: ScoreStore, percentiles: Sequence[float] = DEFAULT_PERCENTILES,
          subsets: Iterable[str] | None = None) -> list[SweepPoint]:
    """One point per probe × ranker × subset × percentile (calibrated rankers only).

    Counting uses sorted differences and binary search, so the cost per extra percentile is
    logarithmic in the number of samples; the counts equal the engine's ``diff > δ`` and
    ``diff < −δ`` exactly.
    """
    wanted = None if subsets is None else set(subsets)
    # δ depends on the ranker only: one percentile computation per ranker, not per probe
    deltas_of = {ranker: [(p, delta_at(store.calibrations[ranker], p)) for p in percentiles]
                 for ranker in store.ranker_names}
    points: list[SweepPoint] = []
    for probe in store.probes:
        for ranker in store.ranker_names:
            deltas = deltas_of[ranker]
            if any(d is None for _, d in deltas):
                continue
            ps = store.scores[(probe.name, ranker)]
            diff = ps.score1 - ps.score2
            for subset, mask in subset_masks(ps.grade, store.grade_bands):
                if wanted is not None and subset not in wanted:
                    continue
                chosen = diff[mask]
                n = int(chosen.shape[0])
                ordered = np.sort(np.abs(chosen) if probe.symmetric else chosen)
                for percentile, delta in deltas:
                    assert delta is not None
                    points.append(SweepPoint(
                        probe.name, probe.family, ranker, subset, float(percentile), delta,
                        _score(ordered, delta, probe.symmetric, n), n))
    return points


def _score(ordered: np.ndarray, delta: float, symmetric: bool, n: int) -> float | None:
    if n == 0:
        return None
    above = n - int(np.searchsorted(ordered, delta, side="right"))
    if symmetric:
        return _round(above / n)
    below = int(np.searchsorted(ordered, -delta, side="left"))
    return _round((above - below) / n)


def records_at(store: ScoreStore, percentile: float) -> list[ResultRow]:
    """Full result records with every calibrated ranker's δ at ``percentile``."""
    delta_for: dict[str, float] = {}
    for name in store.ranker_names:
        delta = delta_at(store.calibrations[name], percentile)
        if delta is not None:
            delta_for[name] = delta
    return store.records(delta_for=delta_for)


def sweep_rows(points: Sequence[SweepPoint]) -> list[dict[str, Any]]:
    """Long-format rows (probe, family, ranker, subset, percentile, delta, score, n)."""
    return [{"probe": p.probe, "family": p.family, "ranker": p.ranker, "subset": p.subset,
             "percentile": p.percentile, "delta": p.delta, "score": p.score, "n": p.n}
            for p in points]


def _round(value: float) -> float:
    """The engine's rounding of scores (12 significant digits)."""
    return float(f"{value:.12g}")
