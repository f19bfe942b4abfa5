"""Passage aggregation for rankers with a length limit (the succinctness probes' long bodies)."""

import numpy as np
import pytest

from abnirml.errors import ConfigError
from abnirml.rankers.families.passages import PassageAggregate, split_passages
from abnirml.rankers.registry import RankerEnv, build_ranker


class CountX:
    """Scores a passage by how many words are exactly "x"; records what it was asked."""

    name = "countx"
    fingerprint = "countx-v1"

    def __init__(self):
        self.seen = []

    def score(self, pairs):
        self.seen += [d for _, d in pairs]
        return np.array([d.split().count("x") for _, d in pairs], dtype=np.float64)


def test_windows_overlap_and_the_last_one_ends_at_the_end():
    text = " ".join(f"w{i}" for i in range(10))
    assert split_passages(text, 4, 3) == ["w0 w1 w2 w3", "w3 w4 w5 w6", "w6 w7 w8 w9"]
    assert split_passages(text, 4, 4) == ["w0 w1 w2 w3", "w4 w5 w6 w7", "w6 w7 w8 w9"]
    assert split_passages("short  text", 4, 2) == ["short  text"]  # untouched, whole


@pytest.mark.parametrize(("aggregate", "expected"), [("max", [2.0, 1.0]),
                                                     ("mean", [1.0, 1.0]),
                                                     ("first", [0.0, 1.0])])
def test_aggregates(aggregate, expected):
    long_doc = "a a a a x x a a"          # windows (4, stride 4): "a a a a", "x x a a"
    inner = CountX()
    ranker = PassageAggregate(inner, passage_length=4, passage_stride=4, aggregate=aggregate)
    scores = ranker.score([("q", long_doc), ("q", "x a")])
    assert scores.tolist() == expected
    assert inner.seen[-1] == "x a"


def test_fingerprint_separates_settings_from_the_plain_ranker():
    a = PassageAggregate(CountX(), 4, 2)
    b = PassageAggregate(CountX(), 4, 3)
    assert a.fingerprint != b.fingerprint and "countx-v1" in a.fingerprint
    assert a.name == "maxp:countx"


def test_spec_wraps_a_registered_ranker(demo_collection):
    env = RankerEnv(collection=demo_collection)
    ranker = build_ranker("maxp:bm25+k1=0.9+passage_length=3+passage_stride=2", env)
    plain = build_ranker("bm25+k1=0.9", env)
    assert ranker.name == "maxp:bm25+k1=0.9+passage_length=3+passage_stride=2"
    assert ranker.inner.fingerprint == plain.fingerprint
    doc = "the heart rate of adults at rest varies"
    windows = split_passages(doc, 3, 2)
    expected = plain.score([("heart rate", w) for w in windows]).max()
    assert ranker.score([("heart rate", doc)])[0] == pytest.approx(expected)


@pytest.mark.parametrize(("spec", "message"), [
    ("maxp", "needs the ranker to wrap"),
    ("maxp:bm25+passage_length=4+passage_stride=5", "must not exceed"),
    ("maxp:bm25+aggregate=median", "aggregate must be one of"),
    ("maxp:bm25+passage_length=ten", "passage_length: 'ten' is not"),
    ("maxp:bm25+passage_stride=0", "passage_stride=0 must be >= 1"),
    ("maxp:bm25+mu=3", "unknown parameter 'mu'"),
])
def test_bad_specs(demo_collection, spec, message):
    with pytest.raises(ConfigError, match=message):
        build_ranker(spec, RankerEnv(collection=demo_collection))
