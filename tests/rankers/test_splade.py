"""SPLADE: the batched ranker against the textbook per-text formula, pruning, the packaged
SPLADE-tiny MS MARCO model, and (with ../shared) its DL19 behaviour."""

from __future__ import annotations

import numpy as np
import pytest

from abnirml.errors import ConfigError
from abnirml.rankers.registry import RankerEnv, build_ranker
from tests._tiny_llms import save_masked_lm
from tests.helpers import score_bound

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

PAIRS = [
    ("vitamin d deficiency", "symptoms of vitamin d deficiency in adults are tiredness"),
    ("vitamin d deficiency", "bread dough"),
    ("roman empire", "the roman empire split into east and west , rome"),
    ("cat", "the dog"),
]


def _reference(path, text):
    """One unpadded forward: max over tokens of log(1 + relu(logits))."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForMaskedLM.from_pretrained(path).eval()
    with torch.no_grad():
        logits = model(**tok(text, return_tensors="pt")).logits[0]
    return torch.log1p(torch.relu(logits)).amax(dim=0)


@pytest.fixture(scope="module")
def mlm_dir(tmp_path_factory):
    return save_masked_lm(tmp_path_factory.mktemp("mlm"))


def test_scores_equal_per_text_reference(mlm_dir, one_torch_thread):
    ranker = build_ranker(f"splade:{mlm_dir}+batch_size=3", RankerEnv())
    expected = np.array([float(_reference(mlm_dir, q) @ _reference(mlm_dir, d)) for q, d in PAIRS])
    got = ranker.score(PAIRS)
    # every term of the vocabulary-wide dot product is ≥ 0: its size is the score itself
    assert np.abs(got - expected).max() <= score_bound(
        f"splade:{mlm_dir}", max(1.0, float(np.abs(expected).max())))
    assert np.ptp(expected) > 0


def test_top_k_pruning_keeps_largest_weights(mlm_dir):
    ranker = build_ranker(f"splade:{mlm_dir}+doc_top_k=1", RankerEnv())
    q, d = PAIRS[0]
    qv, dv = _reference(mlm_dir, q), _reference(mlm_dir, d)
    top = int(dv.argmax())
    expected = float(qv[top] * dv[top])
    assert abs(ranker.score([(q, d)])[0] - expected) <= score_bound(f"splade:{mlm_dir}",
                                                                    max(1.0, expected))
    full = build_ranker(f"splade:{mlm_dir}", RankerEnv())
    assert full.fingerprint != ranker.fingerprint and "doc_top_k=1" in ranker.fingerprint


@pytest.mark.parametrize("suffix, message", [
    ("+dtype=fp8", "dtype must be fp32, fp16 or bf16"),
    ("+doc_top_k=0", "doc_top_k=0 must be >= 1"),
    ("+pooling=sum", "unknown parameter"),
])
def test_spec_errors(mlm_dir, suffix, message):
    with pytest.raises(ConfigError, match=message):
        build_ranker(f"splade:{mlm_dir}{suffix}", RankerEnv())


def _packaged():
    from abnirml.rankers.splade import packaged_model_path

    try:
        return packaged_model_path()
    except ConfigError as exc:
        pytest.skip(str(exc))


def test_packaged_splade_tiny_prefers_the_answer(one_torch_thread):
    folder = _packaged()
    ranker = build_ranker("splade", RankerEnv())
    scores = ranker.score([
        ("what is the capital of france", "Paris is the capital and largest city of France."),
        ("what is the capital of france", "Bananas are yellow fruits rich in potassium."),
    ])
    assert scores[0] > 5 * max(scores[1], 0.1)
    # the identity hashes the SPLADE files only: heads.pt beside them is not SPLADE
    assert (folder / "heads.pt").exists() and "splade-tiny:" in ranker.fingerprint
    vec = ranker.encode(["what is the capital of france"])[0]
    terms = ranker.tokenizer.convert_ids_to_tokens(vec.topk(10).indices.tolist())
    assert {"capital", "france"} <= set(terms)
    assert "paris" in terms or "french" in terms    # expansion: terms not in the text


@pytest.mark.slow
def test_dl19_splade_beats_bm25(dl19, tmp_path, one_torch_thread):
    """Re-ranking the BM25 top 20 of TREC DL 2019 (43 queries) and mmp:relevance:tf.

    The top 20 of the collection's BM25 run (the other files linked, not copied) keep the
    claim's test at a fifth of the top 100's scoring: SPLADE-tiny's nDCG@10 there is 0.628
    against BM25's 0.477 and the run's own 0.506, and its mmp:relevance:tf score +0.35
    against BM25's −0.11.
    """
    _packaged()
    from abnirml.pipeline import RunConfig, SessionSettings, run

    top20 = tmp_path / "dl19-top20"
    (top20 / "runs").mkdir(parents=True)
    for name in ("queries.tsv", "qrels.txt", "passages.tsv"):
        (top20 / name).symlink_to(dl19 / name)
    with (dl19 / "runs" / "bm25.run").open(encoding="utf-8") as run_file:
        (top20 / "runs" / "bm25.run").write_text(
            "".join(line for line in run_file if int(line.split()[3]) <= 20),
            encoding="utf-8")
    out = run(RunConfig(collection=str(top20), rankers=["bm25", "splade"],
                        probes=["mmp:relevance:tf"],
                        session=SessionSettings(progress=False, cache=None)))
    score = {(r["ranker"], r["subset"]): r["score"] for r in out.result.records}
    assert score[("splade", "all")] > score[("bm25", "all")] + 0.3
    ndcg = {k: v["nDCG@10"] for k, v in out.run_info["effectiveness"]["rankers"].items()}
    assert ndcg["splade"] > ndcg["bm25"] + 0.1
    assert ndcg["splade"] > out.run_info["effectiveness"]["candidate_run"]["nDCG@10"]


def _masked_copy_vectors(logits, mask):
    """The pooling as it was computed with a full masked float32 copy of the logits."""
    keep = mask.bool().unsqueeze(-1)
    pooled = logits.float().masked_fill(~keep, float("-inf")).amax(dim=1)
    return torch.log1p(torch.relu(pooled))


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_in_place_pooling_equals_the_masked_copy_on_a_real_vocabulary(dtype, one_torch_thread):
    """A random SPLADE of SPLADE-tiny's shape (30,522 terms, hidden 128, 2 layers): the
    in-place pooling returns exactly the vectors of the masked copy, padding included."""
    from transformers import BertConfig, BertForMaskedLM

    from abnirml.rankers.device_batching import torch_dtype
    from abnirml.rankers.splade import sparse_vectors

    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, hidden_size=128, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=512)
    model = BertForMaskedLM(config).eval().to(torch_dtype(dtype))
    ids = torch.randint(1000, 30522, (3, 12))
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0
    mask[2, 2:] = 0
    with torch.inference_mode():
        logits = model(input_ids=ids, attention_mask=mask).logits
        expected = _masked_copy_vectors(logits.clone(), mask)
        got = sparse_vectors(logits, mask)
    assert got.dtype == torch.float32 and got.shape == (3, 30522)
    assert torch.equal(got, expected)
    assert (got[2] != got[1]).any()       # the masked positions really were left out


def test_packaged_splade_tiny_vectors_equal_the_masked_copy(monkeypatch, one_torch_thread):
    _packaged()
    from abnirml.rankers import splade

    ranker = build_ranker("splade", RankerEnv())
    texts = [q for q, _ in PAIRS] + [d for _, d in PAIRS]
    got = ranker.encode(texts)
    monkeypatch.setattr(splade, "sparse_vectors", _masked_copy_vectors)
    assert torch.equal(got, ranker.encode(texts))
