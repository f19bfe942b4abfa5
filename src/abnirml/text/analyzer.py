"""The lexical analysis chain shared by lexical rankers and measured characteristics:
mask tokens dropped → terms → stopword removal → Porter stemming.

Masking probes (Only-Q, Drop-Q) write the mask token ``[MASK]`` into documents. For a
neural ranker that is a vocabulary item meaning "something was here"; split into
alphanumeric terms it would become the index term ``mask``, which lengthens every masked
document (18 → 32 terms on DL19's Only-Q) and alone drives BM25's Only-Q score. So the
analyzer removes the mask token before tokenising: for a lexical ranker a masked word is
simply absent.

Text is brought to Unicode normalisation form NFC before tokenising, so the same words
encoded precomposed ("é", U+00E9) or decomposed ("e" + U+0301, as macOS file names and some
PDF extractors write it) give the same terms. NFC only merges canonically equivalent
spellings; compatibility forms that look alike but are different characters ("ﬁ" and "fi",
"²" and "2", full-width letters) stay distinct, as they do in the collection's own text.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from abnirml.text.lines import shown_path
from abnirml.text.stem import porter
from abnirml.text.stopwords import DEFAULT, content_tag, load_stopwords
from abnirml.text.tokenize import terms

#: The mask token lexical rankers declare (``RankerHints``' default) and the analyzer drops.
MASK_TOKEN = "[MASK]"
#: The Unicode normalisation form applied before tokenising (part of the signature).
UNICODE_FORM: Final = "NFC"
#: Words whose stems the analyzer remembers before it forgets them all. Word frequencies
#: are Zipfian, so the frequent words are back in the memo soon after it is cleared, while a
#: large collection's long tail (a 2-million-passage one holds ~850,000 distinct words, each
#: seen a few times) would otherwise keep ~85 bytes per word for nothing.
STEM_MEMO_SIZE = 200_000


@dataclass(frozen=True)
class Analyzer:
    """Turns text into index terms. ``stopwords`` names a list (see :mod:`.stopwords`)."""

    stopwords: str = DEFAULT
    stem: bool = True
    mask_token: str | None = MASK_TOKEN     # removed before tokenising (None: kept as text)
    _stops: frozenset[str] = field(init=False, repr=False, compare=False)
    _memo: dict[str, tuple[str, ...]] = field(init=False, repr=False, compare=False)
    _stems: dict[str, str] = field(init=False, repr=False, compare=False)

    #: Analysed texts kept for reuse (statistics, measures and every lexical ranker analyse
    #: the same documents); the memo is cleared when it grows past this many texts.
    memo_size: int = field(default=50_000, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_stops", load_stopwords(self.stopwords))
        object.__setattr__(self, "_memo", {})
        object.__setattr__(self, "_stems", {})

    @classmethod
    def from_option(cls, stopwords: str) -> Analyzer:
        """The analyzer for a ``--stopwords`` value (``default``, ``spacy``, ``none``, FILE)."""
        return cls(stopwords=stopwords)

    @property
    def stopword_set(self) -> frozenset[str]:
        return self._stops

    @property
    def signature(self) -> str:
        """Identifies the analysis for cache keys and reports."""
        tag = content_tag(self.stopwords, self._stops)
        base = (f"stop={shown_path(self.stopwords)}{tag};stem={'porter' if self.stem else 'none'}"
                f";unicode={UNICODE_FORM}")
        return base if self.mask_token is None else f"{base};drop={self.mask_token}"

    def analyze(self, text: str) -> list[str]:
        """Stemmed non-stopword terms of ``text``, in order (a fresh list)."""
        return list(self.analyze_cached(text))

    def analyze_cached(self, text: str, evict: bool = True, keep: bool = True
                       ) -> tuple[str, ...]:
        """Like :meth:`analyze` but shared and immutable: each distinct text is analysed once.

        When the memo is full it is cleared (``evict``) or, for streaming passes over whole
        collections (``evict=False``), the result is simply not kept. ``keep=False`` reads
        the memo without adding to it (a pass over a collection larger than the memo).
        """
        memo = self._memo
        found = memo.get(text)
        if found is None:
            found = tuple(self.analyze_unshared(text))
            if not keep:
                return found
            if len(memo) >= self.memo_size:
                if not evict:
                    return found
                memo.clear()
            memo[text] = found
        return found

    def forget(self, texts: Iterable[str]) -> None:
        """Drop the analyses of ``texts`` from the memo (later calls analyse them again)."""
        memo = self._memo
        for text in texts:
            memo.pop(text, None)

    def analyze_unshared(self, text: str) -> list[str]:
        """Analyse without remembering the result (streaming passes over whole collections)."""
        stops = self._stops
        text = normalise_unicode(text)
        if self.mask_token is not None and self.mask_token in text:
            text = text.replace(self.mask_token, " ")
        kept = [t for t in terms(text) if t not in stops]
        if not self.stem:
            return kept
        stems = self._stems   # word → stem: a dict lookup is far cheaper than stemming again
        try:
            return [stems[t] for t in kept]
        except KeyError:
            if len(stems) > STEM_MEMO_SIZE:
                stems.clear()
            missing = list({t for t in kept if t not in stems})
            stems.update(zip(missing, porter().stem_words(missing), strict=True))
            return [stems[t] for t in kept]

    def analyze_many(self, texts: list[str]) -> list[list[str]]:
        return [self.analyze(t) for t in texts]

    def counts(self, text: str) -> Counter[str]:
        return Counter(self.analyze(text))

    def query_terms(self, text: str) -> list[str]:
        """Distinct analysed query terms in first-occurrence order."""
        return list(dict.fromkeys(self.analyze(text)))


def normalise_unicode(text: str) -> str:
    """``text`` in :data:`UNICODE_FORM`; ASCII and already-normal text are returned as is
    (a quick check, so the common case costs no copy)."""
    if text.isascii() or unicodedata.is_normalized(UNICODE_FORM, text):
        return text
    return unicodedata.normalize(UNICODE_FORM, text)
