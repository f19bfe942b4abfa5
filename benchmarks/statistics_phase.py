"""The statistics phase of a cached demo rerun: this checkout's draws against the
column-by-column draws they replaced, measured in one process.

A cached rerun of ``make demo`` reuses every score, so what is left of it is building the
samples and the statistics: the default test's query-clustered resamples of every probe ×
ranker × subset (:func:`abnirml.evaluation.stats.verdict.table_draws`), the intervals beside them,
and the report's comparisons of the rankers. This script scores the Makefile's demo battery
once (its own score cache in a temporary folder), then rebuilds the records from those
scores — exactly what a rerun does after scoring — alternately with this checkout's draws
("now") and with the previous implementation of the table draws ("before", kept below as
:func:`reference_draw_columns`: every column resampled with one float64 product per block,
each block counted and merged whole, BLAS threads as the library chooses). It prints the
CPU seconds of this process (all its threads) for each, their ratio, and the proof that
both did the same work: the records are compared value for value, and the resamples each
drew are counted (the new draws skip the tables whose every column has one mean in every
resample, so they may draw fewer).

Run: ``python benchmarks/statistics_phase.py [--repeats 3] [--rankers bm25,ql,…]
[--cache FILE]`` (default: the Makefile's demo rankers, scored into a temporary cache —
a minute or several on a CPU; ``--cache`` names a score cache to reuse, e.g. the one
``make demo`` filled).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: the Makefile's DEMO_RANKERS
DEMO_RANKERS = ("bm25", "ql", "tfidf", "biencoder", "wmd:glove", "knrm", "lgbm")


def reference_draw_columns(sums: np.ndarray, counts: np.ndarray, owner: np.ndarray,
                           rounds: int, k: int, level: float, rng: np.random.Generator,
                           advance: Callable[[int], object] | None = None
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The table draws as they were: every column resampled, one float64 product per block
    of resamples for all of them, every resampled mean counted and merged into the kept
    extremes (the same random stream, so the same numbers)."""
    from abnirml.evaluation.stats.bootstrap import CHUNK_ELEMENTS, weight_blocks
    from abnirml.evaluation.stats.verdict import tail_size

    columns = sums.shape[1]
    keep = tail_size(rounds, level, True)
    below = np.zeros(columns, dtype=np.int64)
    above = np.zeros(columns, dtype=np.int64)
    low = np.empty((columns, 0))
    high = np.empty((columns, 0))
    rows = CHUNK_ELEMENTS // (k + 2 * columns + counts.shape[1])
    for block in weight_blocks(k, rounds, rng, rows):
        means = (sums.T @ block.T) / (counts.T @ block.T)[owner]
        below += (means <= 0).sum(axis=1)
        above += (means >= 0).sum(axis=1)
        low = _merge_smallest(low, means, keep)
        high = -_merge_smallest(-high, -means, keep)
        if advance is not None:
            advance(block.shape[0])
    return below, above, np.sort(low, axis=1).T, -np.sort(-high, axis=1).T


def _merge_smallest(kept: np.ndarray, values: np.ndarray, keep: int) -> np.ndarray:
    """The ``keep`` smallest of each row of ``kept`` and ``values`` together."""
    if kept.shape[1] < keep:
        merged = np.concatenate([kept, values], axis=1)
        if merged.shape[1] <= keep:
            return merged
        return np.partition(merged, keep - 1, axis=1)[:, :keep]
    row, column = np.nonzero(values < kept.max(axis=1)[:, None])
    if row.size == 0:
        return kept
    rows = kept.shape[0]
    owner = np.concatenate([np.repeat(np.arange(rows), keep), row])
    found = np.concatenate([kept.ravel(), values[row, column]])
    order = np.lexsort((found, owner))
    starts = np.searchsorted(owner[order], np.arange(rows))
    return found[order][(starts[:, None] + np.arange(keep)).ravel()].reshape(rows, keep)


@contextlib.contextmanager
def previous_draws() -> Iterator[None]:
    """Swap the reference draws (and the library's own BLAS threading) in for a while."""
    from abnirml.evaluation.stats import verdict
    saved = verdict._draw_columns, verdict.one_blas_thread
    verdict._draw_columns = reference_draw_columns        # type: ignore[assignment]
    verdict.one_blas_thread = contextlib.nullcontext      # type: ignore[assignment]
    try:
        yield
    finally:
        verdict._draw_columns, verdict.one_blas_thread = saved


