"""BM25, QL and TF-IDF against scores computed by hand from their formulas."""

import math

import numpy as np
import pytest

from abnirml.data.stats import CollectionStats
from abnirml.rankers.families.lexical import BM25, TFIDF, QueryLikelihood, bm25_top_k
from abnirml.text.analyzer import Analyzer

DOCS = {
    "a": "apple banana apple",
    "b": "banana cherry",
    "c": "cherry cherry cherry date",
    "d": "date",
}
ANALYZER = Analyzer(stopwords="none", stem=False)


@pytest.fixture(scope="module")
def stats():
    return CollectionStats.build(DOCS.values(), ANALYZER)


def test_collection_statistics(stats):
    assert stats.num_docs == 4
    assert stats.num_tokens == 10
    assert stats.avg_doc_length == 2.5
    assert stats.df == {"apple": 1, "banana": 2, "cherry": 2, "date": 2}
    assert stats.cf == {"apple": 2, "banana": 2, "cherry": 4, "date": 2}


def test_bm25_matches_terrier_formula(stats):
    ranker = BM25(stats)
    # query "apple banana" against doc a (len 3): tf(apple)=2, tf(banana)=1
    k1, b, k3, n, avgdl = 1.2, 0.75, 8.0, 4, 2.5
    norm = k1 * ((1 - b) + b * 3 / avgdl)
    qtf = (k3 + 1) * 1 / (k3 + 1)
    expected = (math.log2((n - 1 + 0.5) / (1 + 0.5)) * (k1 + 1) * 2 / (norm + 2) * qtf
                + math.log2((n - 2 + 0.5) / (2 + 0.5)) * (k1 + 1) * 1 / (norm + 1) * qtf)
    got = ranker.score([("apple banana", DOCS["a"])])
    assert got.dtype == np.float64
    assert got[0] == pytest.approx(expected, rel=1e-12)
    # no matching term → 0
    assert ranker.score([("apple", DOCS["d"])])[0] == 0.0


def test_bm25_query_term_frequency_uses_k3(stats):
    ranker = BM25(stats)
    once = ranker.score([("apple", DOCS["a"])])[0]
    twice = ranker.score([("apple apple", DOCS["a"])])[0]
    assert twice / once == pytest.approx((8 + 1) * 2 / (8 + 2), rel=1e-12)


def test_query_likelihood_dirichlet(stats):
    mu = 10.0
    ranker = QueryLikelihood(stats, mu=mu)
    # query "cherry apple" vs doc c (len 4): tf cherry 3, apple 0
    p_cherry, p_apple = 4 / 10, 2 / 10
    expected = (math.log1p(3 / (mu * p_cherry)) + 0.0 + 2 * math.log(mu / (4 + mu)))
    assert ranker.score([("cherry apple", DOCS["c"])])[0] == pytest.approx(expected, rel=1e-12)
    # log p(q|d) differs from the rank-equivalent form only by a per-query constant
    direct = sum(math.log((tf + mu * p) / (4 + mu)) for tf, p in ((3, p_cherry), (0, p_apple)))
    constant = math.log(p_cherry) + math.log(p_apple)
    assert direct == pytest.approx(expected + constant, rel=1e-12)


def test_query_likelihood_term_unseen_in_collection_is_finite(stats):
    ranker = QueryLikelihood(stats)
    score = ranker.score([("zebra", "zebra zebra")])[0]
    assert math.isfinite(score)


def test_tfidf_matches_terrier_formula(stats):
    ranker = TFIDF(stats)
    k1, b = 1.2, 0.75
    tf_norm = k1 * 3 / (3 + k1 * (1 - b + b * 4 / 2.5))
    expected = tf_norm * math.log2(4 / 2 + 1)
    assert ranker.score([("cherry", DOCS["c"])])[0] == pytest.approx(expected, rel=1e-12)


def test_bm25_is_blind_to_word_order(stats):
    ranker = BM25(stats)
    scores = ranker.score([("apple banana", "apple banana apple"),
                           ("apple banana", "banana apple apple")])
    assert scores[0] == scores[1]


def test_fingerprints_change_with_parameters(stats):
    assert BM25(stats).fingerprint != BM25(stats, k1=0.9).fingerprint
    other = CollectionStats.build(["apple"], ANALYZER)
    assert BM25(stats).fingerprint != BM25(other).fingerprint
    assert BM25(stats).fingerprint == BM25(stats).fingerprint


def test_bm25_top_k_agrees_with_pairwise_scores(stats):
    queries = {"q1": "cherry date", "q2": "apple"}
    ranking = bm25_top_k(stats, DOCS, queries, k=3)
    ranker = BM25(stats)
    for qid, results in ranking.items():
        for docno, score in results:
            assert score == pytest.approx(ranker.score([(queries[qid], DOCS[docno])])[0])
        scores = [s for _, s in results]
        assert scores == sorted(scores, reverse=True)
    assert [d for d, _ in ranking["q2"]] == ["a"]   # only documents that match
    # cherry and date have df = N/2, so Terrier's idf is 0: matching documents are still
    # retrieved (score 0), ties broken by docno
    assert ranking["q1"] == [("b", 0.0), ("c", 0.0), ("d", 0.0)]


def test_a_statistics_pass_longer_than_the_memo_leaves_nothing_in_it():
    """Past memo_size texts the memo would only hold the file's first documents: the pass
    forgets them. Shorter collections stay remembered for the rankers that follow."""
    texts = [f"apple pie number {i} with pears" for i in range(10)]
    reference = CollectionStats.build(texts, Analyzer())
    small = Analyzer(memo_size=3)
    stats = CollectionStats.build(texts, small)
    assert (stats.df, stats.cf, stats.num_tokens, stats.digest) == \
        (reference.df, reference.cf, reference.num_tokens, reference.digest)
    assert small._memo == {}
    roomy = Analyzer(memo_size=10)
    CollectionStats.build(texts, roomy)
    assert set(roomy._memo) == set(texts)


def test_bm25_top_k_over_a_collection_larger_than_the_memo_adds_nothing_to_it():
    docs = {f"d{i}": f"apple {'pie ' * (i % 4)}pear {i}" for i in range(12)}
    queries = {"q1": "apple pie", "q2": "pear"}
    expected = bm25_top_k(CollectionStats.build(docs.values(), Analyzer()), docs, queries, 5)
    small = Analyzer(memo_size=4)
    stats = CollectionStats.build(docs.values(), small)
    assert bm25_top_k(stats, docs, queries, 5) == expected
    assert set(small._memo) <= set(queries.values())


def test_the_word_stem_memo_stays_bounded_and_stems_alike(monkeypatch):
    from abnirml.text import analyzer as analyzer_module

    texts = [f"running{i} runners walked{i} cats{i}" for i in range(40)]
    expected = [Analyzer().analyze(t) for t in texts]
    monkeypatch.setattr(analyzer_module, "STEM_MEMO_SIZE", 5)
    bounded = Analyzer()
    for text, stems in zip(texts, expected, strict=True):
        assert bounded.analyze_unshared(text) == stems
        assert len(bounded._stems) <= 5 + 4      # the cap plus one text's new words
