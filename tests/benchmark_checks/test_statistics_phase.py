"""The statistics-phase benchmark compares like with like: its reference (the table draws
as they were) and this checkout's draws give the same counts and kept extreme means on any
table of effects, and the benchmark's own comparison finds the demo records identical."""

from __future__ import annotations

import numpy as np
import pytest
from benchmarks.statistics_phase import compare_phase, demo_scores, reference_draw_columns

from abnirml.evaluation.stats.bootstrap import stable_seed
from abnirml.evaluation.stats.verdict import _draw_columns


def _table(rng: np.random.Generator, k: int, columns: int, owners: int, largest: int):
    """Per-query sums and sizes of effect columns as a run has them: some columns constant
    (all ties, every sample +1, the same share in every query), some duplicated, some on
    one side of 0, the rest mixed; queries of up to ``largest`` samples."""
    sizes = rng.integers(1, largest, size=(k, owners)).astype(np.float64)
    sizes[:, 0] = sizes[0, 0]                               # one owner of equal queries
    owner = rng.integers(0, owners, size=columns)
    own = sizes[:, owner]
    kind = rng.integers(0, 6, size=columns)
    share = rng.uniform(-1, 1, size=(k, columns))
    sums = np.round(own * np.where(kind[None, :] == 0, 0.0,            # all ties
                                   np.where(kind[None, :] == 1, 1.0,   # all +1
                                            np.where(kind[None, :] == 2, 0.5,
                                                     np.where(kind[None, :] == 3,
                                                              np.abs(share), share)))))
    sums[:, kind == 4] = sums[:, np.flatnonzero(kind == 4)[:1]] if (kind == 4).any() else 0
    owner[kind == 4] = owner[np.flatnonzero(kind == 4)[:1]] if (kind == 4).any() else 0
    return sums, sizes, owner


# small queries (float32, rounding keeps the means' order), thousands of samples (float32,
# ties settled in float64) and a million (float64 throughout)
@pytest.mark.parametrize("largest", [12, 3000, 1_000_000])
def test_the_draws_equal_the_reference_on_any_table(largest):
    rng = np.random.default_rng(largest)
    for trial in range(12):
        k = int(rng.integers(2, 40))
        sums, sizes, owner = _table(rng, k, int(rng.integers(1, 30)), 4, largest)
        rounds = int(rng.integers(1, 40_000))
        level = float(rng.choice([0.01, 0.001, 1e-5]))
        seed = stable_seed("benchmark-check", trial, largest)
        now = _draw_columns(sums, sizes, owner, rounds, k, level, np.random.default_rng(seed))
        then = reference_draw_columns(sums, sizes, owner, rounds, k, level,
                                      np.random.default_rng(seed))
        for mine, theirs in zip(now, then, strict=True):
            assert mine.shape == theirs.shape and np.array_equal(mine, theirs), trial


def test_the_benchmark_finds_the_demo_records_identical(tmp_path):
    store = demo_scores(["bm25", "ql"], tmp_path / "scores.sqlite", ["mmp:*", "axiom:and"])
    found = compare_phase(store, repeats=1)
    assert found["identical"] and found["rows"] > 40
    assert 0 < found["drawn"]["now"] <= found["drawn"]["before"]


def test_the_draws_equal_the_reference_on_tiny_draws():
    """A block of a few resamples can draw only the queries whose effects sum to 0 (two
    queries, one of them all ties): counted on both sides, as every resample of it is."""
    sums = np.array([[0.0, 0.0, 3.0], [4.0, -2.0, -3.0]])
    sizes = np.array([[3.0], [4.0]])
    owner = np.zeros(3, dtype=np.int64)
    for rounds in range(1, 9):
        for trial in range(6):
            seed = stable_seed("tiny", rounds, trial)
            now = _draw_columns(sums, sizes, owner, rounds, 2, 0.05,
                                np.random.default_rng(seed))
            then = reference_draw_columns(sums, sizes, owner, rounds, 2, 0.05,
                                          np.random.default_rng(seed))
            for mine, theirs in zip(now, then, strict=True):
                assert np.array_equal(mine, theirs), (rounds, trial)
