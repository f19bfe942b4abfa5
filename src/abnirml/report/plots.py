"""Figures for the report, rendered to PNG bytes with matplotlib's Agg canvas.

Only the object-oriented API is used (``Figure`` + ``FigureCanvasAgg``): no pyplot, no global
backend switch, nothing left behind in the caller's process. matplotlib (the ``report``
extra) is imported when a figure is drawn.

Drawing is most of a fully cached rerun's time (the δ-curve grids take seconds each), so
every figure's PNG is kept in ``figures/`` beside the score cache, named by a hash of
everything that goes into it (the drawing function, its inputs, this module's figure
version and matplotlib's version): a rerun with the same inputs reads the bytes back and
never imports matplotlib. ``ABNIRML_FIGURE_CACHE`` moves the folder; ``off`` disables it.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from abnirml.evaluation.stats.sweep import OPERATING_POINT, SweepPoint
from abnirml.files.derived_values import store_json_quietly, store_quietly

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.figure import Figure

DPI = 90
FIGURE_VERSION = "6"          # bump when a drawing function changes what it draws
#: Okabe & Ito's colour-blind-safe palette (black last, kept out of the ranker cycle)
OKABE_ITO = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442",
             "#000000")


def figure_cache_dir() -> Path | None:
    """Where rendered figures are kept, or None when caching is off."""
    explicit = os.environ.get("ABNIRML_FIGURE_CACHE")
    if explicit is not None:
        return None if explicit.strip().lower() in ("", "off", "0", "none") else Path(explicit)
    from abnirml.rankers.support.cache import default_cache_path

    return default_cache_path().parent / "figures"


def _matplotlib_version() -> str:
    return package_version("matplotlib")


def package_version(distribution: str) -> str:
    """An installed distribution's version (from its metadata, no import), or ``none``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return "none"


def cached_png(kind: str, draw: Callable[[], bytes], *inputs: object) -> bytes:
    """``draw()``'s PNG, read from the figure cache when the same inputs drew it before."""
    directory = figure_cache_dir()
    if directory is None:
        return draw()
    key = hashlib.blake2b(repr((FIGURE_VERSION, _matplotlib_version(), kind, inputs)
                               ).encode("utf-8"), digest_size=16).hexdigest()
    path = directory / f"{kind}-{key}.png"
    try:
        return path.read_bytes()
    except OSError:
        pass
    png = draw()
    store_quietly(path, png)      # an unwritable cache only costs the next run a redraw
    return png


def cached_json(kind: str, compute: Callable[[], Any], *inputs: object) -> Any:
    """``compute()``'s JSON value, kept in the figure cache folder like the figures.

    For report values whose computation costs far more than reading them back (a library
    import, a resampling): the key hashes ``kind`` and every input exactly (``repr``), so
    the caller passes whatever else decides the value (a library's version). Floats
    survive JSON exactly; tuples come back as lists. A file that does not decode is
    computed again and replaced.
    """
    directory = figure_cache_dir()
    if directory is None:
        return compute()
    key = hashlib.blake2b(repr((FIGURE_VERSION, kind, inputs)).encode("utf-8"),
                          digest_size=16).hexdigest()
    path = directory / f"{kind}-{key}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    value = compute()
    store_json_quietly(path, value)
    return value


def _figure(width: float, height: float,
            layout: Literal["constrained", "tight"] | None = "constrained") -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=DPI, layout=layout)
    FigureCanvasAgg(figure)
    return figure


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()


def delta_curves(points: Sequence[SweepPoint], title: str, columns: int = 4,
                 symmetric: Mapping[str, bool] | None = None) -> bytes:
    """One panel per probe: score against δ percentile, a line per ranker, the median marked."""
    flags = sorted((symmetric or {}).items())
    return cached_png("delta-curves",
                      lambda: _draw_delta_curves(points, title, columns, symmetric),
                      list(points), title, columns, flags)


def curve_groups(points: Sequence[SweepPoint]
                 ) -> dict[str, list[tuple[str, list[float], list[float]]]]:
    """Per probe, its curves as (label, xs, ys), rankers with identical curves merged into
    one curve labelled ``a = b``; probes no ranker has a score for are left out."""
    rankers = list(dict.fromkeys(p.ranker for p in points))
    by_key: dict[tuple[str, str], list[SweepPoint]] = {}
    for p in points:
        by_key.setdefault((p.probe, p.ranker), []).append(p)
    out: dict[str, list[tuple[str, list[float], list[float]]]] = {}
    for probe in dict.fromkeys(p.probe for p in points):
        merged: dict[tuple[tuple[float, float], ...], list[str]] = {}
        for ranker in rankers:
            series = sorted(by_key.get((probe, ranker), []), key=lambda p: p.percentile)
            curve = tuple((p.percentile, round(p.score, 12)) for p in series
                          if p.score is not None)
            if curve:
                merged.setdefault(curve, []).append(ranker)
        if merged:
            out[probe] = [(" = ".join(names), [x for x, _ in curve], [y for _, y in curve])
                          for curve, names in merged.items()]
    return out


