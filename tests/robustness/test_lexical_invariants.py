"""Bag-of-words rankers: blind to word order, Unicode-form blind, linear in query length."""

from __future__ import annotations

import random
import unicodedata

import numpy as np
import pytest

from abnirml.data.stats import CollectionStats
from abnirml.pipeline import RunConfig, SessionSettings, run
from abnirml.rankers.families.lexical import BM25, TFIDF, QueryLikelihood
from abnirml.text.analyzer import Analyzer

LEXICAL = ["bm25", "ql", "tfidf"]
#: the query's words, the passage's words, the passage's sentences (best-matching one first
#: or last) in another order
WORD_ORDER_PROBES = ["qvp:shuffle-words", "tmp:shuffle-words", "bias:early-evidence"]


def _largest_order_difference(collection: str, out) -> dict[str, float]:
    """probe → the largest |score2 − score1| over every sample of every lexical ranker."""
    run(RunConfig(collection=collection, rankers=LEXICAL, probes=WORD_ORDER_PROBES, out=str(out),
                  seed=0, session=SessionSettings(cache=None, progress=False)))
    import json

    with np.load(out / "scores.npz", allow_pickle=False) as store:
        manifest = json.loads(str(store["manifest"]))
        found = {}
        for i, probe in enumerate(manifest["probes"]):
            first, second = store[f"score1_{i}"], store[f"score2_{i}"]
            assert first.shape[0] == len(LEXICAL) and first.size > 0
            found[probe["name"]] = float(np.max(np.abs(second - first)))
    return found


def test_word_order_changes_no_lexical_score_on_the_demo(tmp_path):
    assert _largest_order_difference("demo", tmp_path / "out") == {
        "qvp:shuffle-words": 0.0, "tmp:shuffle-words": 0.0, "bias:early-evidence": 0.0}


def test_word_order_changes_no_lexical_score_on_dl19(dl19, tmp_path):
    assert _largest_order_difference(str(dl19), tmp_path / "out") == {
        "qvp:shuffle-words": 0.0, "tmp:shuffle-words": 0.0, "bias:early-evidence": 0.0}


@pytest.fixture(scope="module")
def stats() -> CollectionStats:
    rng = random.Random(3)
    vocab = [f"term{i}" for i in range(3000)]
    docs = [" ".join(rng.choice(vocab) for _ in range(40)) for _ in range(300)]
    return CollectionStats.build(docs, Analyzer())


@pytest.mark.parametrize("ranker_class", [BM25, QueryLikelihood, TFIDF])
def test_every_query_permutation_scores_bit_for_bit_the_same(stats, ranker_class):
    rng = random.Random(5)
    words = [f"term{rng.randrange(3000)}" for _ in range(12)]
    doc = " ".join(words[::2] * 3 + ["term7"] * 4)
    ranker = ranker_class(stats)
    permutations = []
    for _ in range(30):
        rng.shuffle(words)
        permutations.append((" ".join(words), doc))
    scores = ranker.score(permutations)
    assert scores[0] != 0.0
    assert set(scores.tolist()) == {scores[0]}


def test_precomposed_and_decomposed_text_score_the_same(stats):
    query = "café résumé naïve"
    doc = "the café keeps a résumé of every naïve guest at the café"
    nfd = unicodedata.normalize("NFD", doc)
    assert nfd != doc
    analyzer = Analyzer()
    assert analyzer.analyze(nfd) == analyzer.analyze(doc) == [
        "café", "keep", "résumé", "naïv", "guest", "café"]
    for ranker_class in (BM25, QueryLikelihood, TFIDF):
        ranker = ranker_class(stats)
        same = ranker.score([(query, doc), (query, nfd),
                             (unicodedata.normalize("NFD", query), doc)])
        assert same[0] == same[1] == same[2]


def test_compatibility_forms_stay_distinct():
    """NFC, not NFKC: a ligature or a superscript is another character, not a spelling."""
    assert Analyzer(stem=False).analyze("ﬁle x²") == ["ﬁle", "x²"]


class _Visited(tuple):
    """An analysed text that counts the tokens every pass over it reads (``visits``)."""

    visits = 0

    def __iter__(self):
        type(self).visits += len(self)
        return super().__iter__()

    def count(self, value):
        type(self).visits += len(self)
        return super().count(value)


def test_a_long_query_costs_linear_time(stats, monkeypatch):
    """A 40,000-word query against documents that contain it: counting each of its ~3,000
    distinct terms in each document reads every token thousands of times (minutes); counting
    each document once reads it once. The test counts the tokens read, not the seconds."""
    rng = random.Random(9)
    query = " ".join(f"term{rng.randrange(3000)}" for _ in range(40_000))
    pairs = [(query, f"{query} term{i}") for i in range(5)]
    ranker = BM25(stats)
    plain = Analyzer.analyze_cached
    monkeypatch.setattr(Analyzer, "analyze_cached", lambda self, text, *args, **kwargs:
                        _Visited(plain(self, text, *args, **kwargs)))
    _Visited.visits = 0
    scores = ranker.score(pairs)
    analyzer = ranker.stats.analyzer
    tokens = len(plain(analyzer, query)) + sum(len(plain(analyzer, doc)) for _, doc in pairs)
    assert 0 < _Visited.visits <= 2 * tokens
    monkeypatch.undo()
    reference = ranker.score_terms(Analyzer().analyze(query),
                                   Analyzer().analyze(pairs[0][1]))
    assert scores[0] == pytest.approx(reference, rel=1e-12)
