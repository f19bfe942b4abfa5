"""Cross-encoder, monoT5 and ColBERT on tiny random models built here (no download)."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from abnirml.errors import ConfigError, ScoringError
from abnirml.evaluation.execution.scoring import Scorer
from abnirml.rankers.registry import RankerEnv, build_ranker
from abnirml.rankers.support.cache import ScoreCache
from tests._tiny_models import save_colbert, save_cross_encoder, save_t5
from tests.helpers import reordering_bound, score_bound

PAIRS = [
    ("symptoms of vitamin d deficiency", "tiredness and bone symptoms in adults with "
     "deficiency of vitamin d from sun light"),
    ("symptoms of vitamin d deficiency", "the roman empire split in east and west"),
    ("how long does bread dough rise", "bread dough does rise for hours in a warm oven"),
    ("how long does bread dough rise", "a cat and a dog"),
    ("why did the roman empire split", "rome"),
    ("why did the roman empire split", "the emperor of the west and the east capital of the "
     "empire is rome , and the roman empire split"),
    ("cat", "music and paint by the river"),
]


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    """Every test here runs torch on one thread (see conftest)."""


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    return {
        "ce1": save_cross_encoder(root / "ce1", num_labels=1),
        "ce2": save_cross_encoder(root / "ce2", num_labels=2),
        "t5": save_t5(root / "t5"),
        "colbert": save_colbert(root / "colbert"),
        "bert": save_colbert(root / "bert", projection=False),
    }


def build(spec: str, env: RankerEnv | None = None):
    return build_ranker(spec, env or RankerEnv())


def assert_batch_invariant(spec_base: str, pairs=PAIRS, scale: float = 1.0) -> np.ndarray:
    full = build(f"{spec_base}+batch_size=64").score(pairs)
    bound = score_bound(spec_base, max(scale, float(np.abs(full).max())))
    for size in (1, 2, 3):
        np.testing.assert_allclose(build(f"{spec_base}+batch_size={size}").score(pairs), full,
                                   atol=bound, rtol=0)
    return full


def test_cross_encoder_single_logit_matches_model_and_is_batch_invariant(models):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    scores = assert_batch_invariant(f"cross-encoder:{models['ce1']}")
    assert scores.shape == (len(PAIRS),) and scores.dtype == np.float64
    tok = AutoTokenizer.from_pretrained(models["ce1"])
    model = AutoModelForSequenceClassification.from_pretrained(models["ce1"]).eval()
    with torch.no_grad():
        q, d = PAIRS[0]
        expected = model(**tok(q, d, return_tensors="pt")).logits[0, 0].item()
    spec = f"cross-encoder:{models['ce1']}"
    assert scores[0] == pytest.approx(expected, abs=score_bound(spec, max(1.0, abs(expected))))
    prob = build(f"{spec}+output=prob").score(PAIRS)
    np.testing.assert_allclose(prob, 1 / (1 + np.exp(-scores)), atol=score_bound(spec), rtol=0)


def test_cross_encoder_two_logit_head_scores_log_odds_of_relevance(models):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    ranker = build(f"cross-encoder:{models['ce2']}")
    scores = ranker.score(PAIRS)
    tok = AutoTokenizer.from_pretrained(models["ce2"])
    model = AutoModelForSequenceClassification.from_pretrained(models["ce2"]).eval()
    with torch.no_grad():
        logits = model(**tok([q for q, _ in PAIRS], [d for _, d in PAIRS], padding=True,
                             return_tensors="pt")).logits
    spec = f"cross-encoder:{models['ce2']}"
    bound = score_bound(spec, max(1.0, float(logits.abs().max())))
    np.testing.assert_allclose(scores, (logits[:, 1] - logits[:, 0]).numpy(), atol=bound, rtol=0)
    prob = build(f"{spec}+output=prob").score(PAIRS)
    np.testing.assert_allclose(prob, torch.softmax(logits, -1)[:, 1].numpy(),
                               atol=score_bound(spec), rtol=0)
    # probability and log-odds order documents identically
    assert list(np.argsort(prob)) == list(np.argsort(scores))


def test_fingerprint_is_weights_identity_plus_parameters(models, tmp_path):
    a = build(f"cross-encoder:{models['ce1']}")
    again = build(f"cross-encoder:{models['ce1']}+batch_size=3")
    prob = build(f"cross-encoder:{models['ce1']}+output=prob")
    other = build(f"cross-encoder:{save_cross_encoder(tmp_path / 'other', seed=1)}")
    assert a.fingerprint == again.fingerprint          # batch size never changes scores
    assert a.name == f"cross-encoder:{models['ce1']}"
    assert len({a.fingerprint, prob.fingerprint, other.fingerprint}) == 3


def test_monot5_scores_log_softmax_of_true_against_false(models):
    import torch
    from transformers import AutoTokenizer, T5ForConditionalGeneration

    scores = assert_batch_invariant(f"monot5:{models['t5']}")
    assert np.all(scores < 0)                              # log-probabilities
    tok = AutoTokenizer.from_pretrained(models["t5"])
    model = T5ForConditionalGeneration.from_pretrained(models["t5"]).eval()
    true_id, false_id = tok.convert_tokens_to_ids(["true", "false"])
    q, d = PAIRS[2]
    with torch.no_grad():
        enc = tok(f"Query: {q} Document: {d} Relevant:", return_tensors="pt")
        logits = model(**enc, decoder_input_ids=torch.zeros((1, 1), dtype=torch.long)).logits
    t, f = logits[0, 0, true_id].item(), logits[0, 0, false_id].item()
    bound = score_bound(f"monot5:{models['t5']}", max(1.0, abs(t), abs(f)))
    assert scores[2] == pytest.approx(t - math.log(math.exp(t) + math.exp(f)), abs=bound)


def test_monot5_truncates_the_document_not_the_prompt(models):
    ranker = build(f"monot5:{models['t5']}+max_length=12")
    ids = ranker._input_ids("vitamin d", " ".join(["bread"] * 40))
    tok = ranker.tokenizer
    assert len(ids) == 12
    assert tok.convert_ids_to_tokens(ids[-2:]) == ["Relevant:", "</s>"]
    assert tok.convert_ids_to_tokens(ids[:4]) == ["Query:", "vitamin", "d", "Document:"]


def test_monot5_rejects_target_words_outside_the_vocabulary(models):
    with pytest.raises(ConfigError, match=r"monot5:.*'maybe'"):
        build(f"monot5:{models['t5']}+true=maybe")


def _maxsim_by_hand(ranker, query: str, doc: str) -> float:
    """MaxSim with loops over explicit vectors, independent of the batched code."""
    q = ranker.encode_queries([query])[0]
    d, keep = ranker.encode_documents([doc])
    d, keep = d[0], keep[0]
    total = 0.0
    for qv in q:
        total += max(float(qv @ d[j]) for j in range(d.shape[0]) if keep[j])
    return total


def test_colbert_maxsim_matches_hand_computation_and_batching(models):
    import torch

    scores = assert_batch_invariant(f"colbert:{models['colbert']}", scale=32.0)
    bound = score_bound(f"colbert:{models['colbert']}", 32.0)      # 32 unit-vector MaxSims
    ranker = build(f"colbert:{models['colbert']}")
    with torch.inference_mode():
        for i in (0, 3, 5):
            assert scores[i] == pytest.approx(_maxsim_by_hand(ranker, *PAIRS[i]), abs=bound)
        q = ranker.encode_queries(["vitamin d"])
        d, keep = ranker.encode_documents(["bread , dough ."])
    assert q.shape == (1, 32, 16)                               # query augmentation to 32
    # normalised, then its norm taken again: two sums over the 16 dimensions
    assert torch.allclose(q.norm(dim=-1), torch.ones(1, 32), atol=reordering_bound(2 * 16),
                          rtol=0)
    tokens = ranker.tokenizer.convert_ids_to_tokens(
        ranker.tokenizer(". bread , dough .").input_ids)
    assert tokens[1] == "." and d.shape[1] == len(tokens)
    # [CLS], marker, bread, dough, [SEP] count; the two punctuation tokens do not
    assert keep[0].tolist() == [True, True, True, False, True, False, True]
    # every query position is a unit vector, so a score is at most the query length
    assert np.all(np.abs(scores) <= 32 + bound)


def test_colbert_needs_a_projection_or_an_explicit_none(models):
    with pytest.raises(ConfigError, match=r"colbert:.*linear\.weight.*projection=none"):
        build(f"colbert:{models['bert']}")
    raw = build(f"colbert:{models['bert']}+projection=none")
    assert raw.score(PAIRS[:2]).shape == (2,)
    assert "dim=none" in raw.fingerprint


def test_missing_model_is_one_line_naming_the_ranker(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ConfigError) as err:
        build("cross-encoder:no-such-org/no-such-model")
    message = str(err.value)
    assert "cross-encoder:no-such-org/no-such-model" in message and "\n" not in message
    with pytest.raises(ConfigError, match=r"model directory .* not found"):
        build(f"monot5:{tmp_path / 'absent'}")
    with pytest.raises(ConfigError, match="needs a model name"):
        build("cross-encoder")


def test_nan_producing_model_is_refused_before_any_result(models, tmp_path):
    import torch
    from transformers import AutoModelForSequenceClassification

    broken = tmp_path / "nan-model"
    save_cross_encoder(broken)
    model = AutoModelForSequenceClassification.from_pretrained(broken)
    with torch.no_grad():
        model.classifier.bias.fill_(float("nan"))
    model.save_pretrained(broken)
    ranker = build(f"cross-encoder:{broken}")
    cache = ScoreCache(None)
    with pytest.raises(ScoringError, match=f"ranker cross-encoder:{broken} returned .* NaN"):
        Scorer(cache, progress=False).score(ranker, PAIRS)
    assert cache.count() == 0


def test_unavailable_device_is_a_config_error(models):
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    with pytest.raises(ConfigError, match="CUDA is not available"):
        build(f"cross-encoder:{models['ce1']}", RankerEnv(device="cuda"))
    with pytest.raises(ConfigError, match="unknown device"):
        build(f"cross-encoder:{models['ce1']}", RankerEnv(device="tpu"))


def test_engine_sorts_neural_batches_by_length(models):
    ranker = build(f"cross-encoder:{models['ce1']}+batch_size=2")
    assert ranker.hints.sort_by_length and ranker.hints.batch_size >= 2
    scorer = Scorer(ScoreCache(None), progress=False)
    engine = scorer.score(ranker, PAIRS)
    reference = ranker.score(PAIRS)
    np.testing.assert_allclose(engine, reference, rtol=0, atol=score_bound(
        f"cross-encoder:{models['ce1']}", max(1.0, float(np.abs(reference).max()))))
    assert scorer.scored == len(PAIRS)
    again = scorer.score(ranker, PAIRS)                        # cached by fingerprint
    assert scorer.reused == len(PAIRS) and np.array_equal(again, engine)


def test_pickled_weights_need_an_explicit_flag(tmp_path):
    import torch
    from transformers import BertForSequenceClassification

    from tests._tiny_models import _bert_config, _save_bert_tokenizer

    path = tmp_path / "pickled"
    path.mkdir()
    vocab = _save_bert_tokenizer(path)
    torch.manual_seed(0)
    model = BertForSequenceClassification(_bert_config(len(vocab), num_labels=1))
    model.save_pretrained(path)
    (path / "model.safetensors").unlink()          # keep only a pickled copy of the weights
    torch.save(model.state_dict(), path / "pytorch_model.bin")
    with pytest.raises(ConfigError, match=r"only pickled weights .*--allow-pickle"):
        build_ranker(f"cross-encoder:{path}", RankerEnv())
    ranker = build_ranker(f"cross-encoder:{path}", RankerEnv(allow_pickle=True))
    assert np.isfinite(ranker.score([("a query", "a document")])).all()
