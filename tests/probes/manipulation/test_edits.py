"""Properties of every textual manipulation (hypothesis), plus exact small cases."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abnirml.errors import MissingExtra
from abnirml.probes.manipulation import edits as m
from abnirml.probes.manipulation.probes import SPACY, SPECS
from abnirml.text.stem import porter
from abnirml.text.stopwords import load_stopwords
from abnirml.text.tokenize import PUNCTUATION, sentence_spans, sentences, terms
from abnirml.text.typos import load_misspellings, parse_dictionary

STOPS = load_stopwords()
WORDS = ["the", "The", "cat", "Cats", "of", "in", "on", "from", "with", "running", "U.S.",
         "don't", "well-known", "(Dr.", "Smith)", "vitamin", "D.", "ran!", "houses,", "3.5",
         "naïve", "to", "a", "--", "...", "?", '"quoted"', "London", "adress", "receive",
         "Because", "children's", "e-mail", "I", "BIG"]
SEPARATORS = [" ", " ", " ", "  ", "\n", "\t", " \n "]

documents = st.builds(
    lambda lead, parts: lead + "".join(w + s for w, s in parts),
    st.sampled_from(["", " ", "\n"]),
    st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)), max_size=40))
any_text = st.one_of(documents, st.text(max_size=120))
queries = st.lists(st.sampled_from(["cat", "cats", "vitamin", "the", "running", "london"]),
                   min_size=1, max_size=4).map(" ".join)
seeds = st.integers(min_value=0, max_value=2**32 - 1)

FAST = [s for s in SPECS if SPACY not in s.needs]
SPACY_SPECS = [s for s in SPECS if SPACY in s.needs]
SKELETON = re.compile(r"[^\W_]+")


def _typo_map() -> dict:
    try:
        return load_misspellings()
    except MissingExtra:
        return {}


def context(**kwargs) -> m.ManipulationContext:
    base = {"stopwords": STOPS, "typo_map": _typo_map(), "typo_rate": 0.5,
            "expansions": {}, "donors": {}, "fallback_donors": ()}
    base.update(kwargs)
    return m.ManipulationContext(**base)


CTX = context()   # without codespell: an empty typo table (the typo tests then skip)


def rng(seed: int = 7) -> np.random.Generator:
    return np.random.default_rng(seed)


def skeleton(text: str) -> str:
    """The text with every term cut out: punctuation and white space only."""
    return SKELETON.sub("\x00", text)


def whitespace_runs(text: str) -> list[str]:
    return re.findall(r"\s+", text)


def is_slot_permutation(original: str, out: str, spans: list[tuple[int, int]]) -> bool:
    """``out`` is ``original`` with the span contents permuted and everything else kept."""
    pieces = Counter(original[a:b] for a, b in spans)
    fixed = [original[:spans[0][0]]] + [original[spans[i][1]:spans[i + 1][0]]
                                        for i in range(len(spans) - 1)] + [original[spans[-1][1]:]]

    def search(pos: int, slot: int) -> bool:
        if slot == len(spans):
            return out[pos:] == fixed[-1]
        for piece in [p for p, c in pieces.items() if c > 0]:
            if out.startswith(piece, pos) and out.startswith(fixed[slot + 1] if slot + 1 <
                                                             len(spans) else fixed[-1],
                                                             pos + len(piece)):
                pieces[piece] -= 1
                nxt = pos + len(piece) + (len(fixed[slot + 1]) if slot + 1 < len(spans) else 0)
                if search(nxt, slot + 1):
                    return True
                pieces[piece] += 1
        return False

    return out.startswith(fixed[0]) and search(len(fixed[0]), 0)


def test_slot_permutation_helper_rejects_other_texts():
    spans = [(0, 1), (2, 3), (4, 5)]
    assert is_slot_permutation("a b c", "b a c", spans)
    assert is_slot_permutation("a b c", "a b c", spans)
    assert not is_slot_permutation("a b c", "a b d", spans)
    assert not is_slot_permutation("a b c", "a  b c", spans)
    assert not is_slot_permutation("a b c", "ab c", spans)


# --------------------------------------------------------------------------- robustness

TEN_K = " ".join(WORDS[i % len(WORDS)] for i in range(10_000))
EDGE_CASES = {"empty": "", "one-word": "word", "punctuation-only": "!!! ... ?? --",
              "whitespace-only": "  \n ", "10k-words": TEN_K}


@pytest.fixture(scope="module")
def parsed_edge_context():
    return context(parses=dict(zip(EDGE_CASES.values(), m.parse_texts(list(EDGE_CASES.values())),
                                   strict=True)))


@pytest.mark.parametrize("case", list(EDGE_CASES))
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.key)
def test_edge_case_documents_never_raise(spec, case, parsed_edge_context):
    document = EDGE_CASES[case]
    out = spec.function("cat vitamin", document, parsed_edge_context, rng())
    assert out is None or isinstance(out, str)
    if case == "10k-words" and out is not None and spec.key.startswith(("shuffle", "reverse")):
        assert sorted(terms(out)) == sorted(terms(document))


@settings(max_examples=60, deadline=None)
@given(query=queries, document=any_text, seed=seeds)
def test_fast_manipulations_accept_any_text_and_are_deterministic(query, document, seed):
    ctx = context(donors={query: ["One donor sentence. Another one!"]},
                  expansions={document: "expansion terms"})
    for spec in FAST:
        first = spec.function(query, document, ctx, rng(seed))
        second = spec.function(query, document, ctx, rng(seed))
        assert first == second, spec.key
        assert first is None or isinstance(first, str)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=any_text, seed=seeds)
def test_spacy_manipulations_accept_any_text_and_are_deterministic(document, seed):
    for spec in SPACY_SPECS:
        first = spec.function("cat", document, CTX, rng(seed))
        assert first == spec.function("cat", document, CTX, rng(seed)), spec.key
        assert first is None or isinstance(first, str)


# --------------------------------------------------------------------------- word order


@settings(max_examples=80, deadline=None)
@given(document=documents, seed=seeds)
def test_shuffle_words_keeps_the_words_and_the_white_space(document, seed):
    out = m.shuffle_words("q", document, CTX, rng(seed))
    assert sorted(out.split()) == sorted(document.split())
    assert whitespace_runs(out) == whitespace_runs(document)
    if len(set(document.split())) > 1:
        assert out != document


@settings(max_examples=80, deadline=None)
@given(document=documents, seed=seeds)
def test_shuffle_words_in_sentences_keeps_each_sentence_and_its_end(document, seed):
    out = m.shuffle_words_in_sentences("q", document, CTX, rng(seed))
    spans = sentence_spans(document)
    assert len(out) == len(document)
    previous = 0
    for a, b in spans:
        assert out[previous:a] == document[previous:a]          # text between sentences
        assert sorted(terms(out[a:b])) == sorted(terms(document[a:b]))
        closer = re.search(r"""[.!?]+["')\]]*$""", document[a:b])
        if closer:
            assert out[a:b].endswith(closer.group(0))
        previous = b
    assert out[previous:] == document[previous:]
    assert whitespace_runs(out) == whitespace_runs(document)


