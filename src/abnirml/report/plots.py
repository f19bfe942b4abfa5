"""Figures for the report, rendered to PNG bytes with matplotlib's Agg canvas.

Only the object-oriented API is used (``Figure`` + ``FigureCanvasAgg``): no pyplot, no global
backend switch, nothing left behind in the caller's process. matplotlib (the ``report``
extra) is imported when a figure is drawn.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence

from abnirml.evaluation.sweep import OPERATING_POINT, SweepPoint

DPI = 90


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()


def delta_curves(points: Sequence[SweepPoint], title: str, columns: int = 4,
                 symmetric: Mapping[str, bool] | None = None) -> bytes:
    """One panel per probe: score against δ percentile, a line per ranker, the median marked."""
    probes = list(dict.fromkeys(p.probe for p in points))
    rankers = list(dict.fromkeys(p.ranker for p in points))
    columns = max(1, min(columns, len(probes)))
    rows = math.ceil(len(probes) / columns)
    figure = _figure(3.0 * columns, 2.3 * rows + 0.4)
    axes = figure.subplots(rows, columns, squeeze=False, sharex=True)
    by_key: dict[tuple[str, str], list[SweepPoint]] = {}
    for p in points:
        by_key.setdefault((p.probe, p.ranker), []).append(p)
    for index, probe in enumerate(probes):
        ax = axes[index // columns][index % columns]
        for ranker in rankers:
            series = sorted(by_key.get((probe, ranker), []), key=lambda p: p.percentile)
            xs = [p.percentile for p in series if p.score is not None]
            ys = [p.score for p in series if p.score is not None]
            if xs:
                ax.plot(xs, ys, marker=".", markersize=3, linewidth=1.2, label=ranker)
        ax.axvline(OPERATING_POINT, color="0.3", linestyle="--", linewidth=0.8)
        lower = 0.0 if (symmetric or {}).get(probe) else -1.0
        ax.set_ylim(lower - 0.05, 1.05)
        ax.axhline(0.0, color="0.8", linewidth=0.6)
        ax.set_title(probe, fontsize=8)
        ax.tick_params(labelsize=7)
    for index in range(len(probes), rows * columns):
        axes[index // columns][index % columns].set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("δ percentile", fontsize=7)
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        figure.legend(handles, labels, loc="outside lower center", ncols=min(6, len(labels)),
                      fontsize=8, frameon=False)
    figure.suptitle(title, fontsize=10)
    return _png(figure)


def heatmap(matrix: Sequence[Sequence[float]], rows: Sequence[str], columns: Sequence[str],
            title: str, xlabel: str, ylabel: str) -> bytes:
    """A row-normalised matrix as an annotated heatmap (values 0…1, shown as percent)."""
    import numpy as np

    data = np.asarray(matrix, dtype=np.float64).reshape(len(rows), len(columns))
    figure = _figure(1.0 + 0.9 * len(columns), 0.9 + 0.55 * len(rows))
    ax = figure.subplots()
    image = ax.imshow(np.nan_to_num(data), cmap="Blues", vmin=0.0, vmax=1.0, aspect="auto")
    for i in range(data.shape[0]):
        for j in range(data.shape[1]):
            value = data[i, j]
            text = "–" if math.isnan(value) else f"{100 * value:.0f}%"
            ax.text(j, i, text, ha="center", va="center", fontsize=8,
                    color="white" if value > 0.6 else "black")
    ax.set_xticks(range(len(columns)), list(columns), fontsize=8)
    ax.set_yticks(range(len(rows)), list(rows), fontsize=8)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_title(title, fontsize=9)
    figure.colorbar(image, ax=ax, shrink=0.8)
    return _png(figure)
