"""Per-query features the miners read: term counts, lengths, proximity, embeddings.

Each distinct text is analysed once (:class:`TextStore`: stopped, optionally stemmed terms as
integer ids, their positions in the unstopped term sequence, and the surface words for the
embeddings). A query's pool of documents is then turned into NumPy arrays with one flat
pass over the concatenated token ids — the count matrix, TP's minimum query-term distance
Γ and the average embedding of each document's non-query terms — so the work per query is
linear in its tokens. Everything is shared by the nine axioms through the context memo.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from abnirml.probes.axioms.options import AxiomOptions
from abnirml.probes.axioms.semantics import Similarity, TermVectors
from abnirml.probes.base import ProbeContext
from abnirml.text.analyzer import Analyzer
from abnirml.text.stem import porter
from abnirml.text.tokenize import terms


@dataclass(frozen=True)
class AnalysedText:
    ids: np.ndarray          # analysed term ids (int64), in text order
    positions: np.ndarray    # position of each kept term among all terms (stopwords count)
    surface: tuple[str, ...]  # the kept terms before stemming (for embeddings)
    words: int               # number of terms, stopwords included


class TextStore:
    """Analyses each distinct text once and numbers the analysed terms.

    Each distinct *word* is stopped and stemmed once (``_term_of``: word → term id, −1 for
    a stopword), so analysing a text is one dictionary look-up per word — the same terms as
    ``Analyzer.analyze``, without re-stemming words already seen.
    """

    def __init__(self, analyzer: Analyzer):
        self.analyzer = analyzer
        self.vocab: dict[str, int] = {}
        self._term_of: dict[str, int] = {}
        self._texts: dict[str, AnalysedText] = {}
        self._names: list[str] = []
        self._vector_ids: dict[tuple[str, int], np.ndarray] = {}

    def analyse(self, text: str) -> AnalysedText:
        done = self._texts.get(text)
        if done is not None:
            return done
        words = terms(text)
        get = self._term_of.get
        numbers = [get(w, -2) for w in words]
        if -2 in numbers:
            numbers = [n if n != -2 else self._learn(w)
                       for n, w in zip(numbers, words, strict=True)]
        all_ids = np.array(numbers, dtype=np.int64)
        kept = np.flatnonzero(all_ids >= 0)
        surface = tuple(words[p] for p in kept.tolist())
        done = AnalysedText(all_ids[kept], kept, surface, len(words))
        self._texts[text] = done
        return done

    def _learn(self, word: str) -> int:
        """Stop, stem and number a word seen for the first time."""
        if word in self.analyzer.stopword_set:
            number = -1
        else:
            stem = porter().stem(word) if self.analyzer.stem else word
            known = self.vocab.get(stem)
            if known is None:
                known = self.vocab[stem] = len(self._names)
                self._names.append(stem)
            number = known
        self._term_of[word] = number
        return number

    def term(self, term_id: int) -> str:
        """The analysed term numbered ``term_id``."""
        return self._names[term_id]

    def vector_ids(self, text: str, vectors: TermVectors) -> np.ndarray:
        key = (text, id(vectors))
        done = self._vector_ids.get(key)
        if done is None:
            done = self._vector_ids[key] = vectors.ids(self.analyse(text).surface)
        return done


@dataclass
class QueryFeatures:
    """One query and its pool of ``n`` documents over its ``m`` distinct analysed terms.

    ``grades`` are relevance grades (NaN when unjudged); ``gamma`` is TP's Γ(d, Q), the
    smallest distance between occurrences of two distinct query terms (inf when fewer than
    two occur). Embedding features are computed on first use and kept (this object is a
    per-run cache, not a value).
    """

    qid: str
    query: str
    docnos: list[str]
    texts: list[str]
    terms: list[str]           # (m,) distinct analysed query terms
    term_ids: np.ndarray       # (m,) their ids in the TextStore
    qtf: np.ndarray            # (m,) query term counts
    counts: np.ndarray         # (n, m)
    lengths: np.ndarray        # (n,) analysed tokens
    words: np.ndarray          # (n,) all terms, stopwords included
    grades: np.ndarray         # (n,)
    gamma: np.ndarray          # (n,)
    _cache: dict[str, Any] = field(repr=False, default_factory=dict)
    #: (n,) the candidate run's own score per document (NaN where the run gave none: a
    #: judged pool's unretrieved documents); None when the context knows no run scores.
    run_scores: np.ndarray | None = None

    @property
    def size(self) -> int:
        return len(self.docnos)

    @property
    def sums(self) -> np.ndarray:
        # numpy types reductions of untyped arrays as Any
        return cast(np.ndarray, self.counts.sum(axis=1))

    @property
    def covered(self) -> np.ndarray:
        return cast(np.ndarray, (self.counts > 0).sum(axis=1))

    @property
    def nonquery(self) -> np.ndarray:
        """Σ_{t∉Q} c(t, d): analysed tokens that are not query terms."""
        return cast(np.ndarray, self.lengths - self.sums)

    def semantic(self, store: TextStore, vectors: TermVectors, similarity: Similarity,
                 key: str) -> tuple[np.ndarray, np.ndarray]:
        """(similarity of each document's non-query terms to the query, the n × n similarity
        between the documents' non-query terms), on average term embeddings; NaN where a
        side has no known word. The averages are kept (float32), the n × n matrix is not."""
        cache_key = "semantic:" + key
        if cache_key not in self._cache:
            analysed = [store.analyse(t) for t in self.texts]
            flat = _concat([a.ids for a in analysed])
            doc = np.repeat(np.arange(self.size), [a.ids.size for a in analysed])
            gid = _concat([store.vector_ids(t, vectors) for t in self.texts])
            keep = ~np.isin(flat, self.term_ids) & (gid >= 0)
            dims = vectors.vectors.shape[1]
            sums = np.zeros((self.size, dims))
            owners = doc[keep]                       # sorted: tokens come document by document
            if owners.size:
                starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
                sums[owners[starts]] = np.add.reduceat(
                    vectors.vectors[gid[keep]].astype(np.float64), starts, axis=0)
            n_known = np.bincount(owners, minlength=self.size)
            known = n_known > 0
            averages = np.zeros((self.size, dims))
            averages[known] = sums[known] / n_known[known, None]
            qids = store.vector_ids(self.query, vectors)
            qids = qids[qids >= 0]
            qvec = (vectors.vectors[qids].astype(np.float64).mean(axis=0) if qids.size
                    else np.zeros(dims))[None, :]
            to_query = np.asarray(similarity(averages, qvec), dtype=float)[:, 0]
            to_query[~known] = np.nan
            self._cache[cache_key] = (to_query, averages.astype(np.float32), known)
        to_query, averages, known = self._cache[cache_key]
        averages = averages.astype(np.float64)
        between = np.asarray(similarity(averages, averages), dtype=float)
        between[~known, :] = np.nan
        between[:, ~known] = np.nan
        return to_query, between


def _concat(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)


def build_features(store: TextStore, qid: str, query: str, docnos: list[str],
                   texts: list[str], grades: np.ndarray) -> QueryFeatures | None:
    """Features of one query's pool, or None when the query has no analysed term."""
    q = store.analyse(query)
    if q.ids.size == 0:
        return None
    term_ids = np.asarray(list(dict.fromkeys(q.ids.tolist())), dtype=np.int64)
    qtf_map = Counter(q.ids.tolist())
    qtf = np.array([qtf_map[t] for t in term_ids.tolist()], dtype=np.int64)
    analysed = [store.analyse(t) for t in texts]
    n, m = len(texts), term_ids.size
    lengths = np.fromiter((a.ids.size for a in analysed), dtype=np.int64, count=n)
    words = np.fromiter((a.words for a in analysed), dtype=np.int64, count=n)
    flat = _concat([a.ids for a in analysed])
    positions = _concat([a.positions for a in analysed])
    doc = np.repeat(np.arange(n), lengths)
    sorter = np.argsort(term_ids)
    ordered = term_ids[sorter]
    slot = np.minimum(np.searchsorted(ordered, flat), m - 1)
    hit = ordered[slot] == flat
    col = np.where(hit, sorter[slot], -1)
    counts = np.bincount(doc[hit] * m + col[hit], minlength=n * m).reshape(n, m)
    return QueryFeatures(qid=qid, query=query, docnos=docnos, texts=texts,
                         terms=[store.term(int(t)) for t in term_ids], term_ids=term_ids,
                         qtf=qtf, counts=counts.astype(np.int64), lengths=lengths, words=words,
                         grades=grades, gamma=_gamma(n, doc[hit], positions[hit], col[hit]))


def _gamma(n: int, doc: np.ndarray, pos: np.ndarray, col: np.ndarray) -> np.ndarray:
    """Γ per document from its query-term occurrences (document, position, term), in text
    order. The closest occurrences of two distinct terms are always adjacent in that order:
    anything between them differs from one of the two and would be closer still."""
    gamma = np.full(n, np.inf)
    if doc.size > 1:
        pair = (doc[1:] == doc[:-1]) & (col[1:] != col[:-1])
        np.minimum.at(gamma, doc[1:][pair], (pos[1:] - pos[:-1])[pair].astype(float))
    return gamma


@dataclass
class AxiomData:
    """What every axiom probe of one run shares: the pools' features and lazy resources."""

    options: AxiomOptions
    analyzer: Analyzer
    store: TextStore
    queries: list[QueryFeatures]
    skipped: Counter[str]
    _stats: Callable[[], Any]
    _cache: dict[str, Any] = field(default_factory=dict)

    def stats(self) -> Any:
        """CollectionStats (df, cf, N) under this analysis, computed on first use."""
        if "stats" not in self._cache:
            self._cache["stats"] = self._stats()
        return self._cache["stats"]

    def df(self, features: QueryFeatures) -> np.ndarray:
        stats = self.stats()
        return np.array([stats.df.get(t, 0) for t in features.terms], dtype=np.int64)


def axiom_data(context: ProbeContext, options: AxiomOptions) -> AxiomData:
    """The shared features for ``options`` (memoised on the context)."""
    analyzer = context.analyzer
    if options.stem is not None and options.stem != analyzer.stem:
        analyzer = Analyzer(stopwords=analyzer.stopwords, stem=options.stem)
    key = f"axioms:data:{options.features_key()}:{analyzer.signature}"
    return context.memo(key, lambda: _build(context, options, analyzer))


def _build(context: ProbeContext, options: AxiomOptions, analyzer: Analyzer) -> AxiomData:
    collection = context.collection
    skipped: Counter[str] = Counter()
    if options.pool == "judged":
        pools: dict[str, list[str]] = {}
        for qid, docno, _ in collection.judged():
            pools.setdefault(qid, []).append(docno)
        missing = collection.skipped.get("judged_without_text", 0)
        if missing:
            skipped["missing-text"] += missing
    else:
        pools = {qid: [d for d in docnos if d in collection.docs][:options.depth]
                 for qid, docnos in context.candidate_docnos().items()}
    run_scores = context.candidate_scores() if context.candidate_scores is not None else None
    store = TextStore(analyzer)
    queries: list[QueryFeatures] = []
    for qid in sorted(pools):
        docnos = pools[qid]
        if not docnos or qid not in collection.queries:
            continue
        judged = collection.qrels.get(qid, {})
        grades = np.array([judged.get(d, np.nan) for d in docnos], dtype=float)
        features = build_features(store, qid, collection.queries[qid], docnos,
                                  [collection.docs[d] for d in docnos], grades)
        if features is None:
            skipped["query-without-terms"] += 1
            continue
        if run_scores is not None:
            scored = run_scores.get(qid, {})
            features.run_scores = np.array([scored.get(d, np.nan) for d in docnos], dtype=float)
        queries.append(features)
    return AxiomData(options=options, analyzer=analyzer, store=store, queries=queries,
                     skipped=skipped, _stats=lambda: _collection_stats(context, analyzer))


def _collection_stats(context: ProbeContext, analyzer: Analyzer) -> Any:
    """The rankers' statistics when they use the same analysis, else our own pass."""
    env = context.ranker_env
    if env is not None and getattr(env, "analyzer", None) is not None \
            and env.analyzer.signature == analyzer.signature:
        return env.collection_stats()
    from abnirml.data.stats import CollectionStats

    return context.memo(f"axioms:stats:{analyzer.signature}",
                        lambda: CollectionStats.build(context.collection.doc_texts(), analyzer))
