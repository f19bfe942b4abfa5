"""ir_axioms' retrieval axioms that our nine do not cover, as ``axiom:`` probes.

Each is an :class:`~.probe.Axiom` object like the nine: its finder takes the preference
matrix of :mod:`.ir_axioms_mining` for a query's pool and keeps the pairs with preference 1
as instances (d1 = the preferred document); the shared probe then caps and tabulates them
exactly like the nine, so the report's axiom tables, the relevance agreement and the
per-query cap apply unchanged.

The per-query inputs (sequences, vocabulary sizes, idf, query-term similarities) are
derived once per query from the shared :class:`~.features.AxiomData` and kept on the
query's feature cache, so the twenty-one probes share them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from abnirml.probes.axioms.features import AnalysedText, AxiomData, QueryFeatures
from abnirml.probes.axioms.ir_axioms_mining import DEFINITIONS, IraxQuery
from abnirml.probes.axioms.options import axiom_settings
from abnirml.probes.axioms.probe import Axiom, AxiomProbe
from abnirml.probes.axioms.semantics import TermVectors, resolve_vectors
from abnirml.probes.base import ProbeContext

#: Suffixes of :data:`DEFINITIONS` that are compared in the benchmark but not probes.
NOT_PROBES: frozenset[str] = frozenset()


def irax_query(features: QueryFeatures, data: AxiomData, vectors: TermVectors | None
               ) -> IraxQuery:
    """ir_axioms' view of one query's pool (cached on the query's features)."""
    key = "irax" if vectors is None else f"irax:{id(vectors)}"
    cached: IraxQuery | None = features._cache.get(key)
    if cached is not None:
        return cached
    store = data.store
    analysed = [store.analyse(t) for t in features.texts]
    query = store.analyse(features.query)
    stats = data.stats()
    df = data.df(features).astype(float)
    with np.errstate(divide="ignore"):
        idf = np.where(df > 0, np.log(stats.num_docs / np.maximum(df, 1)), 0.0)
    similarity = doc_similarity = max_pairs = None
    if vectors is not None:
        first = {int(t): query.surface[k] for k, t in
                 reversed(list(enumerate(query.ids.tolist())))}
        words = [first[int(t)] for t in features.term_ids.tolist()]
        units = _unit_rows(vectors, words)
        similarity = units @ units.T
        similarity = (similarity + similarity.T) / 2
        doc_similarity = np.array([_average_similarity(vectors, a.ids, a.surface, units)
                                   for a in analysed])
        max_pairs = _max_similarity_pairs(vectors, analysed, features.term_ids, units)
    built = IraxQuery(
        counts=features.counts, lengths=features.lengths,
        vocabulary=np.array([np.unique(a.ids).size for a in analysed], dtype=np.int64),
        sequences=[a.ids for a in analysed], query_sequence=query.ids,
        term_ids=features.term_ids, idf=idf, qtf=features.qtf, similarity=similarity,
        scores=_run_scores(features), doc_query_similarity=doc_similarity,
        max_similarity_pairs=max_pairs, grades=features.grades)
    features._cache[key] = built
    return built


def _with_sentence_lengths(query: IraxQuery, features: QueryFeatures, data: AxiomData
                           ) -> IraxQuery:
    """``query`` with each document's mean analysed terms per sentence (aSL), computed on
    first use only: splitting and analysing every sentence is wasted on the other axioms."""
    if query.sentence_lengths is None:
        from abnirml.text.tokenize import sentences

        lengths = []
        for text in features.texts:
            parts = sentences(text)
            lengths.append(float(np.mean([data.store.analyse(p).ids.size for p in parts]))
                           if parts else np.nan)
        query.sentence_lengths = np.array(lengths, dtype=float)
    return query


def _run_scores(features: QueryFeatures) -> np.ndarray:
    """The candidate run's scores (LB1's retrieval scores); all NaN when the run's scores
    are unknown, so LB1 then prefers nothing rather than guessing a score."""
    if features.run_scores is None:
        return np.full(features.size, np.nan)
    return features.run_scores


def _unit_rows(vectors: TermVectors, words: list[str]) -> np.ndarray:
    """Unit vectors of ``words`` (zero rows for unknown words: similarity 0)."""
    ids = vectors.ids(words)
    out = np.zeros((len(words), vectors.vectors.shape[1]))
    known = ids >= 0
    rows = vectors.vectors[ids[known]].astype(np.float64)
    out[known] = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
    return out


def _average_similarity(vectors: TermVectors, ids: np.ndarray, surface: tuple[str, ...],
                        query_units: np.ndarray) -> float:
    """Mean similarity over all (distinct document term, distinct query term) pairs."""
    if ids.size == 0 or query_units.shape[0] == 0:
        return 0.0
    _, first = np.unique(ids, return_index=True)
    units = _unit_rows(vectors, [surface[k] for k in first.tolist()])
    mean: float = float(units.sum(axis=0) @ query_units.sum(axis=0)) / (first.size
                                                                        * query_units.shape[0])
    return mean


def _max_similarity_pairs(vectors: TermVectors, analysed: list[AnalysedText],
                          query_terms: np.ndarray,
                          query_units: np.ndarray
                          ) -> list[tuple[float, np.ndarray, np.ndarray]]:
    """Per document, the most similar (query term, non-query term) pairs and their
    similarity (−inf and no pairs for a document without non-query terms).

    Each term is embedded by its first surface form in the pool, so a term has one vector
    however its documents spell it; the pool's similarity matrix is computed once.
    """
    surface: dict[int, str] = {}
    for a in analysed:
        for term, word in zip(a.ids.tolist(), a.surface, strict=True):
            surface.setdefault(term, word)
    vocabulary = np.array(sorted(set(surface) - set(query_terms.tolist())), dtype=np.int64)
    similarity = query_units @ _unit_rows(vectors, [surface[t] for t in vocabulary.tolist()]).T
    out = []
    for a in analysed:
        own = np.setdiff1d(np.unique(a.ids), query_terms)
        if own.size == 0 or query_terms.size == 0:
            out.append((-np.inf, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)))
            continue
        block = similarity[:, np.searchsorted(vocabulary, own)]
        best = float(block.max())
        rows, columns = np.nonzero(block >= best)
        out.append((best, rows.astype(np.int64), own[columns]))
    return out


