"""Rendering patching results: markdown tables, heatmap PNGs and the report section.

Everything is drawn from ``patching.json`` alone (see docs/patching.md), so ``abnirml
report DIR`` can rebuild the section at any time. A grid cell is the mean normalised
effect; 1.0 means patching that activation alone moves the baseline's score all the way to
the perturbed score, 0 means it moves nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from abnirml.counts import counted
from abnirml.files.run_names import PATCHING_DIR

SUMMARY_FILE = "patching.json"
TITLE = "Inside the model: activation patching"


def read_summaries(directory: Path) -> list[dict[str, Any]]:
    """Every ``patching/<ranker>/patching.json`` under a run folder (sorted by path)."""
    root = Path(directory) / PATCHING_DIR
    if not root.is_dir():
        return []
    out = []
    for path in sorted(root.glob(f"*/{SUMMARY_FILE}")):
        try:
            out.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue      # a damaged file: its section is left out, the report still renders
    return out


def _cell(value: Any) -> str:
    return "–" if value is None else f"{value:+.2f}"


STATISTICS = ("mean", "median")


def residual_rows(summary: Mapping[str, Any], stat: str = "mean"
                  ) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the residual grid's ``stat`` (mean or median); classes no sample
    has are left out."""
    grid = summary["residual"]
    columns = summary["columns"]
    shown = [j for j, _ in enumerate(columns)
             if any(row[j] is not None for row in grid["mean"])]
    header = ["Residual stream after", *(columns[j] for j in shown)]
    rows = []
    for layer, row in enumerate(grid[stat]):
        label = "embeddings" if layer == 0 else f"layer {layer}"
        rows.append([label, *(_cell(row[j]) for j in shown)])
    return header, rows


def head_rows(summary: Mapping[str, Any], stat: str = "mean"
              ) -> tuple[list[str], list[list[str]]]:
    grid = summary["heads_grid"][stat]
    header = ["Layer", *(f"H{h + 1}" for h in range(summary["heads"]))]
    return header, [[f"layer {i + 1}", *map(_cell, row)] for i, row in enumerate(grid)]


def top_head_text(summary: Mapping[str, Any]) -> str:
    parts = []
    for item in summary.get("top_heads", []):
        interval = ("" if item["low"] is None else
                    f" [{item['low']:+.2f}, {item['high']:+.2f}]")
        parts.append(f"{item['head']} median {item['median']:+.2f}, mean "
                     f"{item['mean']:+.2f}{interval}")
    return "; ".join(parts)


def intro_text(summary: Mapping[str, Any]) -> str:
    skipped = ", ".join(f"{reason}: {count}" for reason, count in summary["skipped"].items())
    text = (f"{counted(summary['samples'], 'sample')} over "
            f"{counted(summary['queries'], 'query')} "
            f"({counted(summary['tried'], 'pair')} examined"
            + (f"; left out — {skipped}" if skipped else "") + "). "
            f"Mean score: baseline {_plain(summary['mean_base'])}, perturbed "
            f"{_plain(summary['mean_perturbed'])}; {summary['forwards_per_sample']} forward "
            f"passes per sample.")
    if summary.get("top_heads"):
        text += (f" Top heads by median effect (mean, {round(summary['level'] * 100)} % "
                 "interval): " + top_head_text(summary) + ".")
    return text


def _plain(value: Any) -> str:
    return "–" if value is None else f"{value:.4g}"


def markdown(summaries: Sequence[Mapping[str, Any]]) -> str:
    """The standalone ``patching.md`` of one ranker's run."""
    from abnirml.report.tables import Table, to_markdown

    lines = [f"# {TITLE}", "",
             "Normalised effect (patched − baseline) / (perturbed − baseline) per cell, mean "
             "over samples: 1 = that activation alone carries the whole perturbation, 0 = "
             "none of it. Intervals: query-clustered bootstrap (see patching.json)."]
    for summary in summaries:
        for probe in summary["probes"]:
            lines += ["", f"## {probe['probe']} — {probe['ranker']}", "", intro_text(probe)]
            for stat in STATISTICS:
                if "residual" in probe:
                    header, rows = residual_rows(probe, stat)
                    lines += ["", f"Residual stream, {stat}:", "",
                              to_markdown(Table("", header, rows))]
                if "heads_grid" in probe:
                    header, rows = head_rows(probe, stat)
                    lines += ["", f"Attention heads, {stat}:", "",
                              to_markdown(Table("", header, rows))]
        for probe, reason in summary.get("refused", {}).items():
            lines += ["", f"{probe}: refused — {reason}"]
    return "\n".join(lines) + "\n"


