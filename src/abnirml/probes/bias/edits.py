"""The text edits of the ranking-bias probes, as small pure functions.

Each edit keeps everything it does not mean to change: sentences are moved whole (every
non-space character of a passage lies inside one of its sentence spans, so a reordering
joined by single spaces holds exactly the same terms), a repeated term is inserted next
to the occurrence it repeats, a replaced word keeps its casing, and appended text is
separated by one space. A bag-of-words ranker therefore sees only what an edit is meant
to change: nothing at all for a sentence move, one more occurrence of one term for a
repetition.

``analyze`` is the run's analysis (:meth:`abnirml.text.analyzer.Analyzer.analyze`: terms,
stopwords removed, stemmed), so "the query's terms" mean what they mean to the lexical
rankers of the same run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from abnirml.text.casing import match_case
from abnirml.text.tokenize import sentence_spans, term_spans

Analyze = Callable[[str], list[str]]


def append_text(text: str, extra: str) -> str:
    """``text`` followed by ``extra``, one space between them (none after white space)."""
    if not text or text[-1].isspace():
        return text + extra
    return f"{text} {extra}"


def content_words(query: str, analyze: Analyze) -> list[str]:
    """The query's words that the analysis keeps (not stopwords), as the query writes them,
    in query order: the literal terms a stuffed or biased foil repeats."""
    return [query[a:b] for a, b in term_spans(query) if analyze(query[a:b])]


def best_sentence(text: str, spans: Sequence[tuple[int, int]], query_terms: frozenset[str],
                  analyze: Analyze) -> int | None:
    """Index of the sentence that best matches the query: the most distinct query terms,
    then the most query-term occurrences, then the earliest; None when no sentence holds a
    query term."""
    best, best_key = None, (0, 0)
    for i, (start, end) in enumerate(spans):
        terms = analyze(text[start:end])
        key = (len(query_terms.intersection(terms)), sum(t in query_terms for t in terms))
        if key > best_key:
            best, best_key = i, key
    return best


def evidence_placed(text: str, spans: Sequence[tuple[int, int]], index: int,
                    first: bool) -> str:
    """The sentences of ``text`` with sentence ``index`` moved to the start (``first``) or to
    the end; the others keep their order. Both placements join the same sentences with
    single spaces, so they have the same characters and the same length."""
    pieces = [text[a:b] for a, b in spans]
    moved = pieces.pop(index)
    return " ".join([moved, *pieces] if first else [*pieces, moved])


def early_and_late(text: str, query_terms: frozenset[str], analyze: Analyze
                   ) -> tuple[str, str] | str:
    """(best-matching sentence first, the same sentence last), or why it does not apply:
    ``one-sentence`` or ``no-query-term``."""
    spans = sentence_spans(text)
    if len(spans) < 2:
        return "one-sentence"
    index = best_sentence(text, spans, query_terms, analyze)
    if index is None:
        return "no-query-term"
    return evidence_placed(text, spans, index, True), evidence_placed(text, spans, index, False)


def rarest_term(query_terms: Sequence[str], text_terms: Sequence[str],
                df: Mapping[str, int]) -> str | None:
    """The query term the passage holds that the fewest collection documents hold (highest
    idf); ties by the term itself. None when the passage holds no query term."""
    held = set(query_terms).intersection(text_terms)
    if not held:
        return None
    return min(held, key=lambda t: (df.get(t, 0), t))


def repeat_in_place(text: str, term: str, analyze: Analyze) -> str | None:
    """``text`` with the first word that analyses to ``term`` written twice where it stands
    ("vitamin" → "vitamin vitamin"); None when no word does."""
    for start, end in term_spans(text):
        word = text[start:end]
        if analyze(word) == [term]:
            return f"{text[:end]} {word}{text[end:]}"
    return None


def replace_words(text: str, replacements: Mapping[str, str],
                  allowed: Callable[[int, str], bool] | None = None) -> tuple[str, int]:
    """``text`` with every word whose lowercase form is a key of ``replacements`` replaced by
    its value, in the word's casing; returns the text and how many words were replaced.
    Only the exact form is replaced ("cell" but not "cells"), so the text stays grammatical;
    ``allowed(start, word)`` can veto an occurrence (one used as another part of speech)."""
    pieces: list[str] = []
    pos = replaced = 0
    for start, end in term_spans(text):
        word = text[start:end]
        new = replacements.get(word.lower())
        if new is None or (allowed is not None and not allowed(start, word.lower())):
            continue
        pieces += [text[pos:start], match_case(word, new)]
        pos = end
        replaced += 1
    pieces.append(text[pos:])
    return "".join(pieces), replaced


def stuffed(text: str, words: Sequence[str], k: int) -> str:
    """``text`` with the query's words appended ``k`` times (keyword stuffing)."""
    return append_text(text, " ".join([" ".join(words)] * k))


def biased_foil(text: str, words: Sequence[str], repeats: int, query_terms: frozenset[str],
                analyze: Analyze) -> str:
    """ColDeR's foil built from a passage without the answer: its best-matching sentence
    (the first when none holds a query term) cut out of it, after the query's literal words
    in quotes, ``repeats`` times — short, query terms early, repeated and literal."""
    spans = sentence_spans(text) or [(0, len(text))]
    index = best_sentence(text, spans, query_terms, analyze)
    start, end = spans[0 if index is None else index]
    prefix = " ".join(['"' + " ".join(words) + '"'] * repeats)
    return f"{prefix} {text[start:end]}"
