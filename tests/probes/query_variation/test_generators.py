"""Query variation generators (Penha et al.): exact cases and properties."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abnirml.probes.query_variation import generators as qv
from abnirml.probes.query_variation.synonyms import SynonymOptions
from abnirml.text.stopwords import load_stopwords, textattack_stopwords
from abnirml.text.tokenize import terms

STOPS = load_stopwords()
TEXTATTACK_STOPS = textattack_stopwords()
IDF = {"what": 0.5, "is": 0.1, "the": 0.05, "definition": 3.0, "of": 0.08, "osmosis": 9.0}


def _synonyms(query: str) -> SynonymOptions:
    """osmosis → diffusion wherever it stands (a stand-in source with a known answer)."""
    spans = qv.content_word_spans(query, STOPS)
    choices = tuple((s, "diffusion") for s in spans if query[s[0]:s[1]].lower() == "osmosis")
    return SynonymOptions(choices, len(spans), len(spans) - len(choices))


CTX = qv.VariationContext(stopwords=STOPS, idf=lambda w: IDF.get(w.lower(), 5.0),
                          synonyms=_synonyms)
WORDS = st.sampled_from(["what", "is", "osmosis", "receive", "the", "rates", "cell",
                         "definition", "company's", "x-ray", "of", "cell"])


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _edits(a: str, b: str) -> int:
    """Damerau–Levenshtein distance (adjacent transposition = one edit)."""
    d = [[max(i, j) if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1,
                          d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def test_exact_variations():
    query = "What is the definition of osmosis"
    assert qv.remove_stopwords(query, CTX, rng()) == "definition osmosis"
    assert qv.drop_least_informative(query, CTX, rng()) == "What is the of osmosis"
    assert qv.synonym(query, CTX, rng()) == "What is the definition of diffusion"
    assert qv.synonym("Osmosis rates", CTX, rng()) == "Diffusion rates"     # casing kept
    # the only pair of different words: one transposition, punctuation stays in place
    assert qv.swap_two_words("osmosis, cell?", CTX, rng()) == "cell, osmosis?"


def test_words_keep_possessives_and_hyphens_whole():
    query = "the company's x-ray strategy"
    assert [query[a:b] for a, b in qv.word_spans(query)] == ["the", "company's", "x-ray",
                                                             "strategy"]
    # the least informative content word goes whole, with one space: no "company'strategy"
    idf = {"company's": 1.0, "x-ray": 4.0, "strategy": 3.0}
    ctx = qv.VariationContext(stopwords=STOPS, idf=lambda w: idf[w])
    assert qv.drop_least_informative(query, ctx, rng()) == "the x-ray strategy"
    for seed in range(30):
        swapped = qv.swap_two_words(query, CTX, rng(seed))
        assert sorted(swapped.split()) == sorted(query.split())


def test_typo_edits_known_answers():
    assert qv.typo_edits("cell", "swap") == ["ecll", "clel"]     # "ll" swapped is no change
    assert qv.typo_edits("ab", "swap") == ["ba"]
    assert set(qv.typo_edits("a", "qwerty")) == set(qv.QWERTY_NEIGHBOURS["a"])
    assert len(qv.typo_edits("ab", "random")) == 2 * 25
    assert qv.typo_edits("go", "qwerty") == ["ro", "to", "yo", "ho", "bo", "vo", "do",
                                             "gi", "gk", "gl", "gp"]
    with pytest.raises(ValueError, match="unknown misspelling kind"):
        qv.typo_edits("cell", "drop")


#: ``WordSwapQWERTY._keyboard_adjacency`` of TextAttack
#: (textattack/transformations/word_swaps/word_swap_qwerty.py), the generator Penha et al.
#: released, written out key by key as TextAttack lists it
TEXTATTACK_QWERTY = {
    "q": ["w", "a", "s"],
    "w": ["q", "e", "a", "s", "d"],
    "e": ["w", "s", "d", "f", "r"],
    "r": ["e", "d", "f", "g", "t"],
    "t": ["r", "f", "g", "h", "y"],
    "y": ["t", "g", "h", "j", "u"],
    "u": ["y", "h", "j", "k", "i"],
    "i": ["u", "j", "k", "l", "o"],
    "o": ["i", "k", "l", "p"],
    "p": ["o", "l"],
    "a": ["q", "w", "s", "z", "x"],
    "s": ["q", "w", "e", "a", "d", "z", "x"],
    "d": ["w", "e", "r", "f", "c", "x", "s"],
    "f": ["e", "r", "t", "g", "v", "c", "d"],
    "g": ["r", "t", "y", "h", "b", "v", "d"],
    "h": ["t", "y", "u", "g", "j", "b", "n"],
    "j": ["y", "u", "i", "k", "m", "n", "h"],
    "k": ["u", "i", "o", "l", "m", "j"],
    "l": ["i", "o", "p", "k"],
    "z": ["a", "s", "x"],
    "x": ["s", "d", "z", "c"],
    "c": ["x", "d", "f", "v"],
    "v": ["c", "f", "g", "b"],
    "b": ["v", "g", "h", "n"],
    "n": ["b", "h", "j", "m"],
    "m": ["n", "j", "k"],
}


def test_qwerty_keyboard_is_textattacks_table():
    """Every key, every neighbour, in TextAttack's order: the table Penha et al.'s generator
    draws from (it is not symmetric: "g" may become "d", "d" never "g")."""
    assert {key: list(near) for key, near in qv.QWERTY_NEIGHBOURS.items()} == TEXTATTACK_QWERTY
    for letter, near in TEXTATTACK_QWERTY.items():
        edits = qv.typo_edits(letter, "qwerty")
        assert edits == near, letter


@pytest.mark.parametrize("kind", [*qv.TYPO_KINDS, None])
def test_misspelling_is_one_character_edit_of_a_content_word(kind):
    generate = qv.misspell(kind)
    query = "what is the definition of osmosis"
    seen = set()
    for seed in range(200):
        typo = generate(query, CTX, rng(seed))
        changed = [(a, b) for a, b in zip(query.split(), typo.split(), strict=True) if a != b]
        assert len(changed) == 1
        word, misspelt = changed[0]
        assert word not in TEXTATTACK_STOPS and len(misspelt) == len(word)
        assert _edits(word.lower(), misspelt.lower()) == 1
        if kind == "swap":
            assert sorted(word) == sorted(misspelt)
        if kind == "qwerty":
            (i,) = [k for k, (x, y) in enumerate(zip(word, misspelt, strict=True)) if x != y]
            assert misspelt[i] in qv.QWERTY_NEIGHBOURS[word[i]]
        seen.add(word)
    assert seen == {"definition", "osmosis"}                      # never a stopword
    assert generate(query, CTX, rng(7)) == generate(query, CTX, rng(7))   # seeded


def test_not_applicable_cases():
    for kind in (*qv.TYPO_KINDS, None):
        assert qv.misspell(kind)("what is the", CTX, rng()) is None       # stopwords only
    assert qv.misspell("swap")("aa of", CTX, rng()) is None           # no edit changes "aa"
    assert qv.remove_stopwords("osmosis rates", CTX, rng()) is None
    assert qv.remove_stopwords("what is the", CTX, rng()) is None       # nothing would remain
    assert qv.drop_least_informative("osmosis", CTX, rng()) is None
    assert qv.drop_least_informative("what is osmosis", CTX, rng()) is None   # one content word
    assert qv.swap_two_words("osmosis osmosis", CTX, rng()) is None
    assert qv.swap_two_words("Osmosis osmosis", CTX, rng()) is None      # same word, casing
    assert qv.synonym("what is", CTX, rng()) is None


@settings(max_examples=80, deadline=None)
@given(words=st.lists(WORDS, min_size=1, max_size=8), seed=st.integers(0, 2**32 - 1))
def test_properties_on_any_query(words, seed):
    query = " ".join(words)
    shuffled = qv.swap_two_words(query, CTX, rng(seed))
    if shuffled is not None:
        before, after = query.split(), shuffled.split()
        moved = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
        assert len(moved) == 2                                    # exactly one transposition
        i, j = moved
        assert (after[i], after[j]) == (before[j], before[i])
    removed = qv.remove_stopwords(query, CTX, rng(seed))
    if removed is not None:
        assert terms(removed) == [w for w in terms(query) if w not in STOPS]
        assert "  " not in removed and removed == removed.strip()
    dropped = qv.drop_least_informative(query, CTX, rng(seed))
    if dropped is not None:
        gone = Counter(query.split()) - Counter(dropped.split())
        assert sum(gone.values()) == 1 and len(dropped.split()) == len(words) - 1
        assert next(iter(gone)).lower() not in STOPS
    for kind in (*qv.TYPO_KINDS, None):
        typo = qv.misspell(kind)(query, CTX, rng(seed))
        if typo is not None:
            changed = [(a, b) for a, b in zip(query.split(), typo.split(), strict=True)
                       if a != b]
            assert len(changed) == 1 and changed[0][0] not in TEXTATTACK_STOPS
            assert _edits(*changed[0]) == 1


def test_misspellings_spare_exactly_textattacks_stopwords():
    """Penha et al.'s misspelling generators apply TextAttack's StopwordModification, whose
    list is NLTK's 179 English stopwords, compared with the word as written: "define",
    "cause", "also", "much" or "first" may be misspelt whatever the run's --stopwords
    list says, "should've" and "ma" may not."""
    assert len(TEXTATTACK_STOPS) == 179
    assert {"should've", "ma", "y", "won't", "doesn", "further", "own", "am"} <= TEXTATTACK_STOPS
    assert not {"define", "cause", "also", "much", "first", "however", "get"} & TEXTATTACK_STOPS
    def words(query):
        return [query[a:b] for a, b in qv.misspellable_spans(query, "qwerty")]

    assert words("how much does it cost to define a cause first") == [
        "much", "cost", "define", "cause", "first"]
    # matched as written, as TextAttack's AttackedText words are: "What" is not "what"
    assert words("What is it") == ["What"]


def test_qwerty_draws_the_position_uniformly_then_the_key():
    """WordSwapQWERTY(random_one=True): a position of the word uniformly, then a neighbour
    of that letter uniformly. In "spa" 's' has 7 neighbouring keys, 'p' 2 and 'a' 5: drawn
    over every (position, key) edit instead, the positions would come 7 : 2 : 5 (50 %,
    14 %, 36 %). 6,000 seeded draws must fit a third each (chi-square, 2 degrees of
    freedom) and, at 's', a seventh per key."""
    from scipy.stats import chisquare

    generate = qv.misspell("qwerty")
    draws = [generate("spa", CTX, rng(seed)) for seed in range(6000)]
    position = Counter(next(i for i, (a, b) in enumerate(zip("spa", d, strict=True)) if a != b)
                       for d in draws)
    counts = [position[i] for i in range(3)]
    assert chisquare(counts).pvalue > 0.001, counts
    assert all(1800 < c < 2200 for c in counts), counts        # the old draw gives ~3000 at 0
    keys = Counter(d[0] for d in draws if d[0] != "s")
    assert set(keys) == set(qv.QWERTY_NEIGHBOURS["s"])
    assert chisquare([keys[k] for k in qv.QWERTY_NEIGHBOURS["s"]]).pvalue > 0.001
