"""The order a ranker's engine calls are made in, and what each holds.

On a CPU the pairs go shortest first in even calls, as they always did. With
accelerator-sized calls they alternate between the longest and the shortest stretch of the
length order and end in calls that halve, so the device is neither outrun by the host at the
start nor left waiting for the last commit at the end; every pair is still scored once and
every score lands at its pair's position.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from abnirml.evaluation.execution.scoring import (
    TAIL_PAIRS,
    Scorer,
    call_bounds,
    length_order,
)
from abnirml.rankers.base import RankerHints
from abnirml.rankers.support.cache import ScoreCache


def _covered(bounds: list[tuple[int, int]]) -> list[int]:
    return sorted(i for start, stop in bounds for i in range(start, stop))


@pytest.mark.parametrize("count", [0, 1, 999, 1_024, 5_000, 8_192, 8_193, 56_209])
@pytest.mark.parametrize("size", [64, 1_024, 2_048, 8_192])
def test_every_pair_is_in_exactly_one_call_of_at_most_the_call_size(count, size):
    bounds = call_bounds(count, size)
    assert _covered(bounds) == list(range(count))
    assert all(0 < stop - start <= size for start, stop in bounds)


@pytest.mark.parametrize("count", [1, 1_000, 5_000, 56_209])
def test_cpu_sized_calls_are_even_and_shortest_first(count):
    assert call_bounds(count, 1_024) == [(s, min(s + 1_024, count))
                                          for s in range(0, count, 1_024)]


def test_accelerator_calls_alternate_ends_longest_first_and_end_halving():
    bounds = call_bounds(56_209, 8_192)
    sizes = [stop - start for start, stop in bounds]
    assert sizes == [8_192] * 5 + [7_624, 3_812, 1_906, 953, 954]
    assert bounds[0] == (56_209 - 8_192, 56_209)           # the longest pairs first
    assert bounds[1] == (0, 8_192)                         # then the shortest
    assert bounds[2] == (56_209 - 2 * 8_192, 56_209 - 8_192)
    assert bounds[3] == (8_192, 2 * 8_192)
    halving = bounds[5:]                                   # one stretch, in order
    assert all(a[1] == b[0] for a, b in pairwise(halving))
    assert sizes[-1] <= TAIL_PAIRS


def test_one_accelerator_call_worth_of_pairs_still_ends_small():
    sizes = [stop - start for start, stop in call_bounds(5_000, 8_192)]
    assert sizes == [2_500, 1_250, 625, 625]


@pytest.mark.parametrize("every", [True, False])
def test_length_order_is_the_stable_sort_by_characters(every):
    rng = np.random.default_rng(7)
    pairs = [("q" * int(rng.integers(0, 5)), "d" * int(rng.integers(0, 40)))
             for _ in range(3_000)]
    order = np.arange(3_000) if every else np.sort(rng.choice(3_000, 1_200, replace=False))
    expected = sorted(range(len(order)),
                      key=lambda j: len(pairs[order[j]][0]) + len(pairs[order[j]][1]))
    assert length_order(pairs, order).tolist() == expected


def test_length_order_of_texts_past_16_bits_is_still_exact():
    pairs = [("q", "d" * 70_000), ("q", "d" * 5), ("", "d" * 70_000), ("q", "")]
    assert length_order(pairs, np.arange(4)).tolist() == [3, 1, 2, 0]


class _LengthRanker:
    """Scores a pair by its characters; asks for accelerator-sized calls, and notes them."""

    name = fingerprint = "length-ranker"

    def __init__(self) -> None:
        self.hints = RankerHints(batch_size=8_192, sort_by_length=True, own_batches=True)
        self.calls: list[list[tuple[str, str]]] = []

    def score(self, pairs):
        self.calls.append(list(pairs))
        return np.array([len(q) + len(d) for q, d in pairs], dtype=np.float64)


def test_the_scorer_sends_the_longest_pairs_first_and_puts_every_score_in_place(tmp_path):
    rng = np.random.default_rng(3)
    pairs = list(dict.fromkeys((f"q{int(rng.integers(0, 50))}", "d" * int(rng.integers(1, 400))
                                + str(i)) for i in range(20_000)))
    ranker = _LengthRanker()
    with ScoreCache(tmp_path / "scores.sqlite") as cache:
        scores = Scorer(cache, progress=False).score(ranker, pairs)
        assert cache.count() == len(pairs)
    assert scores.tolist() == [float(len(q) + len(d)) for q, d in pairs]
    sent = [pair for call in ranker.calls for pair in call]
    assert sorted(sent) == sorted(pairs)                         # each pair once
    longest = max(len(q) + len(d) for q, d in pairs)
    assert max(len(q) + len(d) for q, d in ranker.calls[0]) == longest
    assert min(len(q) + len(d) for q, d in ranker.calls[1]) == min(
        len(q) + len(d) for q, d in pairs)
    assert len(ranker.calls[-1]) <= TAIL_PAIRS
