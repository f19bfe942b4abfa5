"""doc2query on a tiny random T5: generation, seeding, the expansion store, BM25 on top."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from abnirml.errors import ConfigError
from abnirml.rankers.families.doc2query import build_expansion_source
from abnirml.rankers.families.expansion import ExpansionSource, ExpansionStore
from abnirml.rankers.registry import RankerEnv, build_ranker
from tests._tiny_models import save_t5

DOCS = ["vitamin d deficiency symptoms in adults are tired bones",
        "bread dough does rise for hours in a warm oven",
        "the roman empire split in east and west"]


@pytest.fixture(scope="module")
def t5(tmp_path_factory):
    import torch

    torch.set_num_threads(1)
    return save_t5(tmp_path_factory.mktemp("d2q") / "t5")


def source(t5, extra: str = "", seed: int = 0, store=None):
    generator = build_expansion_source(f"doc2query:{t5}+max_new_tokens=6{extra}", seed=seed)
    generator.store = store if store is not None else ExpansionStore(None)
    return generator


def test_sampling_is_seeded_per_document_and_independent_of_batching(t5):
    gen = source(t5)
    assert isinstance(gen, ExpansionSource)
    together = gen.expand(DOCS)
    alone = [source(t5).expand([d])[0] for d in DOCS]
    assert together == alone
    queries = gen.generate(DOCS[0])
    assert len(queries) == 4 and all(len(q.split()) <= 6 for q in queries)
    assert together[0] == " ".join(queries)
    assert source(t5, seed=0).expand(DOCS) == together
    assert source(t5, seed=1).expand(DOCS) != together
    assert source(t5, "+n=2").expand(DOCS[:1])[0].count(" ") < together[0].count(" ")


def test_greedy_mode_is_deterministic_and_seed_free(t5):
    a = source(t5, "+mode=greedy+n=1", seed=0)
    b = source(t5, "+mode=greedy+n=1", seed=5)
    assert a.fingerprint == b.fingerprint and "seed" not in a.fingerprint
    assert a.expand(DOCS) == b.expand(DOCS)
    beams = source(t5, "+mode=greedy+n=3").generate(DOCS[1])
    assert len(beams) == 3
    with pytest.raises(ConfigError, match="mode must be sample or greedy"):
        source(t5, "+mode=nucleus")


def test_expansions_are_generated_once_and_then_read_from_disk(t5, tmp_path):
    path = tmp_path / "expansions.sqlite"
    first = source(t5, store=ExpansionStore(path))
    expanded = first.expand(DOCS + DOCS[:1])
    assert first.generated == 3
    second = source(t5, store=ExpansionStore(path))
    second.generate = None      # any generation attempt would fail
    assert second.expand(DOCS) == expanded[:3]
    assert second.generated == 0 and second.store.count(second.fingerprint) == 3


def test_ranker_is_bm25_over_document_plus_expansion(t5, demo_collection):
    from abnirml.rankers.families.lexical import BM25

    env = RankerEnv(collection=demo_collection)
    ranker = build_ranker(f"doc2query:{t5}+max_new_tokens=6", env)
    assert ranker.name == f"doc2query:{t5}+max_new_tokens=6"
    pairs = [("vitamin d symptoms", DOCS[0]), ("dough rise", DOCS[1]), ("rome", DOCS[2]),
             ("vitamin d symptoms", DOCS[1])]
    scores = ranker.score(pairs)
    expansions = ranker.generator.expand([d for _, d in pairs])
    bm25 = BM25(env.collection_stats())
    expected = bm25.score([(q, f"{d} {e}") for (q, d), e in zip(pairs, expansions,
                                                                   strict=True)])
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-12)
    one_by_one = np.concatenate([ranker.score([p]) for p in pairs])
    np.testing.assert_allclose(one_by_one, scores, atol=1e-12)
    assert isinstance(ranker, ExpansionSource)       # usable as doct5query_source
    assert ranker.expand([DOCS[0]]) == expansions[:1]
    reseeded = build_ranker(f"doc2query:{t5}+max_new_tokens=6+seed=3", env)
    assert reseeded.fingerprint != ranker.fingerprint


def test_expansion_source_option_accepts_objects_and_specs(t5):
    from abnirml.rankers.families.doc2query import as_expansion_source

    gen = source(t5)
    assert as_expansion_source(gen) is gen
    built = as_expansion_source(f"{t5}+n=2+max_new_tokens=4", seed=7)
    assert built.n == 2 and built.seed == 7 and built.max_new_tokens == 4
    with pytest.raises(ConfigError, match="doct5query_source"):
        as_expansion_source(3)


def test_generator_dtype_is_in_the_fingerprint_and_generates_in_half_precision(t5):
    fp32 = source(t5, "+mode=greedy+n=1")
    bf16 = source(t5, "+mode=greedy+n=1+dtype=bf16")
    assert bf16.fingerprint == fp32.fingerprint + "[dtype=bf16]"
    assert next(bf16.model.parameters()).dtype is __import__("torch").bfloat16
    assert len(bf16.generate(DOCS[0])) == 1
    with pytest.raises(ConfigError, match="dtype must be fp32, fp16 or bf16"):
        source(t5, "+dtype=fp64")


def test_expanded_statistics_are_counted_chunk_by_chunk(t5, demo_collection):
    from abnirml.data.stats import CollectionStats
    from abnirml.rankers.families.doc2query import _expanded_texts

    texts = list(demo_collection.doc_texts())
    gen = source(t5, "+mode=greedy+n=1")
    whole = [f"{t} {e}" for t, e in zip(texts, gen.expand(texts), strict=True)]
    assert list(_expanded_texts(iter(texts), gen, chunk=5)) == whole    # 112 = 22 × 5 + 2

    env = RankerEnv(collection=demo_collection)
    ranker = build_ranker(f"doc2query:{t5}+max_new_tokens=6+mode=greedy+n=1+stats=expanded", env)
    expected = CollectionStats.build(whole, env.analyzer)
    stats = ranker.bm25.stats
    assert (stats.num_docs, stats.num_tokens, stats.df, stats.digest) == (
        expected.num_docs, expected.num_tokens, expected.df, expected.digest)
    assert stats.num_tokens > env.collection_stats().num_tokens
