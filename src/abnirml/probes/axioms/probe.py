"""The nine axiom probes: mine instances per query, cap them, and hand the engine a table.

Each instance is a sample whose ``doc1`` is the document the axiom prefers, so the engine's
``satisfied`` / ``violated`` / ``ties`` (strict) and ``*_delta`` (within the ranker's δ)
counts are the papers' "fraction of instances the model ranks correctly".

TFC2 compares score *differences* of a triple (d_i, d_j, d_k), fewest query-term matches
first: its table carries d_k as an extra document column and a ``combine`` hook, so the
engine's two per-sample scores are S(d_j) − S(d_i) and S(d_k) − S(d_j) and "d1 preferred"
reads "the first increase is the larger", exactly the axiom's claim.

For analyses, ``extra["features"]`` holds each query's :class:`~.features.QueryFeatures`
and ``extra["instances"]`` the arrays ``query`` (position in that list), ``a``, ``b`` (the
two documents' positions in the query's pool) and ``c`` (TFC2: d_k; LNC2: the factor k).

Besides the samples, each table reports (in ``extra["record"]``, copied into every result
record of the probe) the Câmara & Hauff Table 2 statistics: the uncapped instance count,
the instances holding a judged relevant document, and how many of those order their
documents the way the relevance grades do (unjudged documents count as grade 0).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from abnirml.probes.axioms import mining
from abnirml.probes.axioms.features import AxiomData, QueryFeatures, axiom_data
from abnirml.probes.axioms.options import AxiomOptions, axiom_settings
from abnirml.probes.axioms.semantics import GLOVE as GLOVE_NAME
from abnirml.probes.axioms.semantics import resolve_similarity, resolve_vectors
from abnirml.probes.base import KeyedProbe, ProbeContext, SampleTable, table_samples
from abnirml.probes.family import GLOVE, Requirement
from abnirml.samples import Sample, Skip

Instances = tuple[np.ndarray, ...]


@dataclass(frozen=True)
class Axiom:
    """One axiom as an object (as ir_axioms models them): what it claims, which instances
    qualify, and how to find them among a query's documents.

    ``shape`` says what an instance is: ``pair`` (d1 favoured over d2), ``triple`` (TFC2:
    three documents whose score differences are compared) or ``duplicate`` (LNC2: a
    document and itself repeated k times). ``find(features, data, context)`` returns index
    arrays into the query's pool; settings come from ``data.options``
    (:class:`~.options.AxiomOptions`). ``meta(features, a, b)`` adds per-instance metadata.
    """

    key: str
    label: str
    claim: str
    precondition: str
    find: Callable[[QueryFeatures, AxiomData, ProbeContext], Instances]
    shape: str = "pair"
    meta: Callable[[QueryFeatures, int, int], dict[str, Any]] | None = None
    #: whether ``find`` compares term embeddings (the packaged GloVe unless axiom.embeddings)
    term_vectors: bool = False

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled by key, as the registered axiom it is (a table built in a worker process
        is handed back with its metadata view); any other axiom cannot be pickled."""
        if registered_axiom(self.key) is not self:
            import pickle

            raise pickle.PicklingError(f"axiom {self.key} is not a registered axiom")
        return (registered_axiom, (self.key,))


#: the module holding ir_axioms' axioms (``IRAX_AXIOMS``), which imports this one
IR_AXIOMS_MODULE = "abnirml.probes.axioms.ir_axioms_extra"


def registered_axiom(key: str) -> Axiom | None:
    """The built-in axiom (or ir_axioms' axiom) of ``key``, or None."""
    found = AXIOM_BY_KEY.get(key)
    if found is None:
        import importlib

        found = importlib.import_module(IR_AXIOMS_MODULE).IRAX_AXIOMS.get(key)
    return found


def _semantic(f: QueryFeatures, data: AxiomData, context: ProbeContext
              ) -> tuple[np.ndarray, np.ndarray]:
    vectors = resolve_vectors(axiom_settings(context).embeddings)
    sim_name, similarity = resolve_similarity(axiom_settings(context).similarity)
    return f.semantic(data.store, vectors, similarity, f"{vectors.name}:{sim_name}")


def _lnc2(f: QueryFeatures, data: AxiomData, context: ProbeContext) -> Instances:
    opts = data.options
    ks = np.asarray(opts.duplication_factors, dtype=np.int64)
    docs = np.repeat(np.arange(f.size), ks.size)
    factors = np.tile(ks, f.size)
    if opts.lnc2_max_length is not None:
        keep = f.words[docs] * factors <= opts.lnc2_max_length
        docs, factors = docs[keep], factors[keep]
    return docs, factors


