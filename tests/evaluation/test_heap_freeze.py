"""While pairs are scored the process's existing objects stay out of the garbage collector's
passes (a full pass walks all of them, holding the interpreter's lock while a device waits),
and are handed back afterwards."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from abnirml.evaluation.execution.heap_freeze import frozen_heap
from abnirml.evaluation.execution.scoring import Scorer
from abnirml.rankers.base import RankerHints
from abnirml.rankers.support.cache import ScoreCache


class _Noting:
    """Notes how many objects the collector leaves out while it scores."""

    name = fingerprint = "noting"
    hints = RankerHints(batch_size=2, sort_by_length=False, own_batches=True)

    def __init__(self) -> None:
        self.frozen: list[int] = []

    def score(self, pairs):
        self.frozen.append(gc.get_freeze_count())
        return np.arange(len(pairs), dtype=np.float64)


@pytest.fixture
def nothing_frozen():
    if gc.get_freeze_count():
        pytest.skip("this process froze objects of its own before the test")
    yield
    assert gc.get_freeze_count() == 0


def test_scoring_leaves_the_existing_objects_out_of_collections(nothing_frozen):
    before = [object() for _ in range(10)]        # objects that exist when scoring starts
    ranker = _Noting()
    with ScoreCache(None) as cache:
        Scorer(cache, progress=False).score(ranker, [("q", f"d{i}") for i in range(5)])
    assert len(ranker.frozen) == 3 and min(ranker.frozen) >= len(before)
    assert gc.get_freeze_count() == 0             # handed back once scoring is over


def test_an_error_while_scoring_still_hands_the_objects_back(nothing_frozen):
    class Failing(_Noting):
        def score(self, pairs):
            raise KeyboardInterrupt

    with ScoreCache(None) as cache, pytest.raises(KeyboardInterrupt):
        Scorer(cache, progress=False).score(Failing(), [("q", "d")])
    assert gc.get_freeze_count() == 0


def test_nested_uses_hand_the_objects_back_when_the_outermost_ends(nothing_frozen):
    with frozen_heap():
        frozen = gc.get_freeze_count()
        assert frozen > 0
        with frozen_heap():
            assert gc.get_freeze_count() == frozen
        assert gc.get_freeze_count() == frozen          # the outer one still holds them
    assert gc.get_freeze_count() == 0


def test_objects_the_process_froze_itself_are_left_as_they_are(nothing_frozen):
    gc.freeze()
    try:
        own = gc.get_freeze_count()
        with frozen_heap():
            pass
        # not handed back by the scorer (which would leave none frozen); the count itself
        # may drop by a few as frozen objects other threads release are freed
        assert gc.get_freeze_count() > own // 2
    finally:
        gc.unfreeze()


def test_a_disabled_collector_is_left_alone(nothing_frozen):
    gc.disable()
    try:
        with frozen_heap():
            assert gc.get_freeze_count() == 0
    finally:
        gc.enable()
