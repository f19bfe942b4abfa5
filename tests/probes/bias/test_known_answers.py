"""Known answers of the ranking-bias probes on the demo collection.

* Bag-of-words rankers (BM25, QL, TF-IDF) score *early evidence* exactly 0: both texts hold
  the same terms.
* BM25's *repetition* and *keyword stuffing* effects are what Terrier's BM25 formula, computed
  here from the collection independently of the ranker, says; with k1 = 0 the saturation is
  complete, so one more occurrence changes nothing (exactly 0); with b = 0 length does not
  count, so one more occurrence moves the score in the direction of the term's idf (with
  k1 = 0 "nothing" holds up to the rounding of weight · f / f).
* The foil win rate of a lexical ranker is the share of pairs the formula puts the foil
  above the relevant passage.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from abnirml.pipeline import RunConfig, SessionSettings, StatisticsSettings, run
from abnirml.text.analyzer import Analyzer

PROBES = ["bias:early-evidence", "bias:repetition", "bias:keyword-stuffing", "bias:brevity",
          "bias:injected-instruction", "bias:injected-instruction-foil", "bias:biased-foil",
          "bias:unedited-foil"]
RANKERS = ["bm25", "ql", "tfidf", "bm25+k1=0", "bm25+b=0"]
ANALYZE = Analyzer().analyze


@pytest.fixture(scope="module")
def demo_run():
    return run(RunConfig(collection="demo", rankers=RANKERS, probes=PROBES,
                         effectiveness=False, statistics=StatisticsSettings(delta=0.0),
                         session=SessionSettings(cache=None, progress=False)))


class TerrierBM25:
    """BM25 as Terrier defines it, from the collection's own texts (not the ranker's code)."""

    def __init__(self, docs, k1=1.2, b=0.75, k3=8.0):
        analysed = [ANALYZE(text) for text in docs]
        self.n = len(analysed)
        self.avgdl = sum(len(a) for a in analysed) / self.n
        self.df = Counter(t for a in analysed for t in set(a))
        self.k1, self.b, self.k3 = k1, b, k3

    def idf(self, term):
        return math.log2((self.n - self.df[term] + 0.5) / (self.df[term] + 0.5))

    def __call__(self, query, text):
        tf = Counter(ANALYZE(text))
        norm = self.k1 * ((1 - self.b) + self.b * sum(tf.values()) / self.avgdl)
        total = 0.0
        for term, qtf in Counter(ANALYZE(query)).items():
            if tf[term]:
                weight = self.idf(term) * (self.k3 + 1) * qtf / (self.k3 + qtf)
                total += weight * (self.k1 + 1) * tf[term] / (norm + tf[term])
        return total


def _samples(demo_run, probe):
    table = demo_run.result.tables[probe]
    return [table.sample(i) for i in range(len(table))]


def _scores(demo_run, probe, ranker):
    found = demo_run.result.probe_scores[(probe, ranker)]
    return found.score1, found.score2


def _record(demo_run, probe, ranker, subset="all"):
    return next(r for r in demo_run.result.records
                if (r["probe"], r["ranker"], r["subset"]) == (probe, ranker, subset))


@pytest.mark.parametrize("ranker", ["bm25", "ql", "tfidf"])
def test_bag_of_words_rankers_score_early_evidence_exactly_zero(demo_run, ranker):
    samples = _samples(demo_run, "bias:early-evidence")
    assert len(samples) >= 20
    for s in samples:
        assert s.doc1 != s.doc2 and len(s.doc1) == len(s.doc2)
        assert Counter(ANALYZE(s.doc1)) == Counter(ANALYZE(s.doc2))
    score1, score2 = _scores(demo_run, "bias:early-evidence", ranker)
    assert np.array_equal(score1, score2)
    row = _record(demo_run, "bias:early-evidence", ranker)
    assert (row["score"], row["pos"], row["neg"], row["n"]) == (0.0, 0, 0, len(samples))
    assert row["paper_direction"] == 1


def test_bm25_repetition_is_the_formulas(demo_run):
    bm25 = TerrierBM25(demo_run_docs())
    samples = _samples(demo_run, "bias:repetition")
    assert len(samples) >= 50
    score1, score2 = _scores(demo_run, "bias:repetition", "bm25")
    expected1 = [bm25(s.query, s.doc1) for s in samples]
    expected2 = [bm25(s.query, s.doc2) for s in samples]
    np.testing.assert_allclose(score1, expected1, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(score2, expected2, rtol=1e-12, atol=1e-12)
    for s in samples:      # one more occurrence of the rarest query term, nothing else
        added = Counter(ANALYZE(s.doc1)) - Counter(ANALYZE(s.doc2))
        assert added == Counter({s.meta["term"]: 1})
        assert not Counter(ANALYZE(s.doc2)) - Counter(ANALYZE(s.doc1))


def test_with_k1_zero_one_more_occurrence_changes_nothing(demo_run):
    # every present term contributes its weight · f / f: equal up to the last bit of that
    # division (4e-16 where f = 3), so the comparison allows rounding and nothing more
    score1, score2 = _scores(demo_run, "bias:repetition", "bm25+k1=0")
    np.testing.assert_allclose(score1, score2, rtol=1e-14, atol=0)
    assert not np.array_equal(*_scores(demo_run, "bias:repetition", "bm25"))


def test_with_b_zero_one_more_occurrence_moves_the_score_with_the_terms_idf(demo_run):
    bm25 = TerrierBM25(demo_run_docs(), b=0.0)
    samples = _samples(demo_run, "bias:repetition")
    score1, score2 = _scores(demo_run, "bias:repetition", "bm25+b=0")
    signs = np.sign(score1 - score2)
    assert (signs != 0).all()
    assert signs.tolist() == [np.sign(bm25.idf(s.meta["term"])) for s in samples]
    row = _record(demo_run, "bias:repetition", "bm25+b=0")
    assert row["pos"] == sum(bm25.idf(s.meta["term"]) > 0 for s in samples)


def test_bm25_keyword_stuffing_is_the_formulas_and_so_is_its_foil_win_rate(demo_run):
    bm25 = TerrierBM25(demo_run_docs())
    samples = _samples(demo_run, "bias:keyword-stuffing")
    assert len(samples) >= 30
    score1, score2 = _scores(demo_run, "bias:keyword-stuffing", "bm25")
    foil = [bm25(s.query, s.doc1) for s in samples]
    relevant = [bm25(s.query, s.doc2) for s in samples]
    np.testing.assert_allclose(score1, foil, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(score2, relevant, rtol=1e-12, atol=1e-12)
    row = _record(demo_run, "bias:keyword-stuffing", "bm25")
    wins = sum(f > r for f, r in zip(foil, relevant, strict=True))
    assert row["foil_wins"] == wins and row["foil_win_rate"] == pytest.approx(wins / len(foil))
    assert 0 <= row["foil_win_rate_ci_low"] <= row["foil_win_rate"] \
        <= row["foil_win_rate_ci_high"] <= 1
    for s in samples:       # the foil: a non-relevant passage of the same query, stuffed k = 3
        stuffed = Counter(ANALYZE(s.doc1))
        original = Counter(ANALYZE(demo_docs()[s.meta["foil_source"]]))
        assert stuffed - original == Counter({t: 3 * c for t, c in
                                              Counter(ANALYZE(s.query)).items()})
        assert s.meta["foil_source_grade"] == 0 and s.meta["grade2"] >= 2


def test_only_foil_probes_carry_win_rates_and_each_names_its_papers_direction(demo_run):
    directions = {"bias:early-evidence": 1, "bias:repetition": 1, "bias:keyword-stuffing": 1,
                  "bias:brevity": -1, "bias:injected-instruction": 1,
                  "bias:injected-instruction-foil": 1, "bias:biased-foil": 1,
                  "bias:unedited-foil": None}      # the baseline claims no bias
    for r in demo_run.result.records:
        assert r.get("paper_direction") == directions[r["probe"]]
        foil = r["probe"] in ("bias:keyword-stuffing", "bias:injected-instruction-foil",
                              "bias:biased-foil", "bias:unedited-foil")
        assert ("foil_win_rate" in r) == foil
        if foil:        # one row per ranker: the relevant passages are d2 of every pair
            assert r["subset"] == "all"


def test_the_unedited_foil_is_the_judged_pair_the_edited_foils_start_from(demo_run):
    bm25 = TerrierBM25(demo_run_docs())
    unedited = _samples(demo_run, "bias:unedited-foil")
    stuffed = _samples(demo_run, "bias:keyword-stuffing")
    assert [(s.meta["docno1"], s.meta["docno2"]) for s in unedited] == \
        [(s.meta["foil_source"], s.meta["docno2"]) for s in stuffed]
    docs = demo_docs()
    assert all(s.doc1 == docs[s.meta["docno1"]] for s in unedited)
    wins = sum(bm25(s.query, s.doc1) > bm25(s.query, s.doc2) for s in unedited)
    assert _record(demo_run, "bias:unedited-foil", "bm25")["foil_wins"] == wins


def demo_docs():
    from abnirml.data.collection import load_collection

    return load_collection("demo").docs


def demo_run_docs():
    return list(demo_docs().values())
