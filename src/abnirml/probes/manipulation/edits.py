"""The textual manipulations of the ABNIRML papers, as small pure functions.

Each manipulation has the signature ``(query, document, context, rng) -> str | None``:
``context`` is a :class:`ManipulationContext` (stopwords, mask token, spaCy parses,
expansions, donor documents — whatever some manipulation needs), ``rng`` a seeded
``numpy.random.Generator``. ``None`` means the manipulation does not apply to this document
(e.g. sentence shuffling of a one-sentence passage); returning the document unchanged means
it applied but changed nothing. The probe layer (:mod:`.manipulation`) counts both.

Editing is done in place on character spans, so the white space and casing of every part
of the text a manipulation does not touch survive byte for byte:

* *terms* are maximal runs of letters and digits (:func:`abnirml.text.tokenize.term_spans`);
* *words* are maximal runs of non-white-space characters (a word keeps its punctuation);
* *sentences* come from the rule-based splitter (:func:`abnirml.text.tokenize.sentence_spans`).

Shuffles and reversals permute the contents of word, sentence, preposition or noun-chunk
*slots*; the white space between slots never moves. Only slots whose neighbours are not
letters or digits take part, and slots that touch each other stay put, so a moved piece can
never glue onto a neighbouring term: the multiset of terms is exactly preserved, which is
why bag-of-words rankers score every reordering exactly like the original.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from abnirml.text.casing import match_case
from abnirml.text.tokenize import PUNCTUATION, sentence_spans, term_spans, terms

Span = tuple[int, int]
Manipulation = Callable[[str, str, "ManipulationContext", np.random.Generator], "str | None"]

#: Default mask token (BERT's); rankers may suggest their own (``RankerHints.mask_token``).
DEFAULT_MASK = "[MASK]"
#: Default probability that a word with a known misspelling is misspelt (see :func:`typos`).
DEFAULT_TYPO_RATE = 0.1
#: Attempts at drawing a permutation that actually changes the text before giving up.
SHUFFLE_ATTEMPTS = 10

_WORD = re.compile(r"\S+")
_SPACE_SPLIT = re.compile(r"(\s+)")
_ALNUM = re.compile(r"[^\W_]+")
_SENTENCE_CLOSER = re.compile(r"""[.!?]+["')\]]*$""")


@dataclass(frozen=True)
class ManipulationContext:
    """What manipulations may read besides the query and the document.

    ``parses`` maps a document text to its parse: a
    :class:`~abnirml.text.parsed.ParsedText` (what the manipulations read from spaCy; the
    probes parse every judged document once, in batches, or read it from the parse store)
    or a spaCy ``Doc`` (same attribute names); a text missing from it is parsed on demand.
    ``expansions`` maps a document text to the DocT5Query text to append. ``donors`` maps a
    query text to the texts of that query's non-relevant documents; ``fallback_donors`` are
    non-relevant documents of the whole collection, used when a query has none.
    """

    stopwords: frozenset[str] = frozenset()
    stem: bool = True
    mask_token: str = DEFAULT_MASK
    typo_map: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    typo_rate: float = DEFAULT_TYPO_RATE
    parses: Mapping[str, Any] = field(default_factory=dict)
    expansions: Mapping[str, str] = field(default_factory=dict)
    donors: Mapping[str, Sequence[str]] = field(default_factory=dict)
    fallback_donors: Sequence[str] = ()

    def parse(self, text: str) -> Any:
        parsed = self.parses.get(text)
        if parsed is None:
            from abnirml.text.parsed import ParsedText

            parsed = ParsedText.from_doc(next(iter(parse_texts([text]))))
        return parsed

    def term_key(self, term: str) -> str:
        """How a term is compared with query terms: lowercased, Porter-stemmed if ``stem``."""
        if not self.stem:
            return term.lower()
        from abnirml.text.stem import porter

        return porter().stem(term.lower())


#: spaCy components the manipulations never read (named-entity recognition is the slowest).
SPACY_UNUSED = ("ner",)


