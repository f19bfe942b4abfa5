"""Bag-of-words rankers: BM25, query likelihood (Dirichlet) and TF-IDF.

Formulas follow Terrier's defaults (the papers' BM25 is Terrier's): base-2 logarithms,
k1 = 1.2, b = 0.75, k3 = 8. Document length is the number of analysed (stopped, stemmed)
terms; collection statistics are fixed at construction, so a manipulated document is scored
against the original collection, as an index would.

Scores do not depend on the order of terms in the query or the document: query terms are
summed in sorted order (a floating-point sum depends on its order, so summing in query order
would give a shuffled query a score differing in the last bits), and document terms are
counted.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from abnirml.data.stats import CollectionStats
from abnirml.rankers.base import Pair, RankerHints

_LEXICAL_HINTS = RankerHints(batch_size=8192, sort_by_length=False)

#: Per query term: (term, weight, auxiliary value such as p(t|C)).
Weights = list[tuple[str, float, float]]


class _BagOfWordsRanker:
    """Shared plumbing: analysis with per-call caches and a scoring loop over pairs."""

    hints = _LEXICAL_HINTS
    family = "lexical"

    def __init__(self, stats: CollectionStats, name: str, params: dict[str, float]):
        self.stats = stats
        self.name = name
        self.params = params
        param_text = ",".join(f"{k}={v!r}" for k, v in sorted(params.items()))
        self.fingerprint = (f"{type(self).__name__}[{param_text}]"
                            f"[{stats.analyzer.signature}][collection={stats.digest}]")

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        analyze = self.stats.analyzer.analyze_cached
        query_cache: dict[str, Weights] = {}
        out = np.empty(len(pairs), dtype=np.float64)
        for i, (query, doc) in enumerate(pairs):
            weights = query_cache.get(query)
            if weights is None:
                weights = query_cache[query] = self._query_weights(Counter(analyze(query)))
            tokens = analyze(doc)
            out[i] = self._score(weights, _query_term_counts(weights, tokens), len(tokens))
        return out

    def score_terms(self, query_terms: Sequence[str], doc_terms: Sequence[str]) -> float:
        """Score already-analysed terms (used by tests and the axiom miners)."""
        return self._score(self._query_weights(Counter(query_terms)), Counter(doc_terms),
                           len(doc_terms))

    def _query_weights(self, qtf: Counter[str]) -> Weights:
        """One entry per distinct query term, in sorted term order (see the module doc)."""
        raise NotImplementedError

    def _score(self, weights: Weights, tf: Mapping[str, int], length: int) -> float:
        raise NotImplementedError


#: Up to this many distinct query terms, each is counted in the document's token tuple (a C
#: loop per term, faster than hashing every token); beyond it the document is counted once,
#: so a long query costs time linear in its length rather than length × document length.
_COUNT_EACH_UP_TO = 16


def _query_term_counts(weights: Weights, tokens: tuple[str, ...]) -> Mapping[str, int]:
    """How often each query term of ``weights`` occurs in ``tokens``."""
    if len(weights) <= _COUNT_EACH_UP_TO:
        return {term: tokens.count(term) for term, _, _ in weights}
    return Counter(tokens)


class BM25(_BagOfWordsRanker):
    """Terrier's BM25: Σ log2((N−df+.5)/(df+.5)) · (k1+1)tf/(K+tf) · (k3+1)qtf/(k3+qtf)."""

    def __init__(self, stats: CollectionStats, k1: float = 1.2, b: float = 0.75, k3: float = 8.0,
                 name: str = "bm25"):
        super().__init__(stats, name, {"k1": k1, "b": b, "k3": k3})
        self.k1, self.b, self.k3 = k1, b, k3

    def idf(self, term: str) -> float:
        n, df = self.stats.num_docs, self.stats.df.get(term, 0)
        return math.log2((n - df + 0.5) / (df + 0.5))

    def _query_weights(self, qtf: Counter[str]) -> Weights:
        k3 = self.k3
        return [(t, self.idf(t) * (k3 + 1) * c / (k3 + c), 0.0) for t, c in sorted(qtf.items())]

    def _score(self, weights: Weights, tf: Mapping[str, int], length: int) -> float:
        k1 = self.k1
        avgdl = self.stats.avg_doc_length or 1.0
        norm = k1 * ((1 - self.b) + self.b * length / avgdl)
        total = 0.0
        for term, weight, _ in weights:
            f = tf.get(term, 0)
            if f:
                total += weight * (k1 + 1) * f / (norm + f)
        return total


