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
probe); a text gets only the pipeline components its use needs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

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
    """

    def __init__(self, stopwords: frozenset[str], batch_size: int = PARSE_BATCH):
        self.stopwords = stopwords
        self.batch_size = batch_size
        self._features: dict[str, Features] = {}
        self.parsed = 0

    def ensure(self, texts: Iterable[str], chunks: bool) -> None:
        """Parse every text that lacks the requested kind of features."""
        attr = "chunks" if chunks else "lemmas"
        todo = list(dict.fromkeys(
            t for t in texts
            if (f := self._features.get(t)) is None or getattr(f, attr) is None))
        if not todo:
            return
        from abnirml.text.nlp import load_pipeline

        nlp = load_pipeline()
        unused = ("ner", "lemmatizer") if chunks else ("ner", "parser")
        disable = [p for p in unused if p in nlp.pipe_names]
        for text, doc in zip(todo, nlp.pipe(todo, batch_size=self.batch_size, disable=disable),
                             strict=True):
            old = self._features.get(text, Features())
            if chunks:
                self._features[text] = Features(old.lemmas, old.content, self._chunks(doc))
            else:
                lemmas, content = self._lemmas(doc)
                self._features[text] = Features(lemmas, content, old.chunks)
        self.parsed += len(todo)

    def get(self, text: str) -> Features:
        return self._features[text]

    def _is_content(self, token, lemma: bool) -> bool:
        if token.is_punct or token.is_space or token.like_num or token.lower_ in self.stopwords:
            return False
        return not lemma or token.lemma_.lower() not in self.stopwords

    def _lemmas(self, doc) -> tuple[frozenset[str], frozenset[str]]:
        lemmas = frozenset(t.lemma_.lower() for t in doc if not t.is_space)
        content = frozenset(t.lemma_.lower() for t in doc if self._is_content(t, True))
        return lemmas, content

    def _chunks(self, doc) -> tuple[tuple[str, frozenset[str]], ...]:
        seen: dict[str, frozenset[str]] = {}
        for chunk in doc.noun_chunks:
            words = frozenset(t.lower_ for t in chunk if self._is_content(t, False))
            if words:
                seen.setdefault(" ".join(chunk.text.lower().split()), words)
        return tuple(seen.items())


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
