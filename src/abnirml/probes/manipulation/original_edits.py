"""The manipulations of the original ABNIRML code (allenai/abnirml) our battery lacked.

Case folding, deleting one sentence (first, last or a random one), adding a non-relevant
sentence at the *start*, word shuffles that keep noun chunks whole, reversing the noun-chunk
slots and swapping two number-bearing noun chunks. The original code rebuilt every text by
joining spaCy tokens with single spaces, which changes white space and punctuation
attachment everywhere; like :mod:`.edits`, these functions edit character spans in
place, so only what the manipulation is about changes and bag-of-words rankers see exactly
the term multiset they should (every reordering here preserves it).

Same signature and conventions as :mod:`.edits`: ``(query, document, context, rng)
-> str | None``, ``None`` when the manipulation does not apply (one-sentence documents for
sentence deletion, fewer than two movable slots for the shuffles).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from abnirml.probes.manipulation.edits import (
    Manipulation,
    ManipulationContext,
    Span,
    _apart,
    _isolated,
    _permute,
    _prepend,
    _replace_spans,
    _shuffled,
    _words_in,
    donor_sentence,
    noun_chunk_spans,
    sentence_word_slots,
)
from abnirml.text.tokenize import sentence_spans

DELETE_POSITIONS = ("start", "end", "random")


# --------------------------------------------------------------------------- casing


def case_fold(query: str, document: str, context: ManipulationContext,
              rng: np.random.Generator) -> str | None:
    """The document lowercased (a document already in lower case is left unchanged)."""
    return document.lower()


# --------------------------------------------------------------------------- sentences


def _without_span(text: str, start: int, end: int) -> str:
    """``text`` minus ``[start, end)`` and the white space that separated it from the rest.

    The white space after a removed sentence goes with it; for the last sentence the white
    space before it goes instead, so no dangling separator is left at either end.
    """
    after = end
    while after < len(text) and text[after].isspace():
        after += 1
    if after < len(text) or start == 0:
        return text[:start] + text[after:]
    before = start
    while before > 0 and text[before - 1].isspace():
        before -= 1
    return text[:before] + text[end:]


def delete_sentence(position: str) -> Manipulation:
    """A manipulation deleting the first, last or a random sentence (``position``).

    Documents of one sentence do not apply: deleting it would leave nothing to rank.
    """
    if position not in DELETE_POSITIONS:
        raise ValueError(f"position must be one of {', '.join(DELETE_POSITIONS)}")

    def delete(query: str, document: str, context: ManipulationContext,
               rng: np.random.Generator) -> str | None:
        spans = sentence_spans(document)
        if len(spans) < 2:
            return None
        if position == "start":
            index = 0
        elif position == "end":
            index = len(spans) - 1
        else:
            index = int(rng.integers(len(spans)))
        return _without_span(document, *spans[index])

    delete.__name__ = f"delete_sentence_{position}"
    delete.__doc__ = f"Delete the {position} sentence (one-sentence documents do not apply)."
    return delete


def add_nonrel_sentence_start(query: str, document: str, context: ManipulationContext,
                              rng: np.random.Generator) -> str | None:
    """Prepend a sentence drawn from a non-relevant document (same query when possible).

    The donor choice is the same as for ``tmp:add-nonrel-sentence`` (which appends).
    """
    sentence = donor_sentence(query, document, context, rng)
    return None if sentence is None else _prepend(sentence, document)


# --------------------------------------------------------------------------- noun chunks


def _outside(spans: Sequence[Span], blocks: Sequence[Span]) -> list[Span]:
    """The spans that overlap none of ``blocks`` (both sorted by start)."""
    kept: list[Span] = []
    b = 0
    for start, end in spans:
        while b < len(blocks) and blocks[b][1] <= start:
            b += 1
        if b < len(blocks) and blocks[b][0] < end:
            continue
        kept.append((start, end))
    return kept


def chunk_and_word_slots(document: str, chunks: Sequence[Span], words: Sequence[Span]
                         ) -> list[Span]:
    """Movable units: each noun chunk whole, plus every word that overlaps no noun chunk.

    A word only partly covered by a chunk (``dog,`` around the chunk ``dog``) keeps its
    uncovered rest in place; the chunk slot moves. Slots are isolated from letters and
    digits and kept apart (see :func:`~.edits._apart`), so terms never merge.
    """
    slots = list(chunks) + [s for s in _outside(words, chunks) if _isolated(document, *s)]
    return _apart(slots)


def _shuffle_slots(document: str, slots: Sequence[Span], rng: np.random.Generator) -> str:
    return _replace_spans(document, slots, _shuffled([document[a:b] for a, b in slots], rng))


def shuffle_words_keep_noun_chunks(query: str, document: str, context: ManipulationContext,
                                   rng: np.random.Generator) -> str | None:
    """Shuffle words and whole noun chunks across the document (chunks stay intact)."""
    chunks = noun_chunk_spans(document, context.parse(document))
    slots = chunk_and_word_slots(document, chunks, _words_in(document))
    if len(slots) < 2:
        return None
    return _shuffle_slots(document, slots, rng)


def shuffle_words_in_sentences_keep_noun_chunks(query: str, document: str,
                                                context: ManipulationContext,
                                                rng: np.random.Generator) -> str | None:
    """Shuffle words and whole noun chunks within each sentence; sentence order and each
    sentence's final punctuation stay (ABNIRML's "keep sentences and NPs")."""
    chunks = noun_chunk_spans(document, context.parse(document))
    spans: list[Span] = []
    contents: list[str] = []
    for start, end in sentence_spans(document):
        inside = [c for c in chunks if c[0] >= start and c[1] <= end]
        words = sentence_word_slots(document, start, end)
        if inside and words:
            # the sentence closer stays put: cut chunks at the last word slot's end
            limit = words[-1][1]
            inside = [c for c in inside if c[1] <= limit]
        slots = chunk_and_word_slots(document, inside, words)
        spans.extend(slots)
        contents.extend(_shuffled([document[a:b] for a, b in slots], rng))
    if len(spans) < 2:
        return None
    return _replace_spans(document, spans, contents)


def reverse_noun_chunks(query: str, document: str, context: ManipulationContext,
                        rng: np.random.Generator) -> str | None:
    """Reverse the order of the noun chunks across their slots; everything else stays."""
    chunks = noun_chunk_spans(document, context.parse(document))
    if len(chunks) < 2:
        return None
    return _permute(document, chunks, list(range(len(chunks) - 1, -1, -1)))


def number_chunk_spans(document: str, parsed: object) -> list[Span]:
    """Movable noun chunks that hold a number (a token spaCy marks ``like_num``)."""
    movable = set(noun_chunk_spans(document, parsed))
    found = [(c.start_char, c.end_char) for c in parsed.noun_chunks  # type: ignore[attr-defined]
             if any(t.like_num for t in c)]
    return [s for s in found if s in movable]


def swap_number_chunks(query: str, document: str, context: ManipulationContext,
                       rng: np.random.Generator) -> str | None:
    """Swap two noun chunks that hold numbers ("3 cups" ↔ "200 degrees").

    The pair is drawn at random among chunks with different texts; fewer than two such
    chunks: not applicable. (The original code's ``SwapNumNPSlots2`` swaps random tokens;
    we keep to the probe's stated intent, a change of which quantity goes where.)
    """
    chunks = number_chunk_spans(document, context.parse(document))
    texts = [document[a:b] for a, b in chunks]
    if len(set(texts)) < 2:
        return None
    for _ in range(10):
        i, j = sorted(rng.choice(len(chunks), size=2, replace=False).tolist())
        if texts[i] != texts[j]:
            break
    else:
        i, j = next((i, j) for i in range(len(texts)) for j in range(i + 1, len(texts))
                    if texts[i] != texts[j])
    return _replace_spans(document, [chunks[i], chunks[j]], [texts[j], texts[i]])
