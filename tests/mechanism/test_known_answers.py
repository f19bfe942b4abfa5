"""Known answers of activation patching, exact, on random-init models of every supported
family and on a hand-built BERT whose relevance one known head computes."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from abnirml.errors import ConfigError
from abnirml.mechanism.alignment import CHANGED, align
from abnirml.mechanism.engine import (
    HeadPatch,
    ResidualPatch,
    patched_scores,
    run_clean,
)
from abnirml.mechanism.targets import target_for
from abnirml.rankers.registry import RankerEnv, build_ranker
from tests.helpers import reordering_bound, transformer_chain
from tests.mechanism._models import FAMILIES, ranker_spec, save_one_head_bert

QUERY = "vitamin d deficiency symptoms"
BASE = "the sun light is warm and fish is good for bone"
APPENDED = BASE + " vitamin d"
SUBSTITUTED = "the sun light is warm and fish is good for bones"


@pytest.fixture(scope="module")
def targets(tmp_path_factory):
    """``targets(family, dtype)``: a patch target on a random model of ``family`` (each
    model saved once, each (family, dtype) built once)."""
    root = tmp_path_factory.mktemp("patch-models")
    specs: dict[str, str] = {}
    built: dict[tuple[str, str], object] = {}

    def get(family: str, dtype: str = ""):
        if family not in specs:
            specs[family] = ranker_spec(family, root)
        if (family, dtype) not in built:
            spec = specs[family] + (f"+dtype={dtype}" if dtype else "")
            built[family, dtype] = target_for(build_ranker(spec, RankerEnv()))
        return built[family, dtype]

    return get


def _pair(target, query: str, base: str, perturbed: str):
    target.prepare(query)
    return align(target.encode(query, base), target.encode(query, perturbed),
                 target.filler_id("a"), target.query_terms(query))


@pytest.mark.parametrize("family", FAMILIES)
def test_last_layer_everywhere_is_the_perturbed_score_and_nothing_is_the_base(targets, family):
    target = targets(family)
    pair = _pair(target, QUERY, BASE, APPENDED)
    assert pair.inserted > 0 and (pair.classes == CHANGED).sum() == pair.inserted
    clean, cache = run_clean(target, pair, 1)
    layers = len(target.parts.layers)
    everything = np.ones(pair.length, dtype=bool)
    nothing = np.zeros(pair.length, dtype=bool)
    scores = patched_scores(target, pair, cache, [
        ResidualPatch(layers, everything), ResidualPatch(0, everything),
        ResidualPatch(1, nothing)], 1)
    assert clean.perturbed != clean.base
    assert scores[0] == clean.perturbed          # effect exactly 1
    assert scores[1] == clean.perturbed          # all positions at the embeddings, too
    assert scores[2] == clean.base               # effect exactly 0


@pytest.mark.parametrize("family", FAMILIES)
def test_embedding_patch_of_a_substitution_is_running_the_perturbed_input(targets, family):
    target = targets(family)
    pair = _pair(target, QUERY, BASE, SUBSTITUTED)
    assert pair.inserted == 0 and pair.base_ids != pair.perturbed_ids
    changed = pair.classes == CHANGED
    assert 0 < changed.sum() < pair.length
    clean, cache = run_clean(target, pair, 1)
    (score,) = patched_scores(target, pair, cache, [ResidualPatch(0, changed)], 1)
    assert score == clean.perturbed


def test_bf16_known_answers(targets):
    target = targets("cross-encoder", "bf16")
    import torch

    assert target.model_dtype == torch.bfloat16
    pair = _pair(target, QUERY, BASE, APPENDED)
    clean, cache = run_clean(target, pair, 1)
    layers = len(target.parts.layers)
    scores = patched_scores(target, pair, cache, [
        ResidualPatch(layers, np.ones(pair.length, dtype=bool)),
        ResidualPatch(0, np.zeros(pair.length, dtype=bool))], 1)
    assert scores[0] == clean.perturbed and scores[1] == clean.base


def test_one_known_head_carries_the_whole_effect_and_no_other(tmp_path):
    spec = f"cross-encoder:{save_one_head_bert(tmp_path / 'one-head')}"
    target = target_for(build_ranker(spec, RankerEnv()))
    pair = _pair(target, "vitamin", "the sun and fish", "the sun and fish vitamin")
    clean, cache = run_clean(target, pair, 1)
    assert clean.perturbed > clean.base       # one more "vitamin" raises the score
    heads = [HeadPatch(layer, head) for layer in range(2) for head in range(2)]
    effects = (patched_scores(target, pair, cache, heads, 1) - clean.base) / \
        (clean.perturbed - clean.base)
    assert effects.tolist() == [1.0, 0.0, 0.0, 0.0]
    # the same through the study API: the top head is L1.H1, every other head is 0
    from abnirml.mechanism.study import patch_samples
    from abnirml.mechanism.summary import summarise
    from abnirml.samples import Sample

    samples = [Sample("vitamin", "the sun and fish vitamin", "the sun and fish", {"qid": "1"}),
               Sample("vitamin", "a dog in the river vitamin", "a dog in the river",
                      {"qid": "2"})]
    summary = summarise(patch_samples(target, samples, "one-head", min_difference=0.0,
                                      batch_size=1))
    assert summary["samples"] == 2
    assert summary["heads_grid"]["mean"] == [[1.0, 0.0], [0.0, 0.0]]
    assert summary["top_heads"][0]["head"] == "L1.H1"
    assert [h["mean"] for h in summary["top_heads"][1:]] == [0.0, 0.0, 0.0]


def test_known_answers_on_cuda(tmp_path):
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    spec = ranker_spec("cross-encoder", tmp_path)
    for dtype in ("fp32", "bf16"):
        target = target_for(build_ranker(f"{spec}+dtype={dtype}", RankerEnv(device="cuda")))
        pair = _pair(target, QUERY, BASE, SUBSTITUTED)
        clean, cache = run_clean(target, pair, 1)
        layers = len(target.parts.layers)
        scores = patched_scores(target, pair, cache, [
            ResidualPatch(layers, np.ones(pair.length, dtype=bool)),
            ResidualPatch(0, pair.classes == CHANGED),
            ResidualPatch(0, np.zeros(pair.length, dtype=bool))], 1)
        assert scores.tolist() == [clean.perturbed, clean.perturbed, clean.base]


@pytest.mark.parametrize("family", ["monot5", "lm-llama", "cross-encoder"])
def test_joint_inputs_mark_query_document_and_template_positions(targets, family):
    from abnirml.mechanism.alignment import ROLE_DOC, ROLE_QUERY

    target = targets(family)
    encoded = target.encode("vitamin d", "the sun is warm")
    tokens = target.tokenizer.convert_ids_to_tokens(encoded.ids)
    query = [t for t, r in zip(tokens, encoded.roles, strict=True) if r == ROLE_QUERY]
    doc = [t for t, r in zip(tokens, encoded.roles, strict=True) if r == ROLE_DOC]
    assert [t.lstrip("▁Ġ") for t in query] == ["vitamin", "d"]
    assert [t.lstrip("▁Ġ") for t in doc][:4] == ["the", "sun", "is", "warm"]
    assert len(doc) == 4      # template words and special tokens are neither


@pytest.mark.parametrize("family", ["cross-encoder", "lm-qwen2", "biencoder"])
def test_query_words_in_the_document_form_their_own_class(targets, family):
    from abnirml.mechanism.alignment import DOC_QUERY_TERM

    target = targets(family)
    query, base = "vitamin d", "fish has vitamin and the sun is warm"
    perturbed = target.encode(query, base + " d")
    pair = align(target.encode(query, base), perturbed, target.filler_id("a"),
                 target.query_terms(query, perturbed))
    tokens = target.tokenizer.convert_ids_to_tokens(pair.perturbed_ids)
    marked = [t.lstrip("▁Ġ") for t, c in zip(tokens, pair.classes, strict=True)
              if c == DOC_QUERY_TERM]
    assert marked == ["vitamin"]
    assert (pair.classes == CHANGED).sum() >= 1


def test_known_answers_at_the_full_size_of_all_minilm_l6_v2(tmp_path):
    """A cross-encoder with all-MiniLM-L6-v2's configuration and tokenizer (6 layers, 12
    heads, hidden size 384, 30,522 word pieces) and random weights."""
    import shutil

    import torch
    from transformers import BertConfig, BertForSequenceClassification

    try:
        from abnirml.rankers.families.biencoder import packaged_model_path

        source = packaged_model_path()
    except ConfigError as exc:
        pytest.skip(f"needs the packaged all-MiniLM-L6-v2: {exc}")
    folder = tmp_path / "minilm-shape"
    folder.mkdir()
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json",
                 "special_tokens_map.json"):
        shutil.copy(source / name, folder / name)
    config = BertConfig.from_pretrained(str(source), num_labels=1)
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(folder)
    target = target_for(build_ranker(f"cross-encoder:{folder}", RankerEnv()))
    assert (len(target.parts.layers), target.parts.heads) == (6, 12)
    for perturbed in (APPENDED, SUBSTITUTED):
        pair = _pair(target, QUERY, BASE, perturbed)
        patches = [ResidualPatch(6, np.ones(pair.length, dtype=bool)),
                   ResidualPatch(0, pair.classes == CHANGED),
                   ResidualPatch(3, np.zeros(pair.length, dtype=bool))]
        clean, cache = run_clean(target, pair, 1)
        scores = patched_scores(target, pair, cache, patches, 1)
        assert scores.tolist() == [clean.perturbed, clean.perturbed, clean.base]
        # several rows per call: a row's place in the matrix products may change the order
        # of the float32 sums behind its score, nothing more; a wrong patch moves the score
        # by the whole effect, which the bound stays far below
        bound = reordering_bound(transformer_chain(config, pair.length,
                                                   outputs=(config.hidden_size,) * 2),
                                 scale=max(1.0, abs(clean.base), abs(clean.perturbed)))
        assert bound < abs(clean.perturbed - clean.base) / 10
        clean, cache = run_clean(target, pair, 5)
        scores = patched_scores(target, pair, cache, patches, 5)
        reference = np.array([clean.perturbed, clean.perturbed, clean.base])
        assert np.abs(scores - reference).max() <= bound
