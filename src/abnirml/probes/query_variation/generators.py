"""Query variation generators (Penha, Câmara & Hauff, ECIR 2022), as small pure functions.

Penha et al. ask how robust a retrieval pipeline is when the *query* changes the way real
users' queries vary: typos, word order, dropped function words, shorter (summarised)
queries and synonyms. Each function here maps a query to one variation of it,
``(query, context, rng) -> str | None``; ``None`` means the variation does not apply (no
content word to misspell, a one-word query, no stopword…). Queries are edited in place on
*words* — runs of letters and digits joined by an inner apostrophe or hyphen, so
"medicare's" and "x-ray" are one word — and everything a variation does not touch keeps
its characters.

How each matches the authors' released generators (TextAttack transformations, one
transformation per query), and where a choice had to be made:

* word order (``WordInnerSwapRandom``): two words at different positions, whose texts
  differ, trade places — exactly one transposition;
* misspelling (``WordSwapNeighboringCharacterSwap``, ``WordSwapQWERTY``,
  ``WordSwapRandomCharacterSubstitution``, with ``StopwordModification``): one word
  (alphabetic, two letters or more, not on TextAttack's stopword list — NLTK's English
  list, matched as written, whatever the run's ``--stopwords``) gets one character edit —
  two neighbouring, different letters swapped, one letter replaced by a key next to it on
  a QWERTY keyboard, or one letter replaced by another random letter. The QWERTY edit is
  drawn as ``WordSwapQWERTY(random_one=True)`` draws it: a word uniformly, then a position
  in it uniformly, then one of that letter's neighbouring keys uniformly (so a letter with
  seven neighbours is no likelier to be hit than one with two). TextAttack fails on a word
  holding a digit (no neighbouring key); such words are simply not misspelt here;
* stopword removal: every stopword (not applicable when none, or when nothing would remain);
* "summarisation": drop the single least informative content word (not a stopword), the
  one whose analysed terms have the lowest idf in the collection's statistics (ties: the
  earlier), keeping at least one — a cheap stand-in for their T5 summaries, which mostly
  drop the least specific words;
* synonym (``WordSwapWordNet`` / ``WordSwapEmbedding``): one content word replaced by a
  synonym from a :mod:`.synonyms` source (WordNet by default).
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from abnirml.text.casing import match_case
from abnirml.text.tokenize import terms

QueryVariation = Callable[[str, "VariationContext", np.random.Generator], "str | None"]
#: a word: letters/digits, possibly joined by an inner apostrophe or hyphen
_WORD = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*", re.UNICODE)
#: the character-level noise kinds of the misspelling probes
TYPO_KINDS = ("swap", "qwerty", "random")
#: letter → the keys ``WordSwapQWERTY`` may type instead, in TextAttack's order: the
#: adjacency table of TextAttack's ``textattack/transformations/word_swaps/word_swap_qwerty.py``,
#: the generator Penha et al. released, copied as it is (it is not symmetric — "g" may become
#: "d" while "d" never becomes "g" — and that is the generator's behaviour, kept on purpose)
QWERTY_NEIGHBOURS: dict[str, str] = {
    "q": "was", "w": "qeasd", "e": "wsdfr", "r": "edfgt", "t": "rfghy", "y": "tghju",
    "u": "yhjki", "i": "ujklo", "o": "iklp", "p": "ol", "a": "qwszx", "s": "qweadzx",
    "d": "werfcxs", "f": "ertgvcd", "g": "rtyhbvd", "h": "tyugjbn", "j": "yuikmnh",
    "k": "uiolmj", "l": "iopk", "z": "asx", "x": "sdzc", "c": "xdfv", "v": "cfgb",
    "b": "vghn", "n": "bhjm", "m": "njk",
}


@dataclass(frozen=True)
class VariationContext:
    """What the generators read: stopwords, idf per word, and a synonym source
    (query → :class:`~abnirml.probes.query_variation.synonyms.SynonymOptions`)."""

    stopwords: frozenset[str] = frozenset()
    idf: Callable[[str], float] | None = None
    synonyms: Callable[[str], Any] | None = None


def word_spans(query: str) -> list[tuple[int, int]]:
    """Character spans of the query's words (see the module docstring)."""
    return [m.span() for m in _WORD.finditer(query)]


def is_stopword(word: str, stopwords: frozenset[str]) -> bool:
    """A stopword, or a word made of stopwords only ("what's" = "what" + "s")."""
    return word.lower() in stopwords or all(t in stopwords for t in terms(word))


def content_word_spans(query: str, stopwords: frozenset[str]) -> list[tuple[int, int]]:
    """Spans of the words that are not stopwords."""
    return [s for s in word_spans(query) if not is_stopword(query[s[0]:s[1]], stopwords)]


def _replace(query: str, span: tuple[int, int], text: str) -> str:
    return query[:span[0]] + text + query[span[1]:]


def _delete(query: str, spans: list[tuple[int, int]]) -> str:
    """``query`` without the words in ``spans`` and one white-space run next to each."""
    out = query
    for start, end in sorted(spans, reverse=True):
        after = end
        while after < len(out) and out[after].isspace():
            after += 1
        if after == len(out):                 # last word: take the space before instead
            before = start
            while before > 0 and out[before - 1].isspace():
                before -= 1
            out = out[:before] + out[end:]
        else:
            out = out[:start] + out[after:]
    return out