class TFIDF(_BagOfWordsRanker):
    """Terrier's TF_IDF: Robertson's tf · log2(N/df + 1) · qtf."""

    def __init__(self, stats: CollectionStats, k1: float = 1.2, b: float = 0.75,
                 name: str = "tfidf"):
        super().__init__(stats, name, {"k1": k1, "b": b})
        self.k1, self.b = k1, b

    def _query_weights(self, qtf: Counter[str]) -> Weights:
        n = self.stats.num_docs
        out = []
        for term, count in sorted(qtf.items()):
            df = self.stats.df.get(term, 0)
            out.append((term, count * math.log2(n / max(df, 1) + 1), 0.0))
        return out

    def _score(self, weights: Weights, tf: Mapping[str, int], length: int) -> float:
        k1, b = self.k1, self.b
        avgdl = self.stats.avg_doc_length or 1.0
        total = 0.0
        for term, weight, _ in weights:
            f = tf.get(term, 0)
            if f:
                total += weight * k1 * f / (f + k1 * (1 - b + b * length / avgdl))
        return total


class QueryLikelihood(_BagOfWordsRanker):
    """Query likelihood with Dirichlet smoothing (natural log), rank-equivalent to log p(q|d):

    Σ_{t∈q} qtf · ln(1 + tf / (μ·p(t|C))) + |q| · ln(μ / (|d| + μ)).

    Unlike Terrier's DirichletLM, the length term counts every query term, matched or not,
    which is what the language-modelling derivation gives. A term absent from the collection
    gets a collection frequency of 1 so its probability is never zero.
    """

    def __init__(self, stats: CollectionStats, mu: float = 2500.0, name: str = "ql"):
        super().__init__(stats, name, {"mu": mu})
        self.mu = mu

    def _query_weights(self, qtf: Counter[str]) -> Weights:
        total = max(self.stats.num_tokens, 1)
        return [(t, float(c), max(self.stats.cf.get(t, 0), 1) / total)
                for t, c in sorted(qtf.items())]

    def _score(self, weights: Weights, tf: Mapping[str, int], length: int) -> float:
        mu = self.mu
        total = 0.0
        query_length = 0.0
        for term, count, p_c in weights:
            query_length += count
            f = tf.get(term, 0)
            if f:
                total += count * math.log1p(f / (mu * p_c))
        return total + query_length * math.log(mu / (length + mu))


def bm25_top_k(stats: CollectionStats, docs: Mapping[str, str], queries: dict[str, str],
               k: int = 100) -> dict[str, list[tuple[str, float]]]:
    """Retrieve each query's BM25 top ``k`` over ``docs`` in one streaming pass.

    Used for the default candidate set when a collection ships no run. Documents are read
    once, in order, and only each query's best ``k`` are kept, so the memory needed does not
    grow with the collection (a collection on disk is never loaded whole). Documents that
    contain a query term are retrieved, even when Terrier's idf makes their score 0; ties
    are broken by docno.
    """
    ranker = BM25(stats)
    analyze = stats.analyzer.analyze_cached
    postings: dict[str, list[tuple[str, float]]] = {}
    for qid, text in sorted(queries.items()):
        for term, weight, _ in ranker._query_weights(Counter(analyze(text))):
            postings.setdefault(term, []).append((qid, weight))
    heaps: dict[str, list[tuple[float, _Reversed]]] = {qid: [] for qid in queries}
    avgdl = stats.avg_doc_length or 1.0
    k1, b = ranker.k1, ranker.b
    items = getattr(docs, "items_streamed", docs.items)()
    keep = stats.num_docs <= stats.analyzer.memo_size   # see CollectionStats.build
    for docno, text in items:
        tokens = analyze(text, evict=False, keep=keep)
        matched = Counter(t for t in tokens if t in postings)
        if not matched:
            continue
        norm = k1 * ((1 - b) + b * len(tokens) / avgdl)
        scores: dict[str, float] = {}
        for term, f in matched.items():
            saturation = (k1 + 1) * f / (norm + f)
            for qid, weight in postings[term]:
                scores[qid] = scores.get(qid, 0.0) + weight * saturation
        key_doc = _Reversed(docno)
        for qid, score in scores.items():
            heap = heaps[qid]
            item = (score, key_doc)
            if len(heap) < k:
                heapq.heappush(heap, item)
            elif heap[0] < item:
                heapq.heapreplace(heap, item)
    return {qid: [(key.value, score) for score, key in sorted(heap, reverse=True)]
            for qid, heap in sorted(heaps.items())}


class _Reversed:
    """Orders strings backwards, so a min-heap of (score, _Reversed(docno)) drops the lowest
    score first and, among equal scores, the largest docno."""

    __slots__ = ("value",)

    def __init__(self, value: str):
        self.value = value

    def __lt__(self, other: _Reversed) -> bool:
        return self.value > other.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reversed) and self.value == other.value
