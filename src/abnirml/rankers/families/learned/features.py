"""Text features for the LightGBM ranker — lexical overlap and classic scores, no metadata.

ABNIRML's LGBM received only text-based features (lexical overlap, language-model scores);
these are that kind. Terms are the analyser's (stopped, Porter-stemmed) unless noted, and
collection statistics come from the collection the ranker scores against.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from abnirml.data.stats import CollectionStats
from abnirml.rankers.base import Pair
from abnirml.rankers.families.learned import feature_list
from abnirml.text.tokenize import terms

FEATURES = feature_list.FEATURES
"""The columns of :meth:`TextFeatures.matrix`, named and explained in :mod:`.feature_list`."""


class TextFeatures:
    def __init__(self, stats: CollectionStats):
        from abnirml.rankers.families.lexical import BM25, TFIDF, QueryLikelihood

        self.stats = stats
        self.bm25 = BM25(stats)
        self.ql = QueryLikelihood(stats)
        self.tfidf = TFIDF(stats)
        self.signature = f"features={len(FEATURES)}[{stats.analyzer.signature}][{stats.digest}]"

    def idf(self, term: str) -> float:
        n = self.stats.num_docs
        return math.log2((n + 1) / (self.stats.df.get(term, 0) + 0.5))

    def matrix(self, pairs: Sequence[Pair]) -> np.ndarray:
        analyze = self.stats.analyzer.analyze
        cache: dict[str, list[str]] = {}

        def analysed(text: str) -> list[str]:
            out = cache.get(text)
            if out is None:
                out = cache[text] = analyze(text)
            return out

        rows = np.empty((len(pairs), len(FEATURES)), dtype=np.float64)
        for i, (query, doc) in enumerate(pairs):
            rows[i] = self._row(query, doc, analysed(query), analysed(doc))
        return rows

    def _row(self, query: str, doc: str, q_terms: list[str], d_terms: list[str]) -> list[float]:
        tf = Counter(d_terms)
        distinct = list(dict.fromkeys(q_terms))
        matched = [t for t in distinct if tf.get(t)]
        sum_tf = sum(tf.get(t, 0) for t in q_terms)
        length = len(d_terms)
        idfs = [self.idf(t) for t in matched]
        raw_q = terms(query)
        raw_d = set(terms(doc))
        wanted = set(distinct)
        first = next((i for i, t in enumerate(d_terms) if t in wanted), None)
        q_bigrams = list(pairwise(q_terms))
        d_bigrams = set(pairwise(d_terms))
        return [
            self.bm25.score_terms(q_terms, d_terms),
            self.ql.score_terms(q_terms, d_terms),
            self.tfidf.score_terms(q_terms, d_terms),
            float(length),
            float(len(q_terms)),
            float(len(matched)),
            len(matched) / len(distinct) if distinct else 0.0,
            float(sum_tf),
            sum_tf / length if length else 0.0,
            float(sum(idfs)),
            max(idfs, default=0.0),
            min((self.idf(t) for t in distinct), default=0.0),
            sum(1 for t in raw_q if t in raw_d) / len(raw_q) if raw_q else 0.0,
            first / length if first is not None and length else 1.0,
            (sum(1 for b in q_bigrams if b in d_bigrams) / len(q_bigrams)) if q_bigrams else 0.0,
            float(len(doc)),
        ]
