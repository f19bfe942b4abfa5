"""abnirml.expect: behaviour gates for model CI."""

from __future__ import annotations

import numpy as np
import pytest

from abnirml.errors import ConfigError
from abnirml.expect import expect, expect_many


def test_bm25_prefers_higher_tf_at_equal_length():
    result = expect("bm25", "mmp:tf:length")
    assert result.score >= 0.95
    assert result.significant and result.n > 20      # 26 on the 7-passage demo
    assert result.pos + result.neg + result.neutral == result.n
    assert result.require(at_least=0.95, significant=True) is result


def test_failed_requirement_explains_itself():
    result = expect("bm25", "mmp:tf:length")
    with pytest.raises(AssertionError) as info:
        result.require(at_most=-0.3, min_samples=10_000)
    message = str(info.value)
    assert "bm25 on mmp:tf:length (demo, all)" in message
    assert "is above -0.300" in message and "only" in message and "need ≥ 10000" in message
    assert "score +1.000" in repr(result) or "score=1.0" in repr(result)


def test_ranker_object_and_fixed_delta():
    class ByLength:
        """Scores a document by its character count, times ``sign``."""

        def __init__(self, sign):
            self.sign = sign
            self.name = "longest" if sign > 0 else "shortest"
            self.fingerprint = f"test:length:{sign}"

        def score(self, pairs):
            return self.sign * np.array([len(d) for _, d in pairs], dtype=np.float64)

    shortest = expect(ByLength(-1), "mmp:length:relevance", delta=0.0)
    longest = expect(ByLength(+1), "mmp:length:relevance", delta=0.0)
    assert shortest.ranker == "shortest" and shortest.delta == 0.0
    assert longest.score > 0.5                 # d1 is the longer document (in terms)
    assert shortest.score == pytest.approx(-longest.score)
    assert (shortest.pos, shortest.neg) == (longest.neg, longest.pos)
    constant = expect_many("bm25", "mmp:tf:*", delta=1e9)
    assert set(constant) == {"mmp:tf:relevance", "mmp:tf:length", "mmp:tf:overlap"}
    assert all(e.score == 0.0 and e.neutral == e.n for e in constant.values())


def test_errors():
    with pytest.raises(ConfigError, match="names 3 probes"):
        expect("bm25", "mmp:tf:*")
    with pytest.raises(ConfigError, match="unknown probe"):
        expect("bm25", "tmp:no-such-probe")
    with pytest.raises(ConfigError):
        expect(42, "mmp:tf:length")
