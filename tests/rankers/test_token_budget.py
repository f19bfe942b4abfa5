"""SPLADE, ``lm:``, duoT5 and ``lm-pairwise:`` on token-budget batches
(rankers/support/device_batching.py): scores that cannot depend on batch composition are
bit-identical, others agree to float noise, bf16 is really used and still guarded, and the
engine streams pairwise rankers."""

from __future__ import annotations

import numpy as np
import pytest

from abnirml.errors import ConfigError, ScoringError
from abnirml.rankers.registry import RankerEnv, build_ranker
from tests.helpers import score_bound

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

PAIRS = [
    ("vitamin d deficiency", "symptoms of vitamin d deficiency in adults are tiredness"),
    ("vitamin d deficiency", "bread dough"),
    ("roman empire", "the roman empire split into east and west , rome"),
    ("cat", "the dog"),
    ("roman empire", "bread dough"),          # a document shared by two queries
]
TRIPLES = [
    ("vitamin d deficiency", "symptoms of vitamin d deficiency are tiredness", "bread dough"),
    ("vitamin d deficiency", "bread dough", "symptoms of vitamin d deficiency are tiredness"),
    ("roman empire", "the roman empire split into east and west", "the cat"),
    ("cat", "the dog", "the cat and the dog"),
]
TEMPLATE = "Query: {query} Document: {document} Relevant:"
PAIR_TEMPLATE = "Query: {query} Document0: {document1} Document1: {document2} Relevant:"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    from tests._tiny_llms import save_causal_lm, save_masked_lm
    from tests._tiny_models import save_t5

    root = tmp_path_factory.mktemp("token-budget")
    (root / "lm.txt").write_text(TEMPLATE, encoding="utf-8")
    (root / "pair.txt").write_text(PAIR_TEMPLATE, encoding="utf-8")
    return {
        "splade": f"splade:{save_masked_lm(root / 'mlm')}",
        "lm": f"lm:{save_causal_lm(root / 'llama', kind='llama')}+template={root / 'lm.txt'}",
        "duot5": f"duot5:{save_t5(root / 't5')}",
        "lm-pairwise": (f"lm-pairwise:{save_causal_lm(root / 'qwen', kind='qwen2')}"
                        f"+template={root / 'pair.txt'}"),
    }


FAMILIES = ["splade", "lm", "duot5", "lm-pairwise"]


def _scores(spec: str, family: str, items=None) -> np.ndarray:
    ranker = build_ranker(spec, RankerEnv())
    if family in ("duot5", "lm-pairwise"):
        return ranker.preferences(TRIPLES if items is None else items)
    return ranker.score(PAIRS if items is None else items)


def _items(family: str):
    return TRIPLES if family in ("duot5", "lm-pairwise") else PAIRS


@pytest.mark.parametrize("family", FAMILIES)
def test_one_row_per_batch_is_bit_identical_to_one_item_at_a_time(models, family,
                                                                  one_torch_thread):
    spec = models[family]
    alone = np.concatenate([_scores(spec, family, [item]) for item in _items(family)])
    # a budget of one token puts every row in a batch of its own: nothing can differ
    np.testing.assert_array_equal(_scores(spec + "+max_tokens=1", family), alone)
    assert np.ptp(alone) > 0                    # the items really score differently
    # packed batches (padding, other rows beside) change the order of float32 sums only
    bound = score_bound(spec, max(1.0, float(np.abs(alone).max())))
    for extra in ("", "+max_tokens=40", "+batch_size=2"):
        np.testing.assert_allclose(_scores(spec + extra, family), alone, atol=bound, rtol=0)


@pytest.mark.parametrize("family", FAMILIES)
def test_bf16_is_really_used_and_still_guarded(models, family, one_torch_thread):
    spec = models[family]
    fp32, bf16 = _scores(spec, family), _scores(spec + "+dtype=bf16", family)
    assert bf16.dtype == np.float64 and np.all(np.isfinite(bf16))
    assert not np.array_equal(fp32, bf16)
    scale = max(np.abs(fp32).max(), 1e-3)
    assert np.abs(bf16 - fp32).max() < 0.25 * scale     # bf16 keeps ~3 significant digits
    ranker = build_ranker(spec + "+dtype=bf16", RankerEnv())
    model = ranker.lm.model if hasattr(ranker, "lm") else ranker.model
    with torch.no_grad():
        model.get_input_embeddings().weight.fill_(float("nan"))
    with pytest.raises(ScoringError, match=r"returned \d+ NaN score"):
        ranker.preferences(TRIPLES) if family in ("duot5", "lm-pairwise") else ranker.score(PAIRS)


@pytest.mark.parametrize("family", FAMILIES)
def test_token_budget_parameters_are_read_and_checked(models, family):
    ranker = build_ranker(models[family] + "+max_tokens=64+batch_size=3", RankerEnv())
    assert (ranker.settings.max_tokens, ranker.settings.max_batch) == (64, 3)
    # engine calls (cache commits) on CPU: causal LMs commit more often, being far slower
    assert ranker.hints.own_batches
    assert ranker.hints.batch_size == (64 if family in ("lm", "lm-pairwise") else 1024)
    with pytest.raises(ConfigError, match="max_tokens"):
        build_ranker(models[family] + "+max_tokens=0", RankerEnv())


def test_splade_encodes_each_distinct_document_once_per_chunk(models, one_torch_thread):
    ranker = build_ranker(models["splade"], RankerEnv())
    prepared = ranker._prepare(PAIRS)
    rows = sum(len(batch.tensors["input_ids"]) for batch in prepared)
    assert rows == len({d for _, d in PAIRS}) == 4
    assert sorted(i for batch in prepared for i in batch.indices.tolist()) == list(range(5))


def test_the_engine_streams_pairwise_rankers_in_engine_sized_calls(models, one_torch_thread):
    from abnirml.evaluation.analyses.preference_probing import PreferenceAsPairs, encode_documents
    from abnirml.evaluation.execution.parallel import SerialExecutor

    ranker = build_ranker(models["duot5"], RankerEnv())
    calls = []
    streamed = ranker.preference_batches
    ranker.preference_batches = lambda batches: calls.append(len(batches)) or streamed(batches)
    adapter = PreferenceAsPairs(ranker)
    assert adapter.hints.own_batches and adapter.hints.batch_size == 1024
    pairs = [(q, encode_documents(a, b)) for q, a, b in TRIPLES]
    got = list(SerialExecutor().run(adapter, [pairs[:3], pairs[3:]]))
    assert calls == [2]                          # one stream over both engine batches
    np.testing.assert_allclose(np.concatenate(got), ranker.preferences(TRIPLES), rtol=0,
                               atol=score_bound(models["duot5"]))


def test_prompts_tokenized_together_equal_prompts_tokenized_alone(models):
    """One tokenizer call for a whole engine call gives each prompt the ids it gets alone,
    and only over-long prompts take the shortening path."""
    spec = models["lm"].replace("+template=", "+max_length=24+template=")
    prompts = build_ranker(spec, RankerEnv()).prompts
    long_doc = " ".join(["symptoms of vitamin d deficiency"] * 12)
    items = [(q, (d,)) for q, d in [*PAIRS, ("vitamin d deficiency", long_doc)]]
    together = prompts.many(items)
    assert together == [prompts.ids(q, docs) for q, docs in items]
    assert len(together[-1]) <= 24 < len(prompts.tokenizer(prompts.text(*items[-1])).input_ids)
