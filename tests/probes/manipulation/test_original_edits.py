"""The original ABNIRML code's further manipulations: exact cases and properties."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abnirml.probes.base import ProbeContext
from abnirml.probes.manipulation import edits as m
from abnirml.probes.manipulation import original_edits as mo
from abnirml.probes.manipulation.probes import available
from abnirml.samples import Sample, Skip
from abnirml.text.tokenize import sentence_spans, terms

CTX = m.ManipulationContext()
SENTENCES = "First one here. Second one follows!  Third one ends? Fourth closes."


def rng(seed: int = 3) -> np.random.Generator:
    return np.random.default_rng(seed)


def test_case_fold_lowercases_and_keeps_everything_else():
    assert mo.case_fold("q", "The U.S. Army, in 1990.", CTX, rng()) == "the u.s. army, in 1990."
    assert mo.case_fold("q", "already lower", CTX, rng()) == "already lower"


def test_delete_sentence_positions_exact():
    start = mo.delete_sentence("start")("q", SENTENCES, CTX, rng())
    end = mo.delete_sentence("end")("q", SENTENCES, CTX, rng())
    assert start == "Second one follows!  Third one ends? Fourth closes."
    assert end == "First one here. Second one follows!  Third one ends?"
    assert mo.delete_sentence("start")("q", "Only one sentence.", CTX, rng()) is None
    assert mo.delete_sentence("random")("q", "Only one.", CTX, rng()) is None
    with pytest.raises(ValueError):
        mo.delete_sentence("middle")


def test_delete_random_sentence_removes_exactly_one_sentence_seeded():
    spans = sentence_spans(SENTENCES)
    sentences = [SENTENCES[a:b] for a, b in spans]
    seen = set()
    for seed in range(40):
        out = mo.delete_sentence("random")("q", SENTENCES, CTX, rng(seed))
        assert out == mo.delete_sentence("random")("q", SENTENCES, CTX, rng(seed))
        left = [out[a:b] for a, b in sentence_spans(out)]
        assert len(left) == len(sentences) - 1
        (gone,) = [s for s in sentences if s not in left]
        seen.add(gone)
        assert [s for s in sentences if s != gone] == left
    assert seen == set(sentences)          # every position is drawn eventually


def test_nonrelevant_sentence_is_prepended_from_a_donor():
    donors = {"q": ["Donor text one. Donor text two."]}
    context = m.ManipulationContext(donors=donors)
    out = mo.add_nonrel_sentence_start("q", "Original document.", context, rng())
    assert out in ("Donor text one. Original document.", "Donor text two. Original document.")
    assert mo.add_nonrel_sentence_start("other", "Doc.", m.ManipulationContext(), rng()) is None


def test_chunk_and_word_slots_keep_partly_covered_words_in_place():
    text = "the dog, a cat and (big birds) fly"
    chunks = [(0, 7), (9, 14), (20, 29)]
    slots = mo.chunk_and_word_slots(text, chunks, m._words_in(text))
    assert [text[a:b] for a, b in slots] == ["the dog", "a cat", "and", "big birds", "fly"]


# --------------------------------------------------------------------------- with spaCy

@pytest.fixture(scope="module")
def parsed():
    pytest.importorskip("spacy")
    try:
        from abnirml.text.nlp import load_pipeline

        load_pipeline()
    except Exception as error:
        pytest.skip(f"spaCy English model unavailable: {error}")
    return lambda text: m.ManipulationContext(parses={text: next(iter(m.parse_texts([text])))})


RECIPE = ("Bake the bread at 200 degrees for 3 hours. "
          "The old baker sold 12 loaves to the small shop.")


def noun_chunks(text: str, context: m.ManipulationContext) -> list[str]:
    return [text[a:b] for a, b in m.noun_chunk_spans(text, context.parse(text))]


def test_reverse_noun_chunks_exact(parsed):
    ctx = parsed(RECIPE)
    chunks = noun_chunks(RECIPE, ctx)
    assert len(chunks) >= 4
    out = mo.reverse_noun_chunks("q", RECIPE, ctx, rng())
    expected = m._replace_spans(RECIPE, m.noun_chunk_spans(RECIPE, ctx.parse(RECIPE)),
                                chunks[::-1])
    assert out == expected
    assert out.startswith(f"Bake {chunks[-1]} at")


def test_swap_number_chunks_swaps_two_quantities(parsed):
    ctx = parsed(RECIPE)
    numbered = [RECIPE[a:b] for a, b in mo.number_chunk_spans(RECIPE, ctx.parse(RECIPE))]
    assert len(numbered) >= 2 and all(any(c.isdigit() for c in t) for t in numbered)
    spans = mo.number_chunk_spans(RECIPE, ctx.parse(RECIPE))
    swaps = {m._replace_spans(RECIPE, [spans[i], spans[j]], [numbered[j], numbered[i]])
             for i in range(len(spans)) for j in range(i + 1, len(spans))}
    outs = {mo.swap_number_chunks("q", RECIPE, ctx, rng(s)) for s in range(30)}
    # every output is one pair swapped, nothing else; every pair is drawn eventually
    assert outs == swaps
    assert all(Counter(terms(out)) == Counter(terms(RECIPE)) for out in outs)
    plain = "The cat sat on the mat."
    assert mo.swap_number_chunks("q", plain, parsed(plain), rng()) is None


def test_shuffles_keep_noun_chunks_whole(parsed):
    ctx = parsed(RECIPE)
    chunks = noun_chunks(RECIPE, ctx)
    for function in (mo.shuffle_words_keep_noun_chunks,
                     mo.shuffle_words_in_sentences_keep_noun_chunks):
        outs = {function("q", RECIPE, ctx, rng(s)) for s in range(8)}
        assert len(outs) > 1
        for out in outs:
            assert Counter(terms(out)) == Counter(terms(RECIPE))
            assert all(chunk in out for chunk in chunks), (function.__name__, out)
    within = mo.shuffle_words_in_sentences_keep_noun_chunks("q", RECIPE, ctx, rng())
    first, second = [within[a:b] for a, b in sentence_spans(within)]
    assert first.endswith(".") and second.endswith(".")
    assert Counter(terms(first)) == Counter(terms("Bake the bread at 200 degrees for 3 hours."))


WORDS = ["the", "The", "cat", "dogs", "of", "in", "3", "200", "degrees", "U.S.", "(big", "birds)",
         "ran!", "houses,", "old", "baker", "sold", "to", "a", "shop."]
documents = st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from([" ", "  ", "\n"])),
                     max_size=30).map(lambda parts: "".join(w + s for w, s in parts))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(document=documents, seed=st.integers(0, 2**32 - 1))
def test_reorderings_preserve_the_term_multiset_on_any_text(parsed, document, seed):
    ctx = parsed(document)
    for function in (mo.shuffle_words_keep_noun_chunks,
                     mo.shuffle_words_in_sentences_keep_noun_chunks,
                     mo.reverse_noun_chunks, mo.swap_number_chunks):
        out = function("q", document, ctx, np.random.default_rng(seed))
        if out is not None:
            assert Counter(terms(out)) == Counter(terms(document)), function.__name__
            assert out == function("q", document, ctx, np.random.default_rng(seed))


# --------------------------------------------------------------------------- as probes


def test_probes_count_not_applicable_and_keep_the_sign(demo_collection):
    context = ProbeContext(collection=demo_collection, seed=0)
    probes = {p.name: p for p in available()}
    judged = list(demo_collection.judged())
    single = sum(1 for _, d, _ in judged if len(sentence_spans(demo_collection.docs[d])) < 2)
    items = list(probes["tmp:delete-sentence-end"].samples(context))
    skipped = Counter(i.reason for i in items if isinstance(i, Skip))
    assert skipped == Counter({"not-applicable": single})
    for sample in (i for i in items if isinstance(i, Sample)):
        assert len(sample.doc1) < len(sample.doc2)
        assert sample.doc2.startswith(sample.doc1)
    folded = [i for i in probes["tmp:case-fold"].samples(context) if isinstance(i, Sample)]
    assert folded and all(s.doc1 == s.doc2.lower() for s in folded)