def parse_texts(texts: Sequence[str] | Any, batch_size: int | None = None) -> Any:
    """spaCy ``Doc`` objects for ``texts`` in order, through ``nlp.pipe`` (shared pipeline)."""
    from abnirml.text.nlp import BATCH_SIZE, load_pipeline

    nlp = load_pipeline()
    unused = [name for name in SPACY_UNUSED if name in nlp.pipe_names]
    return nlp.pipe(texts, batch_size=batch_size or BATCH_SIZE, disable=unused)


# --------------------------------------------------------------------------- span helpers


def _is_alnum(char: str) -> bool:
    return bool(char) and char.isalnum()


def _isolated(text: str, start: int, end: int) -> bool:
    """True when the span's neighbours are not letters or digits (nothing can glue on)."""
    before = text[start - 1] if start > 0 else ""
    after = text[end] if end < len(text) else ""
    return not _is_alnum(before) and not _is_alnum(after)


def _apart(spans: Sequence[Span]) -> list[Span]:
    """Drop each span that touches (or overlaps) the one kept before it.

    Two touching slots would make each other's neighbour: after a permutation the text
    across their border is new, so a term could grow across it. A dropped span stays put
    and becomes an ordinary, already-checked neighbour of the span before it.
    """
    kept: list[Span] = []
    for start, end in sorted(spans):
        if kept and start <= kept[-1][1]:
            continue
        kept.append((start, end))
    return kept


def _replace_spans(text: str, spans: Sequence[Span], contents: Sequence[str]) -> str:
    """``text`` with each (sorted, disjoint) span replaced by the matching content."""
    out: list[str] = []
    pos = 0
    for (start, end), content in zip(spans, contents, strict=True):
        out.append(text[pos:start])
        out.append(content)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _permute(text: str, spans: Sequence[Span], order: Sequence[int]) -> str:
    """Slot ``i`` receives the content of slot ``order[i]``."""
    pieces = [text[a:b] for a, b in spans]
    return _replace_spans(text, spans, [pieces[j] for j in order])


def _shuffled(pieces: Sequence[str], rng: np.random.Generator) -> list[str]:
    """A shuffled copy of ``pieces``, redrawn a few times when a draw changes nothing."""
    if len(set(pieces)) < 2:
        return list(pieces)
    for _ in range(SHUFFLE_ATTEMPTS):
        order = rng.permutation(len(pieces))
        shuffled = [pieces[j] for j in order]
        if shuffled != list(pieces):
            return shuffled
    return list(pieces)


def _shuffle(text: str, spans: Sequence[Span], rng: np.random.Generator) -> str:
    """``text`` with the contents of ``spans`` shuffled among them."""
    return _replace_spans(text, spans, _shuffled([text[a:b] for a, b in spans], rng))


def _shuffle_at_least_two(text: str, spans: Sequence[Span], rng: np.random.Generator
                          ) -> str | None:
    """Shuffle ``spans`` when there are two or more of them; otherwise not applicable."""
    if len(spans) < 2:
        return None
    return _shuffle(text, spans, rng)