@settings(max_examples=80, deadline=None)
@given(document=documents, seed=seeds)
def test_shuffle_sentences_permutes_whole_sentences(document, seed):
    out = m.shuffle_sentences("q", document, CTX, rng(seed))
    spans = sentence_spans(document)
    if len(spans) < 2:
        assert out is None
        return
    assert is_slot_permutation(document, out, spans)
    if len(set(sentences(document))) > 1:
        assert out != document


def test_shuffle_sentences_exact_case():
    document = "First one.  Second one!\nThird one?"
    out = m.shuffle_sentences("q", document, CTX, rng(3))
    assert out != document
    assert re.findall(r"  |\n", out) == ["  ", "\n"]
    assert sorted(re.split(r"  |\n", out)) == sorted(sentences(document))
    assert m.shuffle_sentences("q", "Only one sentence here.", CTX, rng()) is None


@settings(max_examples=80, deadline=None)
@given(document=documents)
def test_reverse_words_reverses_the_words_only(document):
    out = m.reverse_words("q", document, CTX, rng())
    assert out.split() == document.split()[::-1]
    assert whitespace_runs(out) == whitespace_runs(document)


@settings(max_examples=80, deadline=None)
@given(document=documents)
def test_reverse_sentences_reverses_the_sentence_order(document):
    out = m.reverse_sentences("q", document, CTX, rng())
    spans = sentence_spans(document)
    if len(spans) < 2:
        assert out is None
        return
    gaps = [document[spans[i][1]:spans[i + 1][0]] for i in range(len(spans) - 1)]
    expected = document[:spans[0][0]]
    for i, (a, b) in enumerate(reversed(spans)):
        expected += document[a:b] + (gaps[i] if i < len(gaps) else "")
    expected += document[spans[-1][1]:]
    assert out == expected


# --------------------------------------------------------------------------- spaCy based


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=any_text, seed=seeds)
def test_only_prepositions_move(document, seed):
    parsed = CTX.parse(document)
    out = m.shuffle_prepositions("q", document, CTX, rng(seed))
    slots = m.preposition_spans(document, parsed)
    if len(slots) < 2:
        assert out is None
        return
    adp = {(t.idx, t.idx + len(t.text)) for t in parsed if t.pos_ == "ADP"}
    assert set(slots) <= adp
    assert is_slot_permutation(document, out, slots)


