"""Query variation generators (Penha, Câmara & Hauff, ECIR 2022), as small pure functions.

Penha et al. ask how robust a retrieval pipeline is when the *query* changes the way real
users' queries vary: typos, word order, dropped function words, shorter (summarised)
queries and synonyms. Each function here maps a query to one variation of it,
``(query, context, rng) -> str | None``; ``None`` means the variation does not apply (no
word with a known misspelling, a one-word query, no stopword…). Queries are edited in place
on term spans (:func:`abnirml.text.tokenize.term_spans`), so everything a variation does
not touch keeps its characters.

Choices, where the paper leaves room (its generators are neural or list-based; ours are
deterministic given the seed):

* misspelling: one word, drawn at random among those codespell lists a misspelling for
  (Penha et al. also misspell one word per query);
* word order: a random permutation of the words that changes the order;
* stopword removal: every stopword (not applicable when none, or when nothing would remain);
* "summarisation": drop the single least informative content term (not a stopword), the
  one with the lowest idf (ties: the earlier), keeping at least one — a cheap stand-in
  for their T5 summaries, which mostly drop the least specific words;
* synonym: one word, drawn among those with a GloVe vector, replaced by its nearest GloVe
  neighbour (cosine) among the ``SYNONYM_VOCABULARY`` most frequent words that is not a
  form of the same word (same Porter stem) — the paper's embedding-based paraphrase.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from abnirml.text.casing import match_case
from abnirml.text.stem import porter
from abnirml.text.tokenize import term_spans

#: Nearest neighbours are searched among this many of GloVe's most frequent words (the
#: rest of its 400k rows are mostly rare names and noise).
SYNONYM_VOCABULARY = 50_000
QueryVariation = Callable[[str, "VariationContext", np.random.Generator], "str | None"]


@dataclass(frozen=True)
class VariationContext:
    """What the generators read: stopwords, misspellings, idf per (lowercased) term, and a
    nearest-neighbour function for synonyms (word → neighbour or None)."""

    stopwords: frozenset[str] = frozenset()
    typo_map: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    idf: Callable[[str], float] | None = None
    neighbour: Callable[[str], str | None] | None = None


def _words(query: str) -> list[tuple[int, int]]:
    return term_spans(query)


def _replace(query: str, span: tuple[int, int], text: str) -> str:
    return query[:span[0]] + text + query[span[1]:]


def _delete(query: str, spans: list[tuple[int, int]]) -> str:
    """``query`` without the terms in ``spans`` and one white-space run next to each."""
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


def misspell(query: str, context: VariationContext, rng: np.random.Generator) -> str | None:
    """One word with a known misspelling is misspelt (a listed misspelling, at random)."""
    spans = [s for s in _words(query) if query[s[0]:s[1]].lower() in context.typo_map]
    if not spans:
        return None
    span = spans[int(rng.integers(len(spans)))]
    word = query[span[0]:span[1]]
    options = context.typo_map[word.lower()]
    return _replace(query, span, match_case(word, options[int(rng.integers(len(options)))]))


def shuffle_words(query: str, context: VariationContext, rng: np.random.Generator
                  ) -> str | None:
    """The query's terms in a random different order (white space and punctuation stay)."""
    spans = _words(query)
    pieces = [query[a:b] for a, b in spans]
    if len(set(pieces)) < 2:
        return None
    for _ in range(20):
        order = rng.permutation(len(pieces))
        shuffled = [pieces[j] for j in order]
        if shuffled != pieces:
            break
    out, pos = [], 0
    for (start, end), piece in zip(spans, shuffled, strict=True):
        out += [query[pos:start], piece]
        pos = end
    out.append(query[pos:])
    return "".join(out)


def remove_stopwords(query: str, context: VariationContext, rng: np.random.Generator
                     ) -> str | None:
    """Every stopword deleted; not applicable without one, or if only stopwords remain."""
    spans = _words(query)
    stops = [s for s in spans if query[s[0]:s[1]].lower() in context.stopwords]
    if not stops or len(stops) == len(spans):
        return None
    return _delete(query, stops)


def drop_least_informative(query: str, context: VariationContext, rng: np.random.Generator
                           ) -> str | None:
    """The content term (not a stopword) with the lowest idf deleted; queries with fewer
    than two content terms do not apply (dropping a stopword is ``remove_stopwords``' job)."""
    if context.idf is None:
        raise ValueError("drop_least_informative needs an idf function")
    spans = [s for s in _words(query) if query[s[0]:s[1]].lower() not in context.stopwords]
    if len(spans) < 2:
        return None
    values = [context.idf(query[a:b].lower()) for a, b in spans]
    lowest = int(np.argmin(values))
    return _delete(query, [spans[lowest]])


def synonym(query: str, context: VariationContext, rng: np.random.Generator) -> str | None:
    """One non-stopword replaced by its nearest embedding neighbour (another word)."""
    if context.neighbour is None:
        raise ValueError("synonym needs a neighbour function")
    choices = []
    for span in _words(query):
        word = query[span[0]:span[1]].lower()
        if word in context.stopwords:
            continue
        found = context.neighbour(word)
        if found is not None:
            choices.append((span, found))
    if not choices:
        return None
    span, found = choices[int(rng.integers(len(choices)))]
    return _replace(query, span, match_case(query[span[0]:span[1]], found))


class NearestNeighbours:
    """word → its nearest neighbour by cosine among the first ``vocabulary`` rows of term
    vectors, skipping forms of the same word (same Porter stem) and non-alphabetic tokens;
    answers are memoised (queries repeat words)."""

    def __init__(self, vectors: Any, vocabulary: int = SYNONYM_VOCABULARY):
        rows = sorted(vectors._row.items(), key=lambda item: item[1])[:vocabulary]
        self.words = [w for w, _ in rows]
        matrix = vectors.vectors[[i for _, i in rows]].astype(np.float64)
        self.units = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        self.vectors = vectors
        self._memo: dict[str, str | None] = {}

    def __call__(self, word: str) -> str | None:
        if word in self._memo:
            return self._memo[word]
        row = self.vectors._row.get(word)
        found = None
        if row is not None:
            v = self.vectors.vectors[row].astype(np.float64)
            v = v / max(float(np.linalg.norm(v)), 1e-12)
            order = np.argsort(-(self.units @ v))
            stem = porter().stem(word)
            for k in order[:50].tolist():
                candidate = self.words[k]
                if candidate != word and candidate.isalpha() and porter().stem(candidate) != stem:
                    found = candidate
                    break
        self._memo[word] = found
        return found


#: Probe suffix → (label, generator, needs).
VARIATIONS: dict[str, tuple[str, QueryVariation, str]] = {
    "misspell": ("Misspelling", misspell, "typos"),
    "shuffle-words": ("Word order", shuffle_words, ""),
    "remove-stops": ("Stopword removal", remove_stopwords, ""),
    "drop-least-informative": ("Summarisation (drop lowest idf)", drop_least_informative,
                               "idf"),
    "synonym": ("Synonym (GloVe neighbour)", synonym, "embeddings"),
}
