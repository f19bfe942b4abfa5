"""Porter stemming through PyStemmer (a C implementation with its own word cache)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol


class Stemmer(Protocol):
    def stem_words(self, words: Sequence[str]) -> list[str]: ...


class _PyStemmer(Protocol):
    """What abnirml uses of PyStemmer's ``Stemmer.Stemmer`` (the extension ships no types)."""

    def stemWords(self, words: Sequence[str]) -> list[str]: ...

    def stemWord(self, word: str) -> str: ...


class PorterStemmer:
    """The original Porter algorithm (as Terrier and the papers use), not Porter2."""

    name = "porter"

    def __init__(self) -> None:
        import Stemmer as _pystemmer  # PyStemmer's module name

        self._impl: _PyStemmer = _pystemmer.Stemmer("porter")

    def stem_words(self, words: Sequence[str]) -> list[str]:
        return self._impl.stemWords(words)

    def stem(self, word: str) -> str:
        return self._impl.stemWord(word)


class IdentityStemmer:
    name = "none"

    def stem_words(self, words: Sequence[str]) -> list[str]:
        return list(words)


@lru_cache(maxsize=1)
def porter() -> PorterStemmer:
    """A shared Porter stemmer (PyStemmer objects are cheap but their cache is per object)."""
    return PorterStemmer()