def _draw_delta_curves(points: Sequence[SweepPoint], title: str, columns: int,
                       symmetric: Mapping[str, bool] | None) -> bytes:
    groups = curve_groups(points)
    rankers = list(dict.fromkeys(p.ranker for p in points))
    probes = list(groups)
    columns = max(1, min(columns, len(probes)))
    rows = max(1, math.ceil(len(probes) / columns))
    legend_rows = math.ceil(len(rankers) / 4)
    width, height = 3.0 * columns, 2.3 * rows + 0.6 + 0.2 * legend_rows
    # A fixed grid, not constrained layout: every panel has the same furniture (a title of
    # one line, 7-point ticks), so fixed margins fit, and constrained layout's solver took
    # about half of the report's drawing time on a 30-panel grid.
    figure = _figure(width, height, layout=None)
    top, bottom = 0.55 / height, (0.45 + 0.2 * legend_rows) / height
    figure.subplots_adjust(left=0.45 / width, right=1 - 0.12 / width, top=1 - top,
                           bottom=bottom, wspace=0.55 / 3.0,
                           hspace=0.62 / 2.3)
    axes = figure.subplots(rows, columns, squeeze=False, sharex=True)
    single_styles = (("-", "o"), ("--", "x"), ("-.", "^"), (":", "s"), ("-", "v"),
                     ("--", "D"), ("-.", "P"))

    def style(ranker: str) -> dict[str, object]:
        """One look per ranker in every panel: colour, dash and marker all differ, so
        coinciding curves stay visible one over the other."""
        i = rankers.index(ranker)
        line, marker = single_styles[i % len(single_styles)]
        return {"color": OKABE_ITO[i % (len(OKABE_ITO) - 1)], "linestyle": line,
                "marker": marker}

    handles: dict[str, Artist] = {}
    for index, probe in enumerate(probes):
        ax = axes[index // columns][index % columns]
        same: list[str] = []
        for label, xs, ys in groups[probe]:
            names = label.split(" = ")
            if len(names) > 1:
                same.append(label)
            for ranker in names:
                (line,) = ax.plot(xs, ys, markersize=3.5, linewidth=1.2,
                                  markerfacecolor="none", label=ranker, **style(ranker))
                handles.setdefault(ranker, line)
        if same:      # the legend names rankers only; the panel says which curves coincide
            ax.text(0.03, 0.04, "; ".join(same), transform=ax.transAxes, fontsize=6,
                    color="0.2", zorder=5,
                    bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "none", "pad": 1})
        ax.axvline(OPERATING_POINT, color="0.3", linestyle="--", linewidth=0.8)
        lower = 0.0 if (symmetric or {}).get(probe) else -1.0
        ax.set_ylim(lower - 0.05, 1.05)
        ax.set_yticks([t for t in (-1.0, -0.5, 0.0, 0.5, 1.0) if t >= lower])
        ax.axhline(0.0, color="0.8", linewidth=0.6)
        ax.set_title(probe, fontsize=8 if len(probe) <= 36 else 6.5)
        ax.tick_params(labelsize=7)
    for index in range(len(probes), rows * columns):
        axes[index // columns][index % columns].set_visible(False)
    # The lowest panel of each column carries the δ axis, also where the last row is short.
    for index in range(max(0, len(probes) - columns), len(probes)):
        ax = axes[index // columns][index % columns]
        ax.tick_params(labelbottom=True)
        ax.set_xlabel("δ percentile", fontsize=7)
    if handles:
        order = [r for r in rankers if r in handles]
        figure.legend([handles[r] for r in order], order, loc="lower center",
                      bbox_to_anchor=(0.5, 0.02 / height), ncols=min(4, len(handles)),
                      fontsize=8, frameon=False)
    figure.suptitle(title, fontsize=10, y=1 - 0.12 / height)
    return _png(figure)


def heatmap_grid(panels: Sequence[tuple[str, Sequence[Sequence[float]], Sequence[str]]],
                 columns: Sequence[str], xlabel: str, ylabel: str) -> bytes:
    """Several row-normalised matrices (title, matrix, row labels) sharing ``columns`` as
    panels of one compact figure on one 0–100 % colour scale."""
    return cached_png("heatmap-grid",
                      lambda: _draw_heatmap_grid(panels, columns, xlabel, ylabel),
                      [(t, [list(map(float, r)) for r in m], list(rows)) for t, m, rows in panels],
                      list(columns), xlabel, ylabel)


def _draw_heatmap_grid(panels: Sequence[tuple[str, Sequence[Sequence[float]], Sequence[str]]],
                       columns: Sequence[str], xlabel: str, ylabel: str) -> bytes:
    import numpy as np

    per_row = min(4, max(1, len(panels)))
    grid_rows = math.ceil(len(panels) / per_row)
    height = max(len(rows) for _, _, rows in panels)
    figure = _figure(0.6 + per_row * (0.9 + 0.75 * len(columns)),
                     0.7 + grid_rows * (0.8 + 0.45 * height))
    axes = figure.subplots(grid_rows, per_row, squeeze=False)
    image = None
    for index, (title, matrix, rows) in enumerate(panels):
        ax = axes[index // per_row][index % per_row]
        data = np.asarray(matrix, dtype=np.float64).reshape(len(rows), len(columns))
        image = _percent_image(ax, data)
        ax.set_xticks(range(len(columns)), list(columns), fontsize=7)
        ax.set_yticks(range(len(rows)), list(rows), fontsize=7)
        ax.set_title(title, fontsize=8)
        if index % per_row == 0:
            ax.set_ylabel(ylabel, fontsize=7)
        if index // per_row == grid_rows - 1:
            ax.set_xlabel(xlabel, fontsize=7)
    for index in range(len(panels), grid_rows * per_row):
        axes[index // per_row][index % per_row].set_visible(False)
    if image is not None:
        figure.colorbar(image, ax=axes, shrink=0.8)
    return _png(figure)


def heatmap(matrix: Sequence[Sequence[float]], rows: Sequence[str], columns: Sequence[str],
            title: str, xlabel: str, ylabel: str) -> bytes:
    """A row-normalised matrix as an annotated heatmap (values 0…1, shown as percent)."""
    return cached_png("heatmap",
                      lambda: _draw_heatmap(matrix, rows, columns, title, xlabel, ylabel),
                      [list(map(float, r)) for r in matrix], list(rows), list(columns), title,
                      xlabel, ylabel)


def _draw_heatmap(matrix: Sequence[Sequence[float]], rows: Sequence[str],
                  columns: Sequence[str], title: str, xlabel: str, ylabel: str) -> bytes:
    import numpy as np

    data = np.asarray(matrix, dtype=np.float64).reshape(len(rows), len(columns))
    figure = _figure(1.0 + 0.9 * len(columns), 0.9 + 0.55 * len(rows))
    ax = figure.subplots()
    image = _percent_image(ax, data)
    ax.set_xticks(range(len(columns)), list(columns), fontsize=8)
    ax.set_yticks(range(len(rows)), list(rows), fontsize=8)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_title(title, fontsize=9)
    figure.colorbar(image, ax=ax, shrink=0.8)
    return _png(figure)


def _percent_image(ax: Any, data: Any) -> Any:
    """Draw a 0…1 matrix on ``ax`` with each cell written as a percent ("–" where undefined).

    Shared by the single heatmap and the rank-origin panels so both read the same way.
    """
    import numpy as np

    image = ax.imshow(np.nan_to_num(data), cmap="Blues", vmin=0.0, vmax=1.0, aspect="auto")
    for i in range(data.shape[0]):
        for j in range(data.shape[1]):
            value = data[i, j]
            text = "–" if math.isnan(value) else f"{100 * value:.0f}%"
            ax.text(j, i, text, ha="center", va="center", fontsize=8,
                    color="white" if value > 0.6 else "black")
    return image


def position_response(curves: Mapping[str, Sequence[float]]) -> bytes:
    """Mean output rank (1 = top, drawn at the top) against input position, one line per
    ranker: a ranker blind to position draws a flat line."""
    shown = {name: [float(x) for x in values] for name, values in curves.items()}
    return cached_png("position-response", lambda: _draw_position_response(shown), shown)


def _draw_position_response(curves: Mapping[str, Sequence[float]]) -> bytes:
    width = max(len(v) for v in curves.values())
    figure = _figure(5.2, 3.2)
    ax = figure.add_subplot()
    markers = ("o", "x", "^", "s", "v", "D", "P")
    for i, (name, values) in enumerate(curves.items()):
        ax.plot(range(1, len(values) + 1), values, marker=markers[i % len(markers)],
                markersize=4, linewidth=1.2, markerfacecolor="none",
                color=OKABE_ITO[i % (len(OKABE_ITO) - 1)], label=name)
    ax.set_xlim(0.5, width + 0.5)
    ax.set_ylim(width + 0.5, 0.5)           # rank 1 at the top
    ax.set_xticks(range(1, width + 1))
    ax.set_xlabel("input position of the relevant passage", fontsize=8)
    ax.set_ylabel("mean output rank", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7, frameon=False)
    return _png(figure)