def heatmap_png(grid: Sequence[Sequence[Any]], rows: Sequence[str], columns: Sequence[str],
                title: str) -> bytes:
    """A diverging heatmap (−1 … 1, blue to red) of a grid of effects, values written in."""
    import numpy as np

    from abnirml.report.plots import _figure, _png

    values = np.array([[np.nan if v is None else v for v in row] for row in grid], dtype=float)
    height = 0.9 + 0.32 * len(rows)
    width = 1.8 + 0.55 * len(columns)
    figure = _figure(width, height)
    axes = figure.add_subplot(1, 1, 1)
    image = axes.imshow(np.ma.masked_invalid(values), cmap="RdBu_r", vmin=-1, vmax=1,
                        aspect="auto")
    axes.set_xticks(range(len(columns)), labels=list(columns), rotation=30, ha="right",
                    fontsize=7)
    axes.set_yticks(range(len(rows)), labels=list(rows), fontsize=7)
    axes.set_title(title, fontsize=8)
    for (i, j), v in np.ndenumerate(values):
        if not np.isnan(v):
            axes.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6,
                      color="white" if abs(v) > 0.6 else "black")
    figure.colorbar(image, ax=axes, shrink=0.8)
    return _png(figure)


def figures(probe: Mapping[str, Any]) -> dict[str, bytes]:
    """``residual`` and ``heads`` heatmaps of one probe summary (as present)."""
    out = {}
    name = f"{probe['probe']} — {probe['ranker']} (n = {probe['samples']})"
    if "residual" in probe:
        header, rows = residual_rows(probe)
        shown = [probe["columns"].index(c) for c in header[1:]]
        grid = [[row[j] for j in shown] for row in probe["residual"]["mean"]]
        out["residual"] = heatmap_png(grid, [r[0] for r in rows], header[1:],
                                      f"residual stream: {name}")
    if "heads_grid" in probe:
        header, rows = head_rows(probe)
        out["heads"] = heatmap_png(probe["heads_grid"]["mean"], [r[0] for r in rows],
                                   header[1:], f"attention heads: {name}")
    return out


def patching_section(directory: Path) -> Any:
    """The report section for a run folder that holds patching results, else None."""
    from abnirml.report.html import Figure, Section
    from abnirml.report.tables import Table

    summaries = read_summaries(directory)
    if not summaries:
        return None
    section = Section("patching", TITLE,
                      "Causal activation patching on probe pairs: each cell is the mean (or "
                      "median) normalised effect of copying one activation of the perturbed "
                      "run into the baseline run (1 = it carries the whole behaviour, 0 = "
                      "nothing; heatmaps show means). A few samples whose two scores barely "
                      "differ can dominate a mean: compare it with the median. Files: "
                      "patching/<ranker>/ (docs/patching.md).")
    for summary in summaries:
        for probe in summary["probes"]:
            slug = f"patching-{_slug(probe['ranker'])}-{_slug(probe['probe'])}"
            note = intro_text(probe)
            for stat in STATISTICS:
                suffix = "" if stat == "mean" else f"-{stat}"
                for key, part, label, rows_of in (("residual", "residual", "residual stream",
                                                   residual_rows),
                                                  ("heads_grid", "heads", "attention heads",
                                                   head_rows)):
                    if key not in probe:
                        continue
                    header, rows = rows_of(probe, stat)
                    section.tables.append((f"{slug}-{part}{suffix}", Table(
                        f"Patching {probe['probe']} — {probe['ranker']}: {label} ({stat})",
                        header, rows, note)))
                    note = ""
            try:
                for kind, png in figures(probe).items():
                    section.figures.append(Figure(f"{probe['probe']} {kind}", png,
                                                  f"{probe['probe']} — {probe['ranker']}: "
                                                  f"{kind} (n = {probe['samples']})"))
            except ImportError:
                section.intro += " (Figures need matplotlib.)"
        for probe, reason in summary.get("refused", {}).items():
            section.notes.append(f"{probe} ({summary['ranker']['name']}): refused — {reason}")
    return section


def _slug(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "x"