@contextlib.contextmanager
def counted_resamples() -> Iterator[list[int]]:
    """Count the resamples the table draws make (their weight blocks' rows)."""
    from abnirml.evaluation.stats import bootstrap
    drawn = [0]
    real = bootstrap.resample_weights

    def counting(k: int, resamples: int, rng: np.random.Generator, *rest: Any) -> np.ndarray:
        drawn[0] += resamples
        return real(k, resamples, rng, *rest)

    bootstrap.resample_weights = counting                  # type: ignore[assignment]
    try:
        yield drawn
    finally:
        bootstrap.resample_weights = real                  # type: ignore[assignment]


def demo_scores(rankers: Sequence[str], cache: Path, probes: Sequence[str] = ("all",)) -> Any:
    """The demo battery's ScoreStore (every probe, the demo transfer data), scored into
    ``cache``; its statistics settings are the run's defaults."""
    from abnirml.evaluation.execution.score_file import ScoreStore
    from abnirml.pipeline import RunConfig, SessionSettings, StatisticsSettings, run
    from abnirml.probes.transfer.probes import check_transfer_data

    output = run(RunConfig(collection="demo", rankers=list(rankers), probes=list(probes),
                           options={"dtp.data": check_transfer_data("demo")}, out=None,
                           effectiveness=False,
                           session=SessionSettings(cache=str(cache), progress=False),
                           statistics=StatisticsSettings(test="ttest", bootstrap=0)))
    store = ScoreStore.from_result(output.result)
    store.stats = StatisticsSettings().stats(0)
    return store


def phase(store: Any, before: bool) -> tuple[float, list[str], int]:
    """CPU seconds of the statistics phase (the records and the rankers' comparisons),
    the records as JSON lines, and the resamples the table draws made."""
    from abnirml.evaluation.analyses.compare import ranker_pairs
    from abnirml.evaluation.stats import bootstrap
    from abnirml.report.findings import screening_stats

    bootstrap._WEIGHTS.entries.clear()                    # no draws kept between runs
    bootstrap._WEIGHTS.held = 0
    swap = previous_draws() if before else contextlib.nullcontext()
    with swap, counted_resamples() as drawn:
        start = time.process_time()
        records = store.records()
        pairs = ranker_pairs(store, screening_stats(store.stats)) if len(
            store.ranker_names) > 1 else {}
        seconds = time.process_time() - start
    lines = [json.dumps(r, sort_keys=True) for r in records]
    lines += [json.dumps([a, b, p, row.__dict__], sort_keys=True)
              for (a, b), rows in pairs.items() for p, row in rows.items()]
    return seconds, lines, drawn[0]


def compare_phase(store: Any, repeats: int) -> dict[str, Any]:
    """Both implementations ``repeats`` times, alternating; medians and the proofs."""
    cpu: dict[str, list[float]] = {"before": [], "now": []}
    output: dict[str, list[str]] = {}
    drawn: dict[str, int] = {}
    for _ in range(repeats):
        for name in ("before", "now"):
            seconds, lines, count = phase(store, name == "before")
            cpu[name].append(seconds)
            output[name], drawn[name] = lines, count
    return {"cpu": {n: statistics.median(v) for n, v in cpu.items()},
            "identical": output["before"] == output["now"], "rows": len(output["now"]),
            "drawn": drawn}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rankers", default=",".join(DEMO_RANKERS))
    parser.add_argument("--cache", type=Path, default=None,
                        help="a score cache to read and fill (default: a temporary one)")
    args = parser.parse_args(argv)
    load = " / ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"device: CPU, {os.cpu_count()} cores visible, load average {load} at start "
          "(a shared machine: the CPU seconds are this process's, all its threads)")
    with tempfile.TemporaryDirectory(prefix="abnirml-statistics-") as tmp:
        start = time.perf_counter()
        store = demo_scores(args.rankers.split(","), args.cache or Path(tmp) / "scores.sqlite")
        print(f"demo battery scored in {time.perf_counter() - start:.0f} s: "
              f"{len(store.probes)} probes × {len(store.ranker_names)} rankers")
    found = compare_phase(store, args.repeats)
    cpu = found["cpu"]
    print(f"\n| statistics phase | CPU s (median of {args.repeats}) | resamples drawn |\n"
          "|---|---|---|")
    for name in ("before", "now"):
        print(f"| {name} | {cpu[name]:.2f} | {found['drawn'][name]:,} |")
    print(f"\nCPU ratio before / now: {cpu['before'] / cpu['now']:.1f}×; the "
          f"{found['rows']:,} records and comparisons are "
          f"{'identical' if found['identical'] else 'DIFFERENT'}")
    return 0 if found["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
