"""Averages over samples with query-clustered bootstrap intervals, and the top heads.

The intervals are abnirml's own (:func:`abnirml.evaluation.stats.bootstrap.clustered_ci`):
queries are resampled with all their samples, since samples of one query are not
independent. Samples are put in their seeded order first, so the float sums — and so every
number here — do not depend on the order the samples were patched in.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from abnirml.evaluation.stats.bootstrap import DEFAULT_LEVEL, DEFAULT_RESAMPLES, clustered_ci
from abnirml.mechanism.study import COLUMNS, ProbePatching, stacked

TOP_HEADS = 5


def _grid(values: np.ndarray, clusters: np.ndarray, resamples: int, level: float, seed: int,
          key: tuple[str, ...]) -> dict[str, Any]:
    """Mean, interval and sample count of every cell of ``values`` ``[n, rows, cols]``
    (NaN cells are left out of their cell's statistics)."""
    n, rows, cols = values.shape
    flat = values.reshape(n, rows * cols)
    present = ~np.isnan(flat)
    counts = present.sum(axis=0)
    mean = np.full(rows * cols, np.nan)
    median = np.full(rows * cols, np.nan)
    low = np.full(rows * cols, np.nan)
    high = np.full(rows * cols, np.nan)
    for j in range(rows * cols):
        keep = present[:, j]
        if not keep.any():
            continue
        column = flat[keep, j]
        mean[j] = float(np.mean(column))
        median[j] = float(np.median(column))
        interval = clustered_ci(column, clusters[keep], resamples, level, seed, (*key, str(j)))
        if interval is not None:
            low[j], high[j] = float(interval[0]), float(interval[1])

    def shaped(a: np.ndarray) -> list[list[float | None]]:
        return [[None if np.isnan(v) else round(float(v), 6) for v in row]
                for row in a.reshape(rows, cols)]

    return {"mean": shaped(mean), "median": shaped(median), "low": shaped(low),
            "high": shaped(high),
            "n": counts.reshape(rows, cols).astype(int).tolist()}


def summarise(result: ProbePatching, resamples: int = DEFAULT_RESAMPLES,
              level: float = DEFAULT_LEVEL, seed: int = 0) -> dict[str, Any]:
    """The JSON-ready summary of one probe × ranker (the ``probes`` entries of
    ``patching.json``, described in docs/patching.md)."""
    order = sorted(range(len(result.samples)), key=lambda i: result.samples[i].key)
    samples = [result.samples[i] for i in order]
    clusters = np.asarray([s.qid or s.key for s in samples])
    out: dict[str, Any] = {
        "probe": result.probe, "ranker": result.ranker, "layers": result.layers,
        "heads": result.heads, "granularities": list(result.granularities),
        "samples": len(samples), "queries": len(set(clusters.tolist())),
        "tried": result.tried, "skipped": dict(sorted(result.skipped.items())),
        "forwards_per_sample": (round(float(np.mean([s.forwards for s in samples])), 1)
                                if samples else 0),
        "mean_base": _mean([s.base for s in samples]),
        "mean_perturbed": _mean([s.perturbed for s in samples]),
        "mean_changed_tokens": _mean([s.changed for s in samples]),
        "level": level, "resamples": resamples, "columns": list(COLUMNS),
    }
    if not samples:
        return out
    key = ("patch", result.probe, result.ranker)
    if "residual" in result.granularities:
        stack = stacked([s.residual for s in samples], "residual")
        out["residual"] = _grid(stack, clusters, resamples, level, seed, (*key, "residual"))
    if "heads" in result.granularities:
        stack = stacked([s.heads for s in samples], "heads")
        grid = _grid(stack, clusters, resamples, level, seed, (*key, "heads"))
        out["heads_grid"] = grid
        out["top_heads"] = top_heads(grid)
    return out


def top_heads(grid: dict[str, Any], count: int = TOP_HEADS) -> list[dict[str, Any]]:
    """The ``count`` heads with the largest median effect in absolute value (ties: the
    larger absolute mean), named 1-based: ``L2.H5`` is layer 2, head 5.

    Ranked by the median because one sample whose two scores barely differ can give any
    head a huge normalised effect and so a large mean; the mean and its interval are kept
    beside it."""
    cells = [(abs(median), abs(grid["mean"][layer][head]), layer, head)
             for layer, row in enumerate(grid["median"])
             for head, median in enumerate(row) if median is not None]
    cells.sort(key=lambda c: (-c[0], -c[1], c[2], c[3]))
    return [{"head": f"L{layer + 1}.H{head + 1}", "layer": layer + 1, "index": head + 1,
             "median": grid["median"][layer][head], "mean": grid["mean"][layer][head],
             "low": grid["low"][layer][head], "high": grid["high"][layer][head]}
            for _, _, layer, head in cells[:count]]


def _mean(values: list[float]) -> float | None:
    return round(float(np.mean(values)), 6) if values else None
