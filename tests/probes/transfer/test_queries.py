"""Query construction for transfer pairs: shared noun chunks, seeded choice, lemma overlap."""

import pytest

from abnirml.probes.transfer.queries import (
    NO_QUERY_OVERLAP,
    NO_SHARED_CHUNK,
    FeatureStore,
    chunk_query,
    given_query,
    seeded_index,
)
from abnirml.text.stopwords import load_stopwords

pytest.importorskip("spacy")

KEEPER_1 = "The old lighthouse keeper painted the wooden door."
KEEPER_2 = "The wooden door was painted by the old lighthouse keeper."
SHARED = {"the old lighthouse keeper", "the wooden door"}


@pytest.fixture(scope="module")
def store():
    s = FeatureStore(load_stopwords("default"))
    s.ensure([KEEPER_1, KEEPER_2, "It rained all day.", "Heavy showers fell.",
              "She thanked him.", "They thanked her."], chunks=True)
    return s


def test_shared_noun_chunk_found(store):
    choice = chunk_query(store, KEEPER_1, KEEPER_2, seed=0, key="p1")
    assert choice.skip is None and choice.source == "noun-chunk"
    assert choice.query in SHARED


def test_query_choice_is_deterministic_and_depends_on_seed(store):
    picks = [chunk_query(store, KEEPER_1, KEEPER_2, seed=s, key="p1").query for s in range(30)]
    again = [chunk_query(store, KEEPER_1, KEEPER_2, seed=s, key="p1").query for s in range(30)]
    assert picks == again
    assert set(picks) == SHARED  # both candidates are reachable through the seed


def test_pair_without_shared_chunk_is_discarded(store):
    choice = chunk_query(store, "It rained all day.", "Heavy showers fell.", seed=0, key="p")
    assert (choice.query, choice.skip) == (None, NO_SHARED_CHUNK)


def test_pronoun_chunks_do_not_count(store):
    # "she"/"him"/"they"/"her" are noun chunks of stopwords only: no usable query
    choice = chunk_query(store, "She thanked him.", "They thanked her.", seed=0, key="p")
    assert choice.skip == NO_SHARED_CHUNK


def test_given_query_needs_a_content_lemma_in_both_texts():
    s = FeatureStore(load_stopwords("default"))
    texts = ["Storms hit the coast", "A storm battered the coastal town.",
             "The storm damaged houses.", "Residents were evacuated.", "volcanic eruptions"]
    s.ensure(texts, chunks=False)
    # "storms" → lemma "storm" occurs in both documents
    ok = given_query(s, "Storms hit the coast", texts[1], texts[2])
    assert ok.skip is None and ok.query == "Storms hit the coast"
    miss = given_query(s, "volcanic eruptions", texts[1], texts[2])
    assert miss.skip == NO_QUERY_OVERLAP
    one_sided = given_query(s, "Storms hit the coast", texts[1], texts[3])
    assert one_sided.skip == NO_QUERY_OVERLAP


def test_store_parses_each_text_once_and_upgrades_to_chunks():
    s = FeatureStore(load_stopwords("default"))
    s.ensure(["A red fox ran.", "A red fox ran."], chunks=False)
    assert s.parsed == 1 and s.get("A red fox ran.").chunks is None
    s.ensure(["A red fox ran."], chunks=False)
    assert s.parsed == 1
    s.ensure(["A red fox ran."], chunks=True)
    features = s.get("A red fox ran.")
    assert s.parsed == 2 and features.lemmas is not None
    assert dict(features.chunks) == {"a red fox": frozenset({"red", "fox"})}


def test_seeded_index_range_and_stability():
    values = [seeded_index(3, f"k{i}", 7) for i in range(200)]
    assert all(0 <= v < 7 for v in values) and len(set(values)) == 7
    assert values == [seeded_index(3, f"k{i}", 7) for i in range(200)]
