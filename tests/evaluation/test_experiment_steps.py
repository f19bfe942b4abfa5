"""The engine's steps, each on a hand-made input with a known answer: the unique pairs of
two tables and the calibration candidates, and each sample's two scores read back from the
scores of those unique pairs."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from abnirml.evaluation.execution.candidates import Candidates
from abnirml.evaluation.execution.experiment import (
    ExperimentConfig,
    calibrate_rankers,
    sample_scores,
    unique_pairs,
)
from abnirml.probes.base import SampleTable


def _table(texts, rows):
    """rows: (query, doc1, doc2) indices into texts."""
    query, doc1, doc2 = (np.array(column, dtype=np.int64) for column in zip(*rows, strict=True))
    return SampleTable(texts=texts, query=query, doc1=doc1, doc2=doc2,
                       grade=np.full(len(rows), np.nan))


TABLES = {
    # two samples of one query sharing doc "b"
    "p:one": _table(["q", "a", "b", "c"], [(0, 1, 2), (0, 3, 2)]),
    # the same query and passage "b" in another table's own text list
    "p:two": _table(["b", "q", "d"], [(1, 0, 2)]),
}
COLLECTION = SimpleNamespace(queries={"1": "q"}, docs={"D1": "a", "D2": "e"})


def test_unique_pairs_scores_a_shared_passage_once_across_tables_and_candidates():
    slots = unique_pairs(TABLES, COLLECTION, Candidates("run", {"1": ["D1", "D2"], "2": []}))
    assert sorted(slots.pairs) == [("q", "a"), ("q", "b"), ("q", "c"), ("q", "d"), ("q", "e")]
    assert slots.count == 2 * 2 + 2 * 1 + 2          # six table slots, two candidates
    # slots are laid out table by table, row by row, then the candidates
    assert slots.rows == {"p:one": [slice(0, 2), slice(2, 4)],
                          "p:two": [slice(4, 5), slice(5, 6)]}
    assert slots.calibration == {"1": slice(6, 8)}
    docs = [slots.pairs[i][1] for i in slots.inverse.tolist()]
    assert docs == ["a", "c", "b", "b", "b", "d", "a", "e"]


def test_without_candidates_only_the_tables_are_scored():
    slots = unique_pairs(TABLES, COLLECTION, None)
    assert slots.count == 6 and slots.calibration == {}
    assert len(slots.pairs) == 4


def test_each_sample_reads_its_scores_from_the_unique_pairs():
    slots = unique_pairs(TABLES, COLLECTION, Candidates("run", {"1": ["D1", "D2"]}))
    length = {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0, "e": 5.0}
    values = np.array([length[doc] for _, doc in slots.pairs])
    ranker = SimpleNamespace(name="r")
    scored = {"r": (values, slots.inverse)}
    probes = [SimpleNamespace(name="p:one"), SimpleNamespace(name="p:two")]
    scores = sample_scores(probes, [ranker], TABLES, slots, scored)
    assert scores[("p:one", "r")].score1.tolist() == [1.0, 3.0]
    assert scores[("p:one", "r")].score2.tolist() == [2.0, 2.0]
    assert (scores[("p:two", "r")].score1.tolist(),
            scores[("p:two", "r")].score2.tolist()) == ([2.0], [4.0])
    assert scores[("p:one", "r")].cluster.tolist() == [0, 0]     # one query: one cluster
    given = calibrate_rankers([ranker], ExperimentConfig(deltas={"r": 0.5}), slots, scored)
    assert (given["r"].delta, given["r"].source) == (0.5, "given")