def test_shuffle_prepositions_exact_case():
    document = "The book on the table was written by a man from Spain in 1990."
    out = m.shuffle_prepositions("q", document, CTX, rng(1))
    moved = re.fullmatch(r"The book (\w+) the table was written (\w+) a man (\w+) Spain (\w+) "
                         r"1990\.", out)
    assert moved is not None
    assert sorted(moved.groups()) == ["by", "from", "in", "on"]
    assert list(moved.groups()) != ["on", "by", "from", "in"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=any_text, seed=seeds)
def test_only_noun_chunks_move(document, seed):
    parsed = CTX.parse(document)
    out = m.swap_noun_chunks("q", document, CTX, rng(seed))
    slots = m.noun_chunk_spans(document, parsed)
    if len(slots) < 2:
        assert out is None
        return
    chunks = {(c.start_char, c.end_char) for c in parsed.noun_chunks}
    assert set(slots) <= chunks
    assert is_slot_permutation(document, out, slots)
    assert sorted(terms(out)) == sorted(terms(document))


def test_touching_noun_chunks_never_glue_terms_together():
    # spaCy makes two touching chunks of "fishkeeping â\x80" and "¦" (a mis-decoded "…")
    document = ("The basic rule of fishkeeping â\x80¦ is 1 Inch of fish needs a minimum of "
                "1 gallon of water. Goldfish should really be kept in a pond.")
    for seed in range(20):
        out = m.swap_noun_chunks("q", document, CTX, rng(seed))
        assert sorted(terms(out)) == sorted(terms(document))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=documents)
def test_lemmatize_changes_only_non_stopword_terms(document):
    out = m.lemmatize("q", document, CTX, rng())
    assert skeleton(out) == skeleton(document)
    before, after = terms(document), terms(out)
    assert len(before) == len(after)
    for a, b in zip(before, after, strict=True):
        if a != b:
            assert a not in STOPS


def test_lemmatize_exact_case():
    out = m.lemmatize("q", "The cats were running to the houses, don't they?", CTX, rng())
    assert out == "The cat were run to the house, don't they?"
    out = m.lemmatize("q", "Houses were built quickly. WOLVES ate sheep.", CTX, rng())
    assert out == "House were build quickly. WOLF eat sheep."


# --------------------------------------------------------------------------- removal


@settings(max_examples=100, deadline=None)
@given(document=any_text)
def test_remove_stops_deletes_exactly_the_stopwords(document):
    out = m.remove_stops("q", document, CTX, rng())
    assert terms(out) == [t for t in terms(document) if t not in STOPS]
    if not any(t in STOPS for t in terms(document)):
        assert out == document


@settings(max_examples=100, deadline=None)
@given(document=any_text)
def test_remove_punct_deletes_exactly_the_punctuation(document):
    out = m.remove_punct("q", document, CTX, rng())
    assert not set(out) & PUNCTUATION
    assert terms(out) == terms(document)
    if not set(document) & PUNCTUATION:
        assert out == document


@settings(max_examples=100, deadline=None)
@given(document=any_text)
def test_remove_stops_punct_does_both(document):
    out = m.remove_stops_punct("q", document, CTX, rng())
    assert not set(out) & PUNCTUATION
    assert terms(out) == [t for t in terms(document) if t not in STOPS]


def test_removal_exact_cases():
    assert m.remove_stops("q", "  The cat sat on the mat.\nIt was\tthe end ", CTX, rng()) == \
        "  cat sat mat.\nend "
    assert m.remove_punct("q", "Well-known (U.S.) facts -- e.g. this!", CTX, rng()) == \
        "Well known U S facts e g this"
    assert m.remove_stops_punct("q", "I don't know, do you?", CTX, rng()) == "don t know"


# --------------------------------------------------------------------------- typos


def test_typo_dictionary_is_inverted():
    parsed = parse_dictionary("teh->the\nabotu->about, abbot,\nfoo bar->x\nAdn->and\nx->a-b\n")
    assert parsed == {"the": ("teh",), "about": ("abotu",), "abbot": ("abotu",),
                      "and": ("adn",)}
    assert "teh" in load_misspellings()["the"]


@settings(max_examples=80, deadline=None)
@given(document=documents, seed=seeds)
def test_typos_only_replace_words_by_their_listed_misspellings(document, seed):
    table = load_misspellings()
    out = m.typos("q", document, CTX, rng(seed))
    assert skeleton(out) == skeleton(document)
    for a, b in zip(terms(document), terms(out), strict=True):
        if a != b:
            assert b in table[a]


def test_typo_rate_zero_and_one():
    document = "The adult should receive their vitamin."
    assert m.typos("q", document, context(typo_rate=0.0), rng()) == document
    table = load_misspellings()
    out = m.typos("q", document, context(typo_rate=1.0), rng())
    for a, b in zip(terms(document), terms(out), strict=True):
        assert (a == b) == (a not in table)
    assert out[0].isupper()                      # "The" keeps its capital


