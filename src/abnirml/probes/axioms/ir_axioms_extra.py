"""ir_axioms' retrieval axioms that our nine do not cover, as ``axiom:`` probes.

Each probe takes the preference matrix of :mod:`.ir_axioms_mining` for every query's pool
and keeps the pairs with preference 1 as instances (d1 = the preferred document), then
caps and tabulates them exactly like the nine (:class:`~.probe._TableBuilder`), so the
report's axiom tables, the relevance agreement and the per-query cap apply unchanged.

The per-query inputs (sequences, vocabulary sizes, idf, query-term similarities) are
derived once per query from the shared :class:`~.features.AxiomData` and kept on the
query's feature cache, so the twenty probes share them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from abnirml.probes.axioms.features import AxiomData, QueryFeatures, axiom_data
from abnirml.probes.axioms.ir_axioms_mining import DEFINITIONS, IraxQuery
from abnirml.probes.axioms.options import parse_options
from abnirml.probes.axioms.probe import _TableBuilder
from abnirml.probes.axioms.semantics import TermVectors, resolve_vectors
from abnirml.probes.base import ProbeContext, SampleTable, table_samples
from abnirml.types import Sample, Skip

#: LB1 needs the candidates' retrieval scores, which the candidate set does not carry;
#: its definition is checked against ir_axioms in the benchmark but it is not a probe yet.
NOT_PROBES = frozenset({"lb1"})


def irax_query(features: QueryFeatures, data: AxiomData, vectors: TermVectors | None
               ) -> IraxQuery:
    """ir_axioms' view of one query's pool (cached on the query's features)."""
    key = "irax" if vectors is None else f"irax:{id(vectors)}"
    cached = features._cache.get(key)
    if cached is not None:
        return cached
    store = data.store
    analysed = [store.analyse(t) for t in features.texts]
    query = store.analyse(features.query)
    stats = data.stats()
    df = data.df(features).astype(float)
    with np.errstate(divide="ignore"):
        idf = np.where(df > 0, np.log(stats.num_docs / np.maximum(df, 1)), 0.0)
    similarity = doc_similarity = None
    if vectors is not None:
        first = {int(t): query.surface[k] for k, t in
                 reversed(list(enumerate(query.ids.tolist())))}
        words = [first[int(t)] for t in features.term_ids.tolist()]
        units = _unit_rows(vectors, words)
        similarity = units @ units.T
        similarity = (similarity + similarity.T) / 2
        doc_similarity = np.array([_average_similarity(vectors, a.ids, a.surface, units)
                                   for a in analysed])
    built = IraxQuery(
        counts=features.counts, lengths=features.lengths,
        vocabulary=np.array([np.unique(a.ids).size for a in analysed], dtype=np.int64),
        sequences=[a.ids for a in analysed], query_sequence=query.ids,
        term_ids=features.term_ids, idf=idf, qtf=features.qtf, similarity=similarity,
        doc_query_similarity=doc_similarity)
    features._cache[key] = built
    return built


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
    return float(units.sum(axis=0) @ query_units.sum(axis=0)) / (first.size
                                                                 * query_units.shape[0])


@dataclass(frozen=True)
class IraxAxiomProbe:
    """One of ir_axioms' retrieval axioms (``axiom:<suffix>``), mined from each query's pool."""

    axiom: str
    family: str = "axiom"
    symmetric: bool = False

    @property
    def name(self) -> str:
        return f"axiom:{self.axiom}"

    @property
    def label(self) -> str:
        return DEFINITIONS[self.axiom][0]

    def preferences(self, features: QueryFeatures, data: AxiomData,
                    context: ProbeContext) -> np.ndarray:
        """The axiom's n × n preference matrix for one query's pool (1: row preferred)."""
        _, _, function, needs = DEFINITIONS[self.axiom]
        vectors = None
        if needs in ("similarity", "doc-similarity"):
            vectors = resolve_vectors(context.options.get("axiom_embeddings"))
        return function(irax_query(features, data, vectors))

    def sample_table(self, context: ProbeContext) -> SampleTable:
        opts = parse_options(context.options, context.grade_bands)
        data = axiom_data(context, opts)
        rng = context.rng(self.name)
        builder = _TableBuilder(self.axiom, opts, label=self.label)
        for q_pos, features in enumerate(data.queries):
            a, b = np.nonzero(self.preferences(features, data, context) > 0)
            found = (a.astype(np.int64), b.astype(np.int64))
            count = int(a.shape[0])
            if opts.cap is not None and count > opts.cap:
                pick = np.sort(rng.choice(count, size=opts.cap, replace=False))
                found = (found[0][pick], found[1][pick])
            builder.add(q_pos, features, found, count)
        return builder.build(data)

    def samples(self, context: ProbeContext) -> Iterator[Sample | Skip]:
        table = self.sample_table(context)
        for reason, count in table.skipped.items():
            for _ in range(count):
                yield Skip(reason)
        yield from table_samples(table)


def ir_axioms_probes() -> list[IraxAxiomProbe]:
    return [IraxAxiomProbe(axiom) for axiom in DEFINITIONS if axiom not in NOT_PROBES]

