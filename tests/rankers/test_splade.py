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
    from abnirml.rankers.families.splade import packaged_model_path

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
    """Re-ranking the BM25 top 30 of TREC DL 2019 (43 queries) and mmp:relevance:tf.

    The top 30 of the collection's BM25 run (the other files linked, not copied) keep the
    claim's test at a third of the top 100's scoring: SPLADE-tiny's nDCG@10 there is 0.643
    against BM25's 0.467 and the run's own 0.506, and its mmp:relevance:tf score +0.35
    against BM25's −0.12.
    """
    _packaged()
    from abnirml.pipeline import RunConfig, SessionSettings, run

    top30 = tmp_path / "dl19-top30"
    (top30 / "runs").mkdir(parents=True)
    for name in ("queries.tsv", "qrels.txt", "passages.tsv"):
        (top30 / name).symlink_to(dl19 / name)
    with (dl19 / "runs" / "bm25.run").open(encoding="utf-8") as run_file:
        (top30 / "runs" / "bm25.run").write_text(
            "".join(line for line in run_file if int(line.split()[3]) <= 30),
            encoding="utf-8")
    out = run(RunConfig(collection=str(top30), rankers=["bm25", "splade"],
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

    from abnirml.rankers.families.splade import sparse_vectors
    from abnirml.rankers.support.device_batching import torch_dtype

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
    """The CPU path (the vocabulary's logits made slice by slice) against the whole logits
    pooled through a full masked copy."""
    _packaged()
    from abnirml.rankers.families import splade
    ranker = build_ranker("splade", RankerEnv())
    assert ranker._decoder is not None               # on a CPU the vocabulary is sliced
    texts = [q for q, _ in PAIRS] + [d for _, d in PAIRS]
    got = ranker.encode(texts)
    ranker._decoder = None
    monkeypatch.setattr(splade, "sparse_vectors", _masked_copy_vectors)
    assert torch.equal(got, ranker.encode(texts))


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_sliced_vocabulary_gives_the_whole_logits_vectors_on_real_batches(
        dtype, demo_collection, monkeypatch, one_torch_thread):
    """SPLADE-tiny on demo passages (token-budget batches of many widths): the vectors made
    a slice of the vocabulary at a time, at the default block and at the smallest (256 terms
    a slice), equal the whole logits' bit for bit."""
    _packaged()
    from abnirml.rankers.families import splade
    ranker = build_ranker(f"splade+dtype={dtype}", RankerEnv())
    count = 300 if dtype == "fp32" else 16          # bf16 matrix products are slow on a CPU
    texts = sorted(demo_collection.doc_texts())[:count]
    sliced = ranker.encode(texts)
    monkeypatch.setattr(splade, "POOL_BLOCK_BYTES", 1)
    smallest = ranker.encode(texts)
    decoder, ranker._decoder = ranker._decoder, None
    whole = ranker.encode(texts)
    assert decoder is not None and (whole > 0).sum() > count * 10
    assert torch.equal(sliced, whole) and torch.equal(smallest, whole)


def test_a_head_that_changes_the_logits_after_its_last_layer_keeps_the_whole_logits(
        mlm_dir, monkeypatch):
    """The slice-by-slice path needs the decoder's output to be the logits; a model whose
    head scales them afterwards fails the check at load and keeps the model's own path."""
    from transformers import BertForMaskedLM

    forward = BertForMaskedLM.forward

    def doubled(self, *args, **kwargs):
        output = forward(self, *args, **kwargs)
        output.logits = output.logits * 2 + 1
        return output

    plain = build_ranker(f"splade:{mlm_dir}", RankerEnv())
    monkeypatch.setattr(BertForMaskedLM, "forward", doubled)
    scaled = build_ranker(f"splade:{mlm_dir}", RankerEnv())
    assert plain._decoder is not None and scaled._decoder is None
    q, d = PAIRS[0]
    assert scaled.score([(q, d)])[0] != plain.score([(q, d)])[0]
