"""Queries for transfer pairs, built as the ABNIRML papers describe.

A transfer pair has no query of its own unless the source supplies one (a headline, a
question). Otherwise the query is a noun chunk that occurs in *both* texts — chosen at
random, seeded per pair, so the query is relevant to both documents and still looks like a
search query. The pair is kept only if a non-stopword query word occurs in both texts;
discards are counted by reason:

* ``no-shared-chunk`` — the two texts share no noun chunk with a content word;
* ``no-query-overlap`` — no content lemma of a source-given query occurs in both texts
  (spaCy lemmas, lowercased). A shared noun chunk satisfies the condition by construction:
  it occurs verbatim in both texts and has a content word.

Noun chunks are compared lowercased with white space collapsed; a chunk counts only if it
has a content token (not a stopword, punctuation or number), so pronoun chunks such as "it"
never become queries. The query is that lowercased chunk text. Stopwords are the run's
stopword list (``--stopwords``), so the same words are "content" here and in the rankers.

spaCy is loaded lazily and each distinct text is parsed once per run (the
:class:`FeatureStore` lives in the probe context's memo and is shared by every transfer
probe); a text gets only the pipeline components its use needs. With the run's parse store
(:mod:`abnirml.probes.parse_cache`) a text's features are kept across runs, so a rerun
neither parses nor imports spaCy.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:    # spaCy is an optional extra, imported when a text is parsed
    from spacy.tokens import Doc, Token

NO_SHARED_CHUNK = "no-shared-chunk"
NO_QUERY_OVERLAP = "no-query-overlap"
PARSE_BATCH = 128


@dataclass(frozen=True, slots=True)
class Features:
    """What query construction needs from one parsed text.

    ``lemmas``: every token's lowercased lemma and ``content``: the lemmas of content tokens
    (None when parsed for noun chunks only); ``chunks``: (normalised chunk text, its content
    words), or None when parsed without the dependency parser.
    """

    lemmas: frozenset[str] | None = None
    content: frozenset[str] | None = None
    chunks: tuple[tuple[str, frozenset[str]], ...] | None = None


class FeatureStore:
    """Parses texts on demand (batched) and remembers their :class:`Features`.

    Two kinds of parse, because they cost differently: *chunks* (tagger + dependency parser,
    no lemmatizer) for pairs whose query is a shared noun chunk, and *lemmas* (tagger +
    lemmatizer, no parser) for pairs with a source-given query and for the queries.
    ``cache`` (a :class:`~abnirml.probes.parse_cache.ParseCache`) keeps the features across
    runs, keyed by the kind of parse and the stopword list; ``parsed`` counts the texts this
    store had to build features for (parsed, or read from ``cache``).
    """

    def __init__(self, stopwords: frozenset[str], batch_size: int = PARSE_BATCH,
                 cache: Any = None):
        self.stopwords = stopwords
        self.batch_size = batch_size
        self.cache = cache
        self._features: dict[str, Features] = {}
        self.parsed = 0
        from abnirml.probes.parse_cache import stopwords_key

        self._stopwords_key = stopwords_key(stopwords)

    def ensure(self, texts: Iterable[str], chunks: bool) -> None:
        """Parse every text that lacks the requested kind of features."""
        from abnirml.probes.parse_cache import store_or_memory

        attr = "chunks" if chunks else "lemmas"
        todo = list(dict.fromkeys(
            t for t in texts
            if (f := self._features.get(t)) is None or getattr(f, attr) is None))
        if not todo:
            return
        kind = (f"dtp:{attr};disabled={','.join(_unused(chunks))};"
                f"stopwords={self._stopwords_key}")
        store = store_or_memory(self.cache)
        values = store.get_or_build(kind, todo, lambda missing: self._parse(missing, chunks),
                                    _encode_chunks if chunks else _encode_lemmas,
                                    _decode_chunks if chunks else _decode_lemmas)
        for text in todo:
            old = self._features.get(text, Features())
            if chunks:
                self._features[text] = Features(old.lemmas, old.content, values[text])
            else:
                lemmas, content = values[text]
                self._features[text] = Features(lemmas, content, old.chunks)
        self.parsed += len(todo)

    def _parse(self, texts: list[str], chunks: bool) -> list[Any]:
        """Chunk tuples or (lemmas, content) pairs of ``texts``, in order, from spaCy."""
        from abnirml.text.nlp import load_pipeline

        nlp = load_pipeline()
        disable = [p for p in _unused(chunks) if p in nlp.pipe_names]
        docs = nlp.pipe(texts, batch_size=self.batch_size, disable=disable)
        return [self._chunks(doc) if chunks else self._lemmas(doc) for doc in docs]

    def get(self, text: str) -> Features:
        return self._features[text]

    def _is_content(self, token: Token, lemma: bool) -> bool:
        if token.is_punct or token.is_space or token.like_num or token.lower_ in self.stopwords:
            return False
        return not lemma or token.lemma_.lower() not in self.stopwords

    def _lemmas(self, doc: Doc) -> tuple[frozenset[str], frozenset[str]]:
        lemmas = frozenset(t.lemma_.lower() for t in doc if not t.is_space)
        content = frozenset(t.lemma_.lower() for t in doc if self._is_content(t, True))
        return lemmas, content

    def _chunks(self, doc: Doc) -> tuple[tuple[str, frozenset[str]], ...]:
        seen: dict[str, frozenset[str]] = {}
        for chunk in doc.noun_chunks:
            words = frozenset(t.lower_ for t in chunk if self._is_content(t, False))
            if words:
                seen.setdefault(" ".join(chunk.text.lower().split()), words)
        return tuple(seen.items())


def _unused(chunks: bool) -> tuple[str, ...]:
    """spaCy components a kind of parse leaves out."""
    return ("ner", "lemmatizer") if chunks else ("ner", "parser")


def _encode_chunks(chunks: tuple[tuple[str, frozenset[str]], ...]) -> list[Any]:
    return [[text, sorted(words)] for text, words in chunks]


def _decode_chunks(value: Any) -> tuple[tuple[str, frozenset[str]], ...]:
    try:
        return tuple((str(text), frozenset(str(w) for w in words)) for text, words in value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"not stored noun chunks: {exc}") from None


def _encode_lemmas(value: tuple[frozenset[str], frozenset[str]]) -> list[Any]:
    lemmas, content = value
    return [sorted(lemmas), sorted(content)]


def _decode_lemmas(value: Any) -> tuple[frozenset[str], frozenset[str]]:
    try:
        lemmas, content = value
        return frozenset(map(str, lemmas)), frozenset(map(str, content))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"not stored lemmas: {exc}") from None


def seeded_index(seed: int, key: str, n: int) -> int:
    """A deterministic index in [0, n) from (seed, key): independent of iteration order."""
    digest = hashlib.blake2b(f"{seed}\x00{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") % n


def shared_chunks(first: Features, second: Features) -> list[tuple[str, frozenset[str]]]:
    """Noun chunks (with content) present in both texts, sorted for a stable choice."""
    if first.chunks is None or second.chunks is None:
        raise ValueError("texts were parsed without noun chunks")
    other = {text for text, _ in second.chunks}
    return sorted((text, words) for text, words in first.chunks if text in other)


@dataclass(frozen=True, slots=True)
class QueryChoice:
    """The query for a pair, or the reason (``skip``) the pair is discarded."""

    query: str | None
    source: str
    skip: str | None = None


def chunk_query(store: FeatureStore, doc1: str, doc2: str, seed: int, key: str) -> QueryChoice:
    """A seeded random noun chunk shared by both texts (texts must be in ``store``).

    The chunk occurs verbatim in both texts and has a content word, so the overlap
    condition holds by construction; it needs no lemma check.
    """
    candidates = shared_chunks(store.get(doc1), store.get(doc2))
    if not candidates:
        return QueryChoice(None, "noun-chunk", NO_SHARED_CHUNK)
    text, _ = candidates[seeded_index(seed, key, len(candidates))]
    return QueryChoice(text, "noun-chunk")


def given_query(store: FeatureStore, query: str, doc1: str, doc2: str,
                source: str = "given") -> QueryChoice:
    """Keep a source's own query only if a content lemma of it occurs in both texts."""
    words = store.get(query).content or frozenset()
    first, second = store.get(doc1).lemmas, store.get(doc2).lemmas
    if first is None or second is None:
        raise ValueError("texts were parsed without lemmas")
    if not words & first & second:
        return QueryChoice(query, source, NO_QUERY_OVERLAP)
    return QueryChoice(query, source)


def texts_needing_parse(pairs: Sequence[tuple[str | None, str, str]]
                        ) -> tuple[list[str], list[str]]:
    """(texts needing noun chunks, texts needing lemmas only) for (query, d1, d2) triples."""
    full: list[str] = []
    light: list[str] = []
    for query, doc1, doc2 in pairs:
        if query is None:
            full += (doc1, doc2)
        else:
            light += (query, doc1, doc2)
    return full, light