def typo_edits(word: str, kind: str) -> list[str]:
    """Every misspelling of ``word`` by one edit of ``kind`` (lowercase letters; the
    caller restores the casing): ``swap`` two neighbouring different letters, ``qwerty``
    one letter for a neighbouring key, ``random`` one letter for any other letter."""
    lower = word.lower()
    out: list[str] = []
    for i, letter in enumerate(lower):
        if kind == "swap":
            if i + 1 < len(lower) and lower[i + 1] != letter:
                out.append(lower[:i] + lower[i + 1] + letter + lower[i + 2:])
        elif kind == "qwerty":
            out += [lower[:i] + key + lower[i + 1:] for key in QWERTY_NEIGHBOURS.get(letter, "")]
        elif kind == "random":
            out += [lower[:i] + key + lower[i + 1:] for key in string.ascii_lowercase
                    if key != letter]
        else:
            raise ValueError(f"unknown misspelling kind {kind!r}; expected one of {TYPO_KINDS}")
    return list(dict.fromkeys(out))


def misspellable_spans(query: str, kind: str) -> list[tuple[int, int]]:
    """Spans of the words a misspelling of ``kind`` may edit: alphabetic, two letters or
    more, not on TextAttack's stopword list (as written), with at least one edit."""
    from abnirml.text.stopwords import textattack_stopwords

    stops = textattack_stopwords()
    return [s for s in word_spans(query)
            if query[s[0]:s[1]].isalpha() and s[1] - s[0] >= 2
            and query[s[0]:s[1]] not in stops and typo_edits(query[s[0]:s[1]], kind)]


def qwerty_typo(word: str, rng: np.random.Generator) -> str:
    """One QWERTY slip in ``word`` (lowercase), drawn as TextAttack draws it: a position
    uniformly, then one of its letter's neighbouring keys uniformly."""
    lower = word.lower()
    i = int(rng.integers(len(lower)))
    keys = QWERTY_NEIGHBOURS[lower[i]]
    return lower[:i] + keys[int(rng.integers(len(keys)))] + lower[i + 1:]


def misspell(kind: str | None = None) -> QueryVariation:
    """A generator misspelling one word by one edit of ``kind`` (None: a kind drawn per
    query, the paper's misspelling category as a whole)."""

    def generate(query: str, context: VariationContext, rng: np.random.Generator
                 ) -> str | None:
        chosen = kind if kind is not None else TYPO_KINDS[int(rng.integers(len(TYPO_KINDS)))]
        spans = misspellable_spans(query, chosen)
        if not spans:
            return None
        span = spans[int(rng.integers(len(spans)))]
        word = query[span[0]:span[1]]
        if chosen == "qwerty":
            typo = qwerty_typo(word, rng)
        else:
            edits = typo_edits(word, chosen)
            typo = edits[int(rng.integers(len(edits)))]
        return _replace(query, span, "".join(c.upper() if o.isupper() else c
                                             for o, c in zip(word, typo, strict=True)))

    generate.__name__ = f"misspell_{kind or 'any'}"
    return generate


def swap_two_words(query: str, context: VariationContext, rng: np.random.Generator
                   ) -> str | None:
    """Two words with different texts trade places (white space and punctuation stay)."""
    spans = word_spans(query)
    pieces = [query[a:b] for a, b in spans]
    pairs = [(i, j) for i in range(len(pieces)) for j in range(i + 1, len(pieces))
             if pieces[i].lower() != pieces[j].lower()]
    if not pairs:
        return None
    i, j = pairs[int(rng.integers(len(pairs)))]
    (a, b), (c, d) = spans[i], spans[j]
    return query[:a] + pieces[j] + query[b:c] + pieces[i] + query[d:]


def remove_stopwords(query: str, context: VariationContext, rng: np.random.Generator
                     ) -> str | None:
    """Every stopword deleted; not applicable without one, or if only stopwords remain."""
    spans = word_spans(query)
    stops = [s for s in spans if is_stopword(query[s[0]:s[1]], context.stopwords)]
    if not stops or len(stops) == len(spans):
        return None
    return _delete(query, stops)


def drop_least_informative(query: str, context: VariationContext, rng: np.random.Generator
                           ) -> str | None:
    """The content word (not a stopword) with the lowest idf deleted, whole; queries with
    fewer than two content words do not apply (dropping a stopword is
    ``remove_stopwords``' job)."""
    if context.idf is None:
        raise ValueError("drop_least_informative needs an idf function")
    spans = content_word_spans(query, context.stopwords)
    if len(spans) < 2:
        return None
    values = [context.idf(query[a:b]) for a, b in spans]
    lowest = int(np.argmin(values))
    return _delete(query, [spans[lowest]])


def synonym(query: str, context: VariationContext, rng: np.random.Generator) -> str | None:
    """One content word replaced by a synonym (casing kept); None when the source has none."""
    if context.synonyms is None:
        raise ValueError("synonym needs a synonym source")
    choices = context.synonyms(query).choices
    if not choices:
        return None
    span, found = choices[int(rng.integers(len(choices)))]
    return _replace(query, span, match_case(query[span[0]:span[1]], found))


#: Probe suffix → (label, generator, needs).
VARIATIONS: dict[str, tuple[str, QueryVariation, str]] = {
    "misspell": ("Misspelling (one of the three kinds)", misspell(), ""),
    "misspell-swap": ("Misspelling: neighbouring letters swapped", misspell("swap"), ""),
    "misspell-qwerty": ("Misspelling: QWERTY neighbour key", misspell("qwerty"), ""),
    "misspell-random": ("Misspelling: random letter", misspell("random"), ""),
    "shuffle-words": ("Word order (two words swapped)", swap_two_words, ""),
    "remove-stops": ("Stopword removal", remove_stopwords, ""),
    "drop-least-informative": ("Summarisation (drop lowest idf)", drop_least_informative,
                               "idf"),
    "synonym": ("Synonym", synonym, "synonyms"),
}
