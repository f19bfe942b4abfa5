"""Results as tidy pandas DataFrames, for notebooks.

One row per (probe, ranker, subset) from :func:`load_results` / :func:`results_frame`
(what ``results.jsonl`` holds), one row per (probe, ranker, sample) from
:func:`load_samples` / :func:`samples_frame` (what ``scores.npz`` holds). Columns carry
numbers, never display strings: a missing score is NaN, significance is a boolean column.
pandas is imported only when a frame is asked for (it comes with the ``adapters`` extra).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

#: the columns every results frame starts with, in this order
LEADING_COLUMNS = ("probe", "family", "ranker", "subset", "score", "ci_low", "ci_high",
                   "p_value", "p_adjusted", "significant", "n", "pos", "neg", "neutral",
                   "mean_diff", "delta")


def _pandas() -> Any:
    try:
        import pandas as pd
    except ImportError:
        from abnirml.errors import ConfigError, install_hint

        raise ConfigError(f"DataFrames need pandas: {install_hint('adapters')}") from None
    return pd


def _flat(record: Mapping[str, Any]) -> dict[str, Any]:
    """Scalars as they are; ``skipped`` as its total; other nested values as JSON text."""
    row: dict[str, Any] = {}
    for key, value in record.items():
        if key == "skipped" and isinstance(value, Mapping):
            row[key] = int(sum(int(v) for v in value.values()))
        elif isinstance(value, (Mapping, list, tuple)):
            row[key] = json.dumps(value, sort_keys=True, ensure_ascii=False)
        else:
            row[key] = value
    return row


def results_frame(records: Iterable[Mapping[str, Any]], row_type: Any = None) -> Any:
    """A DataFrame with one row per result record (see :data:`LEADING_COLUMNS`); the
    columns' types follow ``row_type``'s declared fields (None: the project's
    :class:`~abnirml.result_fields.ResultRow`): numbers as float64 (null → NaN), counts as
    nullable integers (absent on rows of other families → NA), required flags as bool."""
    from abnirml.result_fields import ResultRow, row_fields

    pd = _pandas()
    rows = [_flat(r) for r in records]
    frame = pd.DataFrame(rows)
    leading = [c for c in LEADING_COLUMNS if c in frame.columns]
    frame = frame[leading + [c for c in frame.columns if c not in leading]]
    for field in row_fields(ResultRow if row_type is None else row_type):
        if field.name not in frame.columns:
            continue
        column = frame[field.name]
        if field.name == "skipped" or field.kinds == (int,):
            frame[field.name] = column.astype("Int64")      # skipped: its total (_flat)
        elif float in field.kinds:
            frame[field.name] = pd.to_numeric(column).astype("float64")   # None → NaN
        elif field.kinds == (bool,) and field.required:
            frame[field.name] = column.astype(bool)
    return frame


def load_results(path: str | Path, *, row_type: Any = None) -> Any:
    """The results of an ``abnirml run`` output folder (or its ``results.jsonl``) as a tidy
    DataFrame; like :func:`load_samples`, either the folder or the file may be named. Each
    row is checked against ``row_type`` (None: :class:`~abnirml.result_fields.ResultRow`,
    the schema the run writes; a copy of it with a plugin family's own fields checks and
    types those too): a row that does not fit is one error naming the file and line."""
    from abnirml.files.run_names import RESULTS
    from abnirml.report.run_outputs import read_results
    from abnirml.result_fields import ResultRow

    row_type = ResultRow if row_type is None else row_type
    path = Path(_checked_path(path, "load_results"))
    return results_frame(read_results(path / RESULTS if path.is_dir() else path, row_type),
                         row_type)


def _checked_path(path: Any, caller: str) -> Any:
    if not isinstance(path, (str, os.PathLike)):
        from abnirml.errors import ConfigError

        raise ConfigError(f"{caller} takes an output folder as a str or Path, got "
                          f"{type(path).__name__} {path!r}")
    return path


def load_samples(path: str | Path) -> Any:
    """Per-sample scores of an output folder (or its ``scores.npz``) as a tidy DataFrame."""
    from abnirml.evaluation.execution.score_file import load_scores

    return samples_frame(load_scores(_checked_path(path, "load_samples")))


def samples_frame(store: Any) -> Any:
    """Per-sample scores of a :class:`~abnirml.evaluation.execution.score_file.ScoreStore`: columns
    probe, family, ranker, sample, score1, score2, diff, grade, query."""
    import numpy as np

    pd = _pandas()
    families = {p.name: p.family for p in store.probes}
    parts = []
    for (probe, ranker), scores in store.scores.items():
        count = len(scores.score1)
        if scores.cluster is not None and scores.queries:
            query = np.asarray(scores.queries, dtype=object)[scores.cluster]
        else:
            query = np.full(count, None, dtype=object)
        parts.append(pd.DataFrame({
            "probe": probe, "family": families.get(probe, ""), "ranker": ranker,
            "sample": np.arange(count), "score1": scores.score1, "score2": scores.score2,
            "diff": scores.score1 - scores.score2, "grade": scores.grade, "query": query}))
    if not parts:
        return pd.DataFrame(columns=["probe", "family", "ranker", "sample", "score1",
                                     "score2", "diff", "grade", "query"])
    return pd.concat(parts, ignore_index=True)
