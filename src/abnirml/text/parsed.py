"""What the manipulation probes read from a spaCy parse, as plain values.

A spaCy ``Doc`` cannot be stored cheaply or safely across runs, yet the manipulations read
only a handful of its attributes: each token's character offset, text, lemma, coarse POS tag
and ``like_num``, and the noun chunks' character spans and tokens. :class:`ParsedText` keeps
exactly those, under spaCy's own attribute names, so the manipulations work unchanged on a
``Doc`` or on a :class:`ParsedText`, and a parse stored by one run (as JSON, never pickled)
is read back by the next without importing spaCy. ``to_json``/``from_json`` round-trip
exactly: the same tokens and chunks, in the same order.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ParsedToken:
    """One token: ``idx`` is its character offset in the parsed text."""

    idx: int
    text: str
    lemma_: str
    pos_: str
    like_num: bool


@dataclass(frozen=True, slots=True)
class ParsedChunk:
    """One noun chunk: its character span and its tokens."""

    start_char: int
    end_char: int
    tokens: tuple[ParsedToken, ...]

    def __iter__(self) -> Iterator[ParsedToken]:
        return iter(self.tokens)


@dataclass(frozen=True, slots=True)
class ParsedText:
    """Tokens and noun chunks of one text; iterating yields the tokens, like a ``Doc``."""

    tokens: tuple[ParsedToken, ...]
    noun_chunks: tuple[ParsedChunk, ...]

    def __iter__(self) -> Iterator[ParsedToken]:
        return iter(self.tokens)

    @classmethod
    def from_doc(cls, doc: Any) -> ParsedText:
        """The values the manipulations read from a spaCy ``Doc`` (parser enabled)."""
        tokens = tuple(ParsedToken(t.idx, t.text, t.lemma_, t.pos_, bool(t.like_num))
                       for t in doc)
        chunks = tuple(ParsedChunk(c.start_char, c.end_char, tokens[c.start:c.end])
                       for c in doc.noun_chunks)
        return cls(tokens, chunks)

    def to_json(self) -> list[Any]:
        """``[tokens, chunks]``: tokens as ``[idx, text, lemma, pos, like_num]`` rows,
        chunks as ``[start_char, end_char, first token, end token]`` (token positions)."""
        position = {id(t): i for i, t in enumerate(self.tokens)}
        chunks = []
        for chunk in self.noun_chunks:
            first = position[id(chunk.tokens[0])] if chunk.tokens else 0
            chunks.append([chunk.start_char, chunk.end_char, first, first + len(chunk.tokens)])
        return [[[t.idx, t.text, t.lemma_, t.pos_, t.like_num] for t in self.tokens], chunks]

    @classmethod
    def from_json(cls, value: Any) -> ParsedText:
        """The inverse of :meth:`to_json`; a malformed value raises ``ValueError``."""
        try:
            rows, chunk_rows = value
            tokens = tuple(ParsedToken(int(i), str(text), str(lemma), str(pos), bool(num))
                           for i, text, lemma, pos, num in rows)
            chunks = tuple(ParsedChunk(int(a), int(b), tokens[int(s):int(e)])
                           for a, b, s, e in chunk_rows)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"not a stored parse: {exc}") from None
        return cls(tokens, chunks)