def _query_for(needs: str, features: QueryFeatures, data: AxiomData, context: ProbeContext
               ) -> IraxQuery:
    """The query's view with what an axiom of these ``needs`` reads."""
    vectors = None
    if needs in ("similarity", "doc-similarity"):
        vectors = resolve_vectors(axiom_settings(context).embeddings)
    query = irax_query(features, data, vectors)
    return _with_sentence_lengths(query, features, data) if needs == "sentences" else query


def _finder(key: str
            ) -> Callable[[QueryFeatures, AxiomData, ProbeContext], tuple[np.ndarray, np.ndarray]]:
    """An :class:`~.probe.Axiom` finder: the pairs whose ir_axioms preference is 1."""
    _, _, function, needs = DEFINITIONS[key]

    def find(features: QueryFeatures, data: AxiomData, context: ProbeContext
             ) -> tuple[np.ndarray, np.ndarray]:
        a, b = np.nonzero(function(_query_for(needs, features, data, context)) > 0)
        return a.astype(np.int64), b.astype(np.int64)

    return find


#: Probe suffix → what ir_axioms 1.2.5 prefers, in words (the precondition column of
#: ``abnirml probes``).
PRECONDITIONS: dict[str, str] = {
    "ir-tfc1": "lengths within 10 %: d1's query terms' relative frequencies sum higher, not "
               "within 10 %",
    "ir-lnc1": "every query term's relative frequency within 10 %: d1 has fewer terms",
    "asl": "lengths within 10 %: d1's average sentence length is 12–20 terms, d2's not",
    "orig": "d1 has the higher candidate-run score (both scored by the run)",
    "oracle": "d1 has the higher relevance grade (both judged)",
    "tfc3": "lengths within 10 %; two query terms of idf within 10 %: d1 holds both, d2 one "
            "of them with their combined relative frequency",
    "ir-m-tdc": "equal relative query-term totals; d1 holds more of the rarer term of valid "
                "term pairs",
    "len-m-tdc": "as ir-m-tdc, lengths within 10 %",
    "tf-lnc": "per query term at equal numbers of other terms: d1 holds more of it",
    "lb1": "candidate-run scores within 10 %: d1 holds a query term d2 lacks, and not "
           "vice versa",
    "prox1": "same query-term subset (≥ 2 terms): d1's first occurrences are closer on average",
    "prox2": "same query-term subset: d1's query terms first occur earlier",
    "prox3": "same query-term subset: d1 holds the whole query as a phrase earlier",
    "prox4": "both hold every query term: fewer non-query terms inside d1's tightest group, "
             "then more such groups",
    "prox5": "both hold every query term: d1's occurrence groups span less on average",
    "reg": "lengths within 10 %: d1 holds more of every least similar query term",
    "anti-reg": "lengths within 10 %: d1 holds more of every most similar query term",
    "aspect-reg": "query terms' idf within 10 %: d1 holds some query term, d2 none",
    "and": "d1 holds every query term, d2 not",
    "len-and": "as and, lengths within 10 %",
    "m-and": "d1 holds more distinct query terms",
    "len-m-and": "as m-and, lengths within 10 %",
    "div": "d1's vocabulary overlaps the query less (Jaccard)",
    "len-div": "as div, lengths within 10 %",
    "ir-stmc1": "d1's distinct terms are on average more similar to the query's",
    "ir-stmc2": "for the most similar (query term, non-query term) pairs: tf(non-query term, "
                "d2) / tf(query term, d1) within 20 % of |d2| / |d1|",
}

IRAX_AXIOMS: dict[str, Axiom] = {
    key: Axiom(key, label, claim, PRECONDITIONS[key], _finder(key))
    for key, (label, claim, _, _) in DEFINITIONS.items() if key not in NOT_PROBES
}


@dataclass(frozen=True)
class IraxAxiomProbe(AxiomProbe):
    """One of ir_axioms' retrieval axioms (``axiom:<suffix>``), mined from each query's pool."""

    @property
    def label(self) -> str:
        return DEFINITIONS[self.axiom][0]

    @property
    def definition(self) -> Axiom:
        return IRAX_AXIOMS[self.axiom]

    @property
    def uses_term_vectors(self) -> bool:
        return DEFINITIONS[self.axiom][3] in ("similarity", "doc-similarity")

    def preferences(self, features: QueryFeatures, data: AxiomData,
                    context: ProbeContext) -> np.ndarray:
        """The axiom's n × n preference matrix for one query's pool (1: row preferred)."""
        _, _, function, needs = DEFINITIONS[self.axiom]
        return function(_query_for(needs, features, data, context))


def ir_axioms_probes() -> list[IraxAxiomProbe]:
    return [IraxAxiomProbe(axiom) for axiom in IRAX_AXIOMS]