def _words_in(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    end = len(text) if end is None else end
    return [(start + m.start(), start + m.end()) for m in _WORD.finditer(text[start:end])]


def _edit_words(text: str, edit: Callable[[str], str]) -> str:
    """Apply ``edit`` to every word; a word edited away is removed with one adjacent space run.

    Between two surviving words the white space that followed the first one is kept; words
    removed at the end take the white space before them along, so no doubled or dangling
    separators appear and the remaining white space is the original's.
    """
    parts = _SPACE_SPLIT.split(text)
    # parts alternates word, space, word, …; the first and last entries may be empty words.
    words = parts[0::2]
    spaces = parts[1::2]
    lead = ""
    if words and words[0] == "" and spaces:
        lead = spaces[0]
        words = words[1:]
        spaces = spaces[1:]
    trail = ""
    if words and words[-1] == "" and spaces:
        trail = spaces[-1]
        words = words[:-1]
        spaces = spaces[:-1]
    kept = [(i, edited) for i, word in enumerate(words) if word and (edited := edit(word))]
    out = [lead]
    for n, (i, word) in enumerate(kept):
        out.append(word)
        if n + 1 < len(kept):
            out.append(spaces[i])
    out.append(trail)
    return "".join(out)


def _append(document: str, extra: str) -> str:
    if not document or document[-1].isspace():
        return document + extra
    return f"{document} {extra}"


def _prepend(extra: str, document: str) -> str:
    if not document or document[0].isspace():
        return extra + document
    return f"{extra} {document}"


# --------------------------------------------------------------------------- removal


def remove_stops(query: str, document: str, context: ManipulationContext,
                 rng: np.random.Generator) -> str | None:
    """Delete every term on the stopword list (``context.stopwords``)."""
    stops = context.stopwords

    def edit(word: str) -> str:
        spans = [s for s in term_spans(word) if word[s[0]:s[1]].lower() in stops]
        return _replace_spans(word, spans, [""] * len(spans)) if spans else word

    return _edit_words(document, edit)


def _strip_punctuation(word: str) -> str:
    """Delete ASCII punctuation; a run between two letters/digits becomes one space.

    Keeping ``well-known`` or ``U.S.`` as two terms (``well known``, ``U S``) means the
    manipulation removes punctuation and nothing else: the term sequence is unchanged.
    """
    out: list[str] = []
    i = 0
    n = len(word)
    while i < n:
        if word[i] not in PUNCTUATION:
            out.append(word[i])
            i += 1
            continue
        j = i
        while j < n and word[j] in PUNCTUATION:
            j += 1
        if i > 0 and j < n and word[i - 1].isalnum() and word[j].isalnum():
            out.append(" ")
        i = j
    return "".join(out)


def remove_punct(query: str, document: str, context: ManipulationContext,
                 rng: np.random.Generator) -> str | None:
    """Delete the ASCII punctuation symbols the paper lists (``tokenize.PUNCTUATION``)."""
    return _edit_words(document, _strip_punctuation)


def remove_stops_punct(query: str, document: str, context: ManipulationContext,
                       rng: np.random.Generator) -> str | None:
    """Stopword removal followed by punctuation removal."""
    without_stops = remove_stops(query, document, context, rng)
    return remove_punct(query, without_stops or "", context, rng)


# --------------------------------------------------------------------------- spaCy-based


def lemmatize(query: str, document: str, context: ManipulationContext,
              rng: np.random.Generator) -> str | None:
    """Replace each non-stopword term by its spaCy lemma (casing pattern kept).

    Only tokens that are whole terms with a single-term lemma are touched, so clitics such
    as ``n't`` never fuse with their host word.
    """
    parsed = context.parse(document)
    spans: list[Span] = []
    contents: list[str] = []
    for token in parsed:
        word = token.text
        lemma = token.lemma_
        if (not _ALNUM.fullmatch(word) or not _ALNUM.fullmatch(lemma or "")
                or word.lower() in context.stopwords or lemma.lower() == word.lower()):
            continue
        start = token.idx
        end = start + len(word)
        if not _isolated(document, start, end):
            continue
        spans.append((start, end))
        contents.append(match_case(word, lemma))
    return _replace_spans(document, spans, contents) if spans else document


def preposition_spans(document: str, parsed: Any) -> list[Span]:
    """Character spans of the prepositions (POS ``ADP``) that can move safely."""
    spans = []
    for token in parsed:
        if token.pos_ != "ADP" or not _ALNUM.fullmatch(token.text):
            continue
        start, end = token.idx, token.idx + len(token.text)
        if _isolated(document, start, end):
            spans.append((start, end))
    return _apart(spans)


def shuffle_prepositions(query: str, document: str, context: ManipulationContext,
                         rng: np.random.Generator) -> str | None:
    """Shuffle the document's own prepositions among their positions; nothing else moves."""
    spans = preposition_spans(document, context.parse(document))
    return _shuffle_at_least_two(document, spans, rng)


def noun_chunk_spans(document: str, parsed: Any) -> list[Span]:
    """Character spans of spaCy's noun chunks that can move safely."""
    return _apart([(c.start_char, c.end_char) for c in parsed.noun_chunks
                   if c.end_char > c.start_char and _isolated(document, c.start_char, c.end_char)])


def swap_noun_chunks(query: str, document: str, context: ManipulationContext,
                     rng: np.random.Generator) -> str | None:
    """Shuffle the noun chunks among the noun-chunk positions (ABNIRML's NP-slot shuffle)."""
    return _shuffle_at_least_two(document, noun_chunk_spans(document, context.parse(document)), rng)


# --------------------------------------------------------------------------- word order


def shuffle_words(query: str, document: str, context: ManipulationContext,
                  rng: np.random.Generator) -> str | None:
    """Shuffle the words of the whole document (white space stays where it was)."""
    return _shuffle(document, _words_in(document), rng)


def sentence_word_slots(document: str, start: int, end: int) -> list[Span]:
    """Word slots of one sentence; the sentence's final punctuation stays at the end."""
    slots = _words_in(document, start, end)
    if not slots:
        return slots
    last_start, last_end = slots[-1]
    closer = _SENTENCE_CLOSER.search(document[last_start:last_end])
    if closer is not None:
        cut = last_start + closer.start()
        slots[-1] = (last_start, cut)
        if cut == last_start:
            slots.pop()
    return slots


def shuffle_words_in_sentences(query: str, document: str, context: ManipulationContext,
                               rng: np.random.Generator) -> str | None:
    """Shuffle words within each sentence; sentence order and final punctuation stay."""
    spans: list[Span] = []
    contents: list[str] = []
    for start, end in sentence_spans(document):
        slots = sentence_word_slots(document, start, end)
        spans.extend(slots)
        contents.extend(_shuffled([document[a:b] for a, b in slots], rng))
    return _replace_spans(document, spans, contents)


def reverse_words(query: str, document: str, context: ManipulationContext,
                  rng: np.random.Generator) -> str | None:
    """Reverse the order of the document's words."""
    spans = _words_in(document)
    return _permute(document, spans, list(range(len(spans) - 1, -1, -1)))


def shuffle_sentences(query: str, document: str, context: ManipulationContext,
                      rng: np.random.Generator) -> str | None:
    """Shuffle the sentence order (single-sentence documents do not apply)."""
    return _shuffle_at_least_two(document, sentence_spans(document), rng)


def reverse_sentences(query: str, document: str, context: ManipulationContext,
                      rng: np.random.Generator) -> str | None:
    """Reverse the sentence order (single-sentence documents do not apply)."""
    spans = sentence_spans(document)
    if len(spans) < 2:
        return None
    return _permute(document, spans, list(range(len(spans) - 1, -1, -1)))


# --------------------------------------------------------------------------- added text


def replace_with_query(query: str, document: str, context: ManipulationContext,
                       rng: np.random.Generator) -> str | None:
    """The document becomes the query text itself."""
    return query


def prepend_query(query: str, document: str, context: ManipulationContext,
                  rng: np.random.Generator) -> str | None:
    return _prepend(query, document)


def append_query(query: str, document: str, context: ManipulationContext,
                 rng: np.random.Generator) -> str | None:
    return _append(document, query)


def add_doct5query(query: str, document: str, context: ManipulationContext,
                   rng: np.random.Generator) -> str | None:
    """Append the document's DocT5Query expansion; not applicable without one."""
    expansion = context.expansions.get(document)
    if expansion is None or not expansion.strip():
        return None
    return _append(document, expansion.strip())


def donor_sentence(query: str, document: str, context: ManipulationContext,
                   rng: np.random.Generator) -> str | None:
    """A sentence of a non-relevant document (same query when possible), drawn with ``rng``.

    Shared by the appending and the prepending probe so both draw donors the same way.
    """
    donors = [d for d in context.donors.get(query, ()) if d != document]
    if not donors:
        donors = [d for d in context.fallback_donors if d != document]
    if not donors:
        return None
    donor = donors[int(rng.integers(len(donors)))]
    spans = sentence_spans(donor)
    if not spans:
        return None
    start, end = spans[int(rng.integers(len(spans)))]
    return donor[start:end]


def add_nonrel_sentence(query: str, document: str, context: ManipulationContext,
                        rng: np.random.Generator) -> str | None:
    """Append a sentence drawn from a non-relevant document (same query when possible)."""
    sentence = donor_sentence(query, document, context, rng)
    return None if sentence is None else _append(document, sentence)


def duplicate(k: int) -> Manipulation:
    """The document repeated ``k`` times, joined by a space (Rennings et al.'s LNC2 test)."""
    if k < 2:
        raise ValueError("duplication needs k ≥ 2")

    def duplicate_k(query: str, document: str, context: ManipulationContext,
                    rng: np.random.Generator) -> str | None:
        if not document.strip():
            return None
        return " ".join([document] * k)

    duplicate_k.__name__ = f"duplicate_k{k}"
    duplicate_k.__doc__ = f"The document repeated {k} times, joined by a space."
    return duplicate_k


# --------------------------------------------------------------------------- typos


def typos(query: str, document: str, context: ManipulationContext,
          rng: np.random.Generator) -> str | None:
    """Misspell words with common misspellings (each eligible word with ``typo_rate``).

    A word is eligible when the misspelling list knows a misspelling of it; the misspelling
    is drawn uniformly from those listed and takes the word's casing pattern.
    """
    return _misspell(document, context, rng, frozenset())


def typos_no_stopwords(query: str, document: str, context: ManipulationContext,
                       rng: np.random.Generator) -> str | None:
    """As :func:`typos`, but stopwords (the run's list) are never misspelt: the original
    ABNIRML code's ``Typo(no_stops=True)``, which asks whether a ranker's sensitivity to
    typos comes from content words or from misspelt function words."""
    return _misspell(document, context, rng, context.stopwords)


def _misspell(document: str, context: ManipulationContext, rng: np.random.Generator,
              spared: frozenset[str]) -> str:
    table = context.typo_map
    rate = context.typo_rate
    spans: list[Span] = []
    contents: list[str] = []
    for start, end in term_spans(document):
        word = document[start:end]
        if word.lower() in spared:
            continue
        options = table.get(word.lower())
        if not options or rng.random() >= rate:
            continue
        choice = options[int(rng.integers(len(options)))] if len(options) > 1 else options[0]
        spans.append((start, end))
        contents.append(match_case(word, choice))
    return _replace_spans(document, spans, contents) if spans else document


# --------------------------------------------------------------------------- masking


def query_keys(query: str, context: ManipulationContext) -> set[str]:
    return {context.term_key(t) for t in terms(query)}


def _mask(document: str, context: ManipulationContext, keep_query_terms: bool,
          keys: set[str]) -> str:
    spans: list[Span] = []
    for start, end in term_spans(document):
        is_query_term = context.term_key(document[start:end]) in keys
        if is_query_term != keep_query_terms:
            spans.append((start, end))
    return _replace_spans(document, spans, [context.mask_token] * len(spans))


def only_query(query: str, document: str, context: ManipulationContext,
               rng: np.random.Generator) -> str | None:
    """Rau & Kamps' Only-Q: every term that is not a query term becomes the mask token.

    A document term is a query term when its lowercased (and, with ``stem``, Porter-stemmed)
    form equals that of a query term — stopwords in the query included.
    """
    return _mask(document, context, True, query_keys(query, context))


def drop_query(query: str, document: str, context: ManipulationContext,
               rng: np.random.Generator) -> str | None:
    """Rau & Kamps' Drop-Q: every query term in the document becomes the mask token."""
    return _mask(document, context, False, query_keys(query, context))
