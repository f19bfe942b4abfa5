"""Causal-LM pointwise rerankers (``lm:``) on tiny random Llama / Qwen2 models: the batched,
left-padded ranker must equal a straightforward one-pair-at-a-time implementation."""

from __future__ import annotations

import numpy as np
import pytest

from abnirml.errors import ConfigError
from abnirml.rankers.registry import RankerEnv, build_ranker
from tests._tiny_llms import save_causal_lm
from tests.helpers import reordering_bound, score_bound, transformer_chain

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

PAIRS = [
    ("vitamin d deficiency symptoms", "tiredness and bone pain are symptoms of vitamin d "
     "deficiency in adults"),
    ("vitamin d deficiency symptoms", "bread dough"),
    ("how do yeast bread rise", "yeast makes the bread dough rise in a warm oven for hours"),
    ("roman empire split", "the roman empire split into east and west"),
    ("cat", "the dog and the cat"),
]
TEMPLATE = "Query: {query} Document: {document} Relevant:"


def _reference_lm(path, pairs, template=TEMPLATE, yes="yes", no="no"):
    """The obvious implementation: one unpadded forward per pair, next-token logits."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    y, n = tok.convert_tokens_to_ids(yes), tok.convert_tokens_to_ids(no)
    out = []
    with torch.no_grad():
        for q, d in pairs:
            ids = tok(template.replace("{query}", q).replace("{document}", d),
                      return_tensors="pt").input_ids
            logits = model(input_ids=ids).logits[0, -1]
            out.append(float(logits[y] - logits[n]))
    return np.array(out)


@pytest.fixture(scope="module", params=["llama", "qwen2"])
def causal_dir(request, tmp_path_factory):
    return save_causal_lm(tmp_path_factory.mktemp(request.param), kind=request.param)


def _write_template(tmp_path, text=TEMPLATE):
    path = tmp_path / "prompt.txt"
    path.write_text(text + "\n", encoding="utf-8")
    return path


def test_batched_equals_one_by_one(causal_dir, tmp_path, one_torch_thread):
    spec = f"lm:{causal_dir}+template={_write_template(tmp_path)}+batch_size=3"
    ranker = build_ranker(spec, RankerEnv())
    expected = _reference_lm(causal_dir, PAIRS)
    got = ranker.score(PAIRS)
    bound = score_bound(f"lm:{causal_dir}", max(1.0, float(np.abs(expected).max())))
    assert np.abs(got - expected).max() <= bound
    # the scores really differ between documents, so the check above has teeth
    assert np.ptp(expected) > 0.1
    # any batch composition gives the same scores
    again = build_ranker(spec.replace("batch_size=3", "batch_size=1"), RankerEnv())
    assert np.abs(again.score(PAIRS[::-1])[::-1] - got).max() <= bound


def test_truncation_shortens_only_the_document(causal_dir, tmp_path):
    ranker = build_ranker(f"lm:{causal_dir}+template={_write_template(tmp_path)}+max_length=16",
                          RankerEnv())
    tok = ranker.lm.tokenizer
    long_doc = " ".join(["bone"] * 40)
    ids = ranker.prompts.ids("vitamin d deficiency", (long_doc,))
    words = tok.decode(ids, skip_special_tokens=True).split()
    assert 12 <= len(ids) <= 16
    assert words[:5] == ["Query:", "vitamin", "d", "deficiency", "Document:"]
    assert words[-1] == "Relevant:"
    assert set(words[5:-1]) == {"bone"} and len(words) > 7
    # short inputs are untouched: exactly the whole string tokenized at once
    short = ranker.prompts.ids("cat", ("dog",))
    assert short == tok(TEMPLATE.replace("{query}", "cat").replace("{document}", "dog")).input_ids


def test_truncated_scores_match_reference_on_the_truncated_text(causal_dir, tmp_path):
    ranker = build_ranker(f"lm:{causal_dir}+template={_write_template(tmp_path)}+max_length=16",
                          RankerEnv())
    doc = " ".join(["bone", "sun", "fish"] * 10)
    tok = ranker.lm.tokenizer
    ids = ranker.prompts.ids("vitamin d", (doc,))
    kept = tok.decode(ids, skip_special_tokens=True).split()[4:-1]
    assert 0 < len(kept) < 30
    expected = _reference_lm(causal_dir, [("vitamin d", " ".join(kept))])
    assert abs(ranker.score([("vitamin d", doc)])[0] - expected[0]) <= score_bound(
        f"lm:{causal_dir}", max(1.0, abs(expected[0])))


def test_score_head_checkpoint_matches_its_own_pooling(tmp_path, one_torch_thread):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    path = save_causal_lm(tmp_path / "cls", kind="llama", classifier_labels=1)
    ranker = build_ranker(f"lm:{path}+template={_write_template(tmp_path)}", RankerEnv())
    assert ranker.lm.head == "score" and "head=score" in ranker.fingerprint
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path).eval()
    with torch.no_grad():
        expected = [float(model(input_ids=tok(TEMPLATE.replace("{query}", q)
                                              .replace("{document}", d),
                                              return_tensors="pt").input_ids).logits[0, 0])
                    for q, d in PAIRS]
    assert np.abs(ranker.score(PAIRS) - np.array(expected)).max() <= score_bound(
        f"lm:{path}", max(1.0, float(np.abs(expected).max())))


def test_bf16_close_to_fp32_and_fingerprinted(causal_dir, tmp_path):
    template = _write_template(tmp_path)
    fp32 = build_ranker(f"lm:{causal_dir}+template={template}", RankerEnv())
    bf16 = build_ranker(f"lm:{causal_dir}+template={template}+dtype=bf16", RankerEnv())
    assert fp32.fingerprint != bf16.fingerprint and "dtype=bf16" in bf16.fingerprint
    a, b = fp32.score(PAIRS), bf16.score(PAIRS)
    assert np.corrcoef(a, b)[0, 1] > 0.95


def test_fingerprint_names_template_and_answers(causal_dir, tmp_path):
    one = build_ranker(f"lm:{causal_dir}+template={_write_template(tmp_path)}", RankerEnv())
    other = tmp_path / "other"
    other.mkdir()
    two = build_ranker(f"lm:{causal_dir}+template={_write_template(other, TEMPLATE + ' Answer:')}",
                       RankerEnv())
    three = build_ranker(f"lm:{causal_dir}+template={_write_template(tmp_path)}+yes=true+no=false",
                         RankerEnv())
    assert len({one.fingerprint, two.fingerprint, three.fingerprint}) == 3
    assert not np.allclose(one.score(PAIRS), three.score(PAIRS))


@pytest.mark.parametrize("suffix, message", [
    ("+template=nope", "neither a preset"),
    ("+head=pooled", "head must be one of"),
    ("+yes=yes+no=yes", "same token"),
    ("+yes=zebra+no=zebra", "zebra"),
    ("+dtype=fp8", "dtype must be fp32, fp16 or bf16"),
    ("+max_length=0", "max_length=0 must be >= 1"),
    ("+temperature=1", "unknown parameter"),
])
def test_spec_errors_are_one_line(causal_dir, suffix, message):
    with pytest.raises(ConfigError, match=message):
        build_ranker(f"lm:{causal_dir}{suffix}", RankerEnv())


def test_template_file_must_hold_each_field_once(causal_dir, tmp_path):
    bad = _write_template(tmp_path, "Query: {query} Relevant:")
    with pytest.raises(ConfigError, match=r"\{document\} exactly once"):
        build_ranker(f"lm:{causal_dir}+template={bad}", RankerEnv())


def test_biencoder_prefixes_reach_the_encoder(one_torch_thread):
    """+query_prefix / +doc_prefix embed 'prefix text', exactly as if the texts said so."""
    pytest.importorskip("sentence_transformers")
    try:
        plain = build_ranker("biencoder", RankerEnv())
    except ConfigError as exc:
        pytest.skip(str(exc))
    prefixed = build_ranker("biencoder+query_prefix=query:+doc_prefix=passage:", RankerEnv())
    assert plain.fingerprint != prefixed.fingerprint
    pairs = PAIRS[:3]
    by_hand = plain.score([(f"query: {q}", f"passage: {d}") for q, d in pairs])
    got = prefixed.score(pairs)
    from abnirml.rankers.families.biencoder import packaged_model_path

    assert np.abs(got - by_hand).max() <= reordering_bound(
        transformer_chain(packaged_model_path(), outputs=(384,) * 4))
    assert np.abs(got - plain.score(pairs)).max() > 1e-3