def _gammas(f: QueryFeatures, a: int, b: int) -> dict[str, Any]:
    return {"gamma1": float(f.gamma[a]), "gamma2": float(f.gamma[b])}


AXIOM_LIST: tuple[Axiom, ...] = (
    Axiom("rennings-tfc1", "TFC1 (Rennings et al.)", "S(d1) > S(d2)",
          "lengths within δ_len; d1 holds every query term at least as often as d2, and "
          "query terms more often in total",
          lambda f, data, _: mining.tfc1(f.counts, f.lengths, data.options.length_tolerance)),
    Axiom("tfc2", "TFC2", "S(d2) − S(d1) > S(d3) − S(d2)",
          "three documents of lengths within δ_len whose query-term counts grow by the same "
          "step from d1 to d2 to d3",
          lambda f, data, _: mining.tfc2(f.counts, f.lengths, data.options.length_tolerance),
          shape="triple"),
    Axiom("rennings-m-tdc", "M-TDC (Rennings et al.)", "S(d1) ≥ S(d2)",
          "lengths within δ_len and equal query-term totals; where counts differ, d1 holds "
          "the rarer (higher-idf) term of a swapped pair more often",
          lambda f, data, _: mining.m_tdc(f.counts, f.lengths, data.options.length_tolerance,
                                          data.df(f), f.qtf)),
    Axiom("camara-lnc1", "LNC1 (Câmara & Hauff)", "S(d1) ≥ S(d2)",
          "identical query-term counts; d2 is longer (more non-query terms)",
          lambda f, _data, _ctx: mining.lnc1(f.counts, f.lengths)),
    Axiom("lnc2", "LNC2", "S(d1) ≥ S(d2)",
          "d1 is d2 repeated k times (k from axiom.lnc2_k, up to axiom.lnc2_max_length words)",
          _lnc2, shape="duplicate"),
    Axiom("tp", "TP", "S(d1) > S(d2)",
          "identical query-term counts, lengths within δ_len, both hold two distinct query "
          "terms; d1's closest pair of them is nearer together (only proximity differs)",
          lambda f, data, _: mining.tp(f.gamma, f.counts, f.lengths,
                                       data.options.length_tolerance), meta=_gammas),
    Axiom("tp-relaxed", "TP (relaxed)", "S(d1) > S(d2)",
          "both hold two distinct query terms; d1's closest pair of them is nearer together "
          "(term counts and lengths may differ)",
          lambda f, _data, _ctx: mining.tp_relaxed(f.gamma), meta=_gammas),
    Axiom("camara-stmc1", "STMC1 (Câmara & Hauff)", "S(d1) > S(d2)",
          "both cover the same number of distinct query terms; d1's other terms are more "
          "similar to the query",
          lambda f, data, ctx: mining.stmc1(f.covered, _semantic(f, data, ctx)[0]),
          term_vectors=True),
    Axiom("camara-stmc2", "STMC2 (Câmara & Hauff)", "S(d1) ≥ S(d2)",
          "the non-query parts of d1 and d2 are similar (> axiom.stmc2_threshold) and d2 has "
          "more related non-query terms than d1 has query-term matches",
          lambda f, data, ctx: mining.stmc2(f.sums, f.nonquery, _semantic(f, data, ctx)[1],
                                            data.options.stmc2_threshold),
          term_vectors=True),
    Axiom("stmc3", "STMC3", "S(d1) > S(d2)",
          "same number of distinct query terms, lengths within δ_len; d1 has more query-term "
          "occurrences while d2's other terms are more similar to the query",
          lambda f, data, ctx: mining.stmc3(f.covered, f.sums, f.lengths,
                                            data.options.length_tolerance,
                                            _semantic(f, data, ctx)[0]),
          term_vectors=True),
)
#: Probe suffix (``axiom:<key>``) → its axiom, in the order the report lists them.
AXIOM_BY_KEY: dict[str, Axiom] = {a.key: a for a in AXIOM_LIST}