# --------------------------------------------------------------------------- masking


def stem(word: str) -> str:
    return porter().stem(word.lower())


@settings(max_examples=80, deadline=None)
@given(query=queries, document=documents)
def test_only_and_drop_query_mask_complementary_terms(query, document):
    ctx = context(mask_token="MASKTOKEN")
    keys = {stem(t) for t in terms(query)}
    only = m.only_query(query, document, ctx, rng())
    drop = m.drop_query(query, document, ctx, rng())
    for word, kept, dropped in zip(terms(document), terms(only), terms(drop), strict=True):
        if stem(word) in keys:
            assert (kept, dropped) == (word, "masktoken")
        else:
            assert (kept, dropped) == ("masktoken", word)
    assert skeleton(only) == skeleton(document) == skeleton(drop)


def test_masking_exact_case():
    document = "Cats love the warm sun; a cat sleeps."
    assert m.only_query("cat sun", document, CTX, rng()) == \
        "Cats [MASK] [MASK] [MASK] sun; [MASK] cat [MASK]."
    assert m.drop_query("cat sun", document, CTX, rng()) == \
        "[MASK] love the warm [MASK]; a [MASK] sleeps."


# --------------------------------------------------------------------------- added text


def test_added_text_exact_cases():
    doc = "A short passage."
    assert m.replace_with_query("the query", doc, CTX, rng()) == "the query"
    assert m.prepend_query("the query", doc, CTX, rng()) == "the query A short passage."
    assert m.append_query("the query", doc, CTX, rng()) == "A short passage. the query"
    assert m.append_query("q", "ends with newline\n", CTX, rng()) == "ends with newline\nq"
    assert m.duplicate(3)("q", doc, CTX, rng()) == " ".join([doc] * 3)
    assert m.duplicate(2)("q", "  ", CTX, rng()) is None
    assert m.add_doct5query("q", doc, CTX, rng()) is None
    expanded = context(expansions={doc: " what is a passage "})
    assert m.add_doct5query("q", doc, expanded, rng()) == "A short passage. what is a passage"
    with pytest.raises(ValueError):
        m.duplicate(1)


@settings(max_examples=60, deadline=None)
@given(seed=seeds)
def test_nonrelevant_sentence_comes_from_a_donor_of_the_same_query(seed):
    doc = "Original text here."
    donors = ["Donor one says this. Donor one says that.", "Second donor! It rambles on."]
    ctx = context(donors={"q": [*donors, doc]}, fallback_donors=["Elsewhere entirely."])
    out = m.add_nonrel_sentence("q", doc, ctx, rng(seed))
    assert out.startswith(doc + " ")
    assert out[len(doc) + 1:] in {s for d in donors for s in sentences(d)}
    fallback = m.add_nonrel_sentence("other query", doc, ctx, rng(seed))
    assert fallback == doc + " Elsewhere entirely."
    assert m.add_nonrel_sentence("q", doc, context(donors={"q": [doc]}), rng(seed)) is None


def test_typos_no_stopwords_spares_stopwords_only():
    """The original ABNIRML code's Typo(no_stops=True): content words are misspelt as by
    tmp:typos, stopwords never."""
    import numpy as np

    from abnirml.probes.manipulation import edits as tm

    context = tm.ManipulationContext(
        stopwords=frozenset({"the", "and"}), typo_rate=1.0,
        typo_map={"the": ("teh",), "receive": ("recieve",), "and": ("adn",)})
    document = "The kids receive the gifts and smile."
    assert tm.typos("q", document, context, np.random.default_rng(0)) == \
        "Teh kids recieve teh gifts adn smile."
    assert tm.typos_no_stopwords("q", document, context, np.random.default_rng(0)) == \
        "The kids recieve the gifts and smile."


def test_the_parsed_dictionary_is_kept_between_runs_and_read_back_equal(tmp_path, monkeypatch):
    from abnirml.text import typos

    monkeypatch.setenv("ABNIRML_CACHE", str(tmp_path / "scores.sqlite"))
    text = "teh->the\nabotu->about, abbot,\nhte->the\n"
    first = typos.cached_parse(text)
    stored = list((tmp_path / "vocabulary").glob("codespell-*.json"))
    assert len(stored) == 1
    parsed = []
    monkeypatch.setattr(typos, "parse_dictionary", lambda t: parsed.append(t) or {})
    again = typos.cached_parse(text)
    assert not parsed                       # read back, not parsed again
    assert again == first == {"the": ("hte", "teh"), "about": ("abotu",), "abbot": ("abotu",)}
    assert list(again) == list(first)       # same order: seeded draws stay the same
    stored[0].write_text("[not a dictionary", encoding="utf-8")
    assert typos.cached_parse(text) == {} and parsed == [text]   # broken entry: parsed again