def tfc2_differences(scores: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """TFC2's engine hook: (S(d_j) − S(d_i), S(d_k) − S(d_j)) from the three scores."""
    s_i, s_j, s_k = scores
    return s_j - s_i, s_k - s_j


def duplicate(text: str, k: int) -> str:
    """``text`` appended to itself k − 1 times (LNC2): every term count multiplied by k."""
    return "\n".join([text] * k)


@dataclass(frozen=True)
class AxiomProbe(KeyedProbe):
    """One axiomatic diagnostic dataset (``axiom:<suffix>``), mined from each query's pool."""

    family: ClassVar[str] = "axiom"

    axiom: str

    @property
    def suffix(self) -> str:
        return self.axiom

    @property
    def label(self) -> str:
        return AXIOM_BY_KEY[self.axiom].label

    @property
    def prefers(self) -> str | None:
        """``"doc1"``, the document the axiom favours; None for TFC2, which compares score
        differences of three documents and has no single pair."""
        return None if self.axiom == "tfc2" else "doc1"

    @property
    def definition(self) -> Axiom:
        return AXIOM_BY_KEY[self.axiom]

    @property
    def uses_term_vectors(self) -> bool:
        """Whether the axiom compares term embeddings (Câmara & Hauff's STMC1–3)."""
        return self.definition.term_vectors

    def missing_for(self, settings: Any) -> Requirement | None:
        """The optional dependency this probe lacks under the run's ``settings``: an axiom
        that compares term embeddings reads the packaged GloVe vectors unless
        ``axiom.embeddings`` hands it others, so it needs them only then."""
        if not self.uses_term_vectors:
            return None
        embeddings = getattr(settings.get("axiom"), "embeddings", None)
        if embeddings is not None and embeddings != GLOVE_NAME:
            return None
        return GLOVE if GLOVE.missing() else None

    def mine(self, features: QueryFeatures, data: AxiomData, context: ProbeContext
             ) -> Instances:
        """Index arrays into the query's pool (LNC2: the document and its factor k)."""
        return self.definition.find(features, data, context)

    def sample_table(self, context: ProbeContext) -> SampleTable:
        opts = axiom_settings(context)
        data = axiom_data(context, opts)
        rng = context.rng(self.name)
        cap = opts.instance_cap
        builder = _TableBuilder(self.definition, opts,
                                opts.relevant_grade_in(context.grade_bands))
        for q_pos, features in enumerate(data.queries):
            found = self.mine(features, data, context)
            count = int(found[0].shape[0])
            if cap is not None and count > cap:
                pick = np.sort(rng.choice(count, size=cap, replace=False))
                found = tuple(a[pick] for a in found)
            builder.add(q_pos, features, found, count)
        return builder.build(data)

    def samples(self, context: ProbeContext) -> Iterator[Sample | Skip]:
        table = self.sample_table(context)
        for reason, count in table.skipped.items():
            for _ in range(count):
                yield Skip(reason)
        yield from table_samples(table)


class _TableBuilder:
    """Accumulates capped instances of all queries into one SampleTable."""

    def __init__(self, axiom: Axiom, options: AxiomOptions, relevant_grade: int):
        self.axiom = axiom
        self.options = options
        self.relevant_grade = relevant_grade
        self.pool: dict[str, int] = {}
        self.parts: dict[str, list[np.ndarray]] = {k: [] for k in
                                                   ("q", "d1", "d2", "d3", "o", "a", "b", "c")}
        self.uncapped = 0
        self.relevant = 0
        self.agree = 0
        self.disagree = 0       # the judgments order the documents against the axiom
        self.tie = 0            # equal grades: the judgments do not order them at all
        self.queries_with_instances = 0

    def _intern(self, texts: Sequence[str]) -> np.ndarray:
        pool = self.pool
        return np.fromiter((pool.setdefault(t, len(pool)) for t in texts), dtype=np.int64,
                           count=len(texts))

    def add(self, q_pos: int, f: QueryFeatures, found: Instances, uncapped: int) -> None:
        self.uncapped += uncapped
        n = int(found[0].shape[0])
        if n == 0:
            return
        self.queries_with_instances += 1
        q_index = self._intern([f.query])[0]
        doc_index = self._intern(f.texts)
        thr = self.relevant_grade
        grades = f.grades
        if self.axiom.shape == "duplicate":
            docs, factors = found
            d1 = self._intern([duplicate(f.texts[d], int(k))
                               for d, k in zip(docs.tolist(), factors.tolist(), strict=True)])
            self.parts["d1"].append(d1)
            self.parts["d2"].append(doc_index[docs])
            self.parts["a"].append(docs)
            self.parts["b"].append(docs)
            self.parts["c"].append(factors)
            self.relevant += int((grades[docs] >= thr).sum())
        else:
            a, b = found[0], found[1]
            self.parts["d1"].append(doc_index[a])
            self.parts["d2"].append(doc_index[b])
            self.parts["a"].append(a)
            self.parts["b"].append(b)
            g = np.nan_to_num(grades, nan=0.0)
            involved = [a, b] if len(found) == 2 else [a, b, found[2]]
            has_relevant = np.zeros(n, dtype=bool)
            for idx in involved:
                has_relevant |= grades[idx] >= thr
            if len(found) == 3:
                c = found[2]
                self.parts["d3"].append(doc_index[c])
                self.parts["c"].append(c)
                order = (g[b] - g[a]) - (g[c] - g[b])
            else:
                order = g[a] - g[b]
            self.relevant += int(has_relevant.sum())
            self.agree += int((has_relevant & (order > 0)).sum())
            self.disagree += int((has_relevant & (order < 0)).sum())
            self.tie += int((has_relevant & (order == 0)).sum())
        self.parts["q"].append(np.full(n, q_index, dtype=np.int64))
        self.parts["o"].append(np.full(n, q_pos, dtype=np.int64))

    def build(self, data: AxiomData) -> SampleTable:
        # text references are int64 (the engine's type); positions within a query's pool
        # fit int32, which halves the memory of millions of instances
        cols = {k: (np.concatenate(v) if v else np.zeros(0, dtype=np.int64)).astype(
                    np.int64 if k in ("q", "d1", "d2", "d3") else np.int32)
                for k, v in self.parts.items()}
        n = int(cols["q"].shape[0])
        triple = self.axiom.shape == "triple"
        duplicates = self.axiom.shape == "duplicate"
        agreement = decided = None
        if not duplicates:
            agreement = round(self.agree / self.relevant, 6) if self.relevant else None
            both = self.agree + self.disagree
            decided = round(self.agree / both, 6) if both else None
        record = {
            "instances": n, "instances_uncapped": self.uncapped,
            "instances_relevant": self.relevant,
            "relevance_agree": None if duplicates else self.agree,
            "relevance_agreement": agreement,
            # Câmara & Hauff's single-relevant setting: equal grades are neither agreement
            # nor disagreement, so they are counted apart and left out of the decided share
            "relevance_disagree": None if duplicates else self.disagree,
            "relevance_ties": None if duplicates else self.tie,
            "relevance_agreement_decided": decided,
            "axiom_queries": len(data.queries),
            "axiom_queries_with_instances": self.queries_with_instances,
            "axiom_pool": self.options.pool,
            "length_tolerance": self.options.length_tolerance_label,
        }
        return SampleTable(
            texts=list(self.pool), query=cols["q"], doc1=cols["d1"], doc2=cols["d2"],
            grade=np.full(n, np.nan), skipped=Counter(data.skipped),
            meta=_MetaView(self.axiom, data.queries, cols),
            extra={"record": record, "axiom": self.axiom.label,
                   "features": data.queries,
                   "instances": {"query": cols["o"], "a": cols["a"], "b": cols["b"],
                                 "c": cols["c"]}},
            more_docs=(cols["d3"],) if triple else (),
            combine=tfc2_differences if triple else None)


class _MetaView:
    """Rebuilds one sample's metadata on demand (keeps millions of samples cheap)."""

    def __init__(self, axiom: Axiom, queries: list[QueryFeatures], cols: dict[str, np.ndarray]):
        self.axiom = axiom
        self.queries = queries
        self.cols = cols

    def __call__(self, index: int) -> dict[str, Any]:
        f = self.queries[int(self.cols["o"][index])]
        a, b = int(self.cols["a"][index]), int(self.cols["b"][index])
        sums = f.sums
        meta: dict[str, Any] = {"qid": f.qid, "axiom": self.axiom.label,
                                "docno1": f.docnos[a], "docno2": f.docnos[b],
                                "grade1": _grade(f, a), "grade2": _grade(f, b),
                                "length1": int(f.lengths[a]), "length2": int(f.lengths[b]),
                                "sumtf1": int(sums[a]), "sumtf2": int(sums[b])}
        if self.axiom.shape == "duplicate":
            k = int(self.cols["c"][index])
            meta.update(k=k, length1=k * int(f.lengths[a]), sumtf1=k * int(sums[a]))
        elif self.axiom.shape == "triple":
            c = int(self.cols["c"][index])
            meta.update(docno3=f.docnos[c], grade3=_grade(f, c), length3=int(f.lengths[c]),
                        sumtf3=int(sums[c]), doc3=f.texts[c],
                        scores="S(d2) − S(d1), S(d3) − S(d2)")
        if self.axiom.meta is not None:
            meta.update(self.axiom.meta(f, a, b))
        return meta


def _grade(f: QueryFeatures, i: int) -> int | None:
    g = f.grades[i]
    return None if np.isnan(g) else int(g)


def all_axiom_probes() -> list[AxiomProbe]:
    return [AxiomProbe(axiom.key) for axiom in AXIOM_LIST]
