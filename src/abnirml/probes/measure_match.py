"""Measure-and-Match probes (ABNIRML §4, Table 1).

Every judged (query, document) pair of the collection is measured on five
characteristics — relevance grade, length, per-term TF, Sum-TF and overlap — and, within
each query, documents are paired when a *control* characteristic matches while a
*variable* differs. d1 is the document with the higher variable, so a positive score means
the ranker prefers the higher value.

Definitions (analysed terms = lowercased, stopped, Porter-stemmed):

* length — number of non-stopword tokens;
* TF — the vector of each distinct query term's frequency; a document is *higher* when it is
  ≥ on every query term and > on at least one (no pair when neither dominates);
* Sum-TF — the sum of that vector;
* overlap — Sum-TF / length (compared exactly as fractions). A document without any query
  term (overlap 0) takes no part in a pair where overlap is the control or the variable,
  as in the original ABNIRML code ("don't do 0s"): two such documents share no query
  term at all rather than the same share of it, and the paper's Table 1 is built that way
  (its Length | Overlap and Sum-TF | Overlap rows are the same 3,963 pairs, which holds
  only when zero-overlap documents are left out).

Controls match exactly by default; the ``mmp.tolerance`` option (a number, or a mapping
from control name to number) allows a tolerance, e.g. ``{"length": 2}`` pairs documents
whose lengths differ by at most 2. TF with Sum-TF (either way round) is omitted: TF
dominance always changes Sum-TF, so such pairs cannot exist.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np

from abnirml.errors import ConfigError
from abnirml.probes.base import KeyedProbe, ProbeContext, SampleTable, table_samples
from abnirml.samples import Sample, Skip
from abnirml.settings import setting

CHARACTERISTICS = ("relevance", "length", "tf", "sumtf", "overlap")
def _checked_tolerance(value: Any, key: str) -> Any:
    """A number ≥ 0, or a mapping control → number ≥ 0."""
    items = value.items() if isinstance(value, Mapping) else [(None, value)]
    for control, raw in items:
        where = key if control is None else f"{key}[{control}]"
        try:
            number = float(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: {raw!r} is not a number") from None
        if not math.isfinite(number) or number < 0:
            raise ConfigError(f"{where} must be a finite number ≥ 0, got {raw!r}")
    return value


@dataclass(frozen=True)
class MeasureMatchOptions:
    tolerance: Any = setting(0, check=_checked_tolerance,
                             help="how far the controlled measure may differ (number, or a "
                                  "mapping control → number; default 0, exact match)")


LABELS = {"relevance": "Relevance", "length": "Length", "tf": "TF", "sumtf": "Sum-TF",
          "overlap": "Overlap"}
_IMPOSSIBLE = {("tf", "sumtf"), ("sumtf", "tf")}


@dataclass
class _QueryMeasures:
    qid: str
    query_index: int
    doc_index: np.ndarray   # into the text pool
    docnos: list[str]
    grade: np.ndarray       # int
    length: np.ndarray      # int
    tf: np.ndarray          # int, (docs, query terms)
    sumtf: np.ndarray       # int


@dataclass
class _Measured:
    texts: list[str]
    queries: list[_QueryMeasures]
    skipped: Counter[str]


def measure_collection(context: ProbeContext) -> _Measured:
    """Measure every judged pair once (shared by all MMP probes through the context memo)."""

    def build() -> _Measured:
        collection = context.collection
        analyze = context.analyzer.analyze_cached
        pool: dict[str, int] = {}
        by_query: dict[str, list[tuple[str, int]]] = {}
        for qid, docno, grade in collection.judged():
            by_query.setdefault(qid, []).append((docno, grade))
        skipped: Counter[str] = Counter()
        missing = collection.skipped.get("judged_without_text", 0)
        if missing:
            skipped["missing-text"] = missing
        measured: list[_QueryMeasures] = []
        for qid in sorted(by_query):
            query_text = collection.queries[qid]
            qterms = context.analyzer.query_terms(query_text)
            if not qterms:
                skipped["query-without-terms"] += len(by_query[qid])
                continue
            q_index = pool.setdefault(query_text, len(pool))
            docs = by_query[qid]
            tf = np.zeros((len(docs), len(qterms)), dtype=np.int64)
            length = np.zeros(len(docs), dtype=np.int64)
            term_col = {t: k for k, t in enumerate(qterms)}
            for row, (docno, _) in enumerate(docs):
                tokens = analyze(collection.docs[docno])
                length[row] = len(tokens)
                for token in tokens:
                    col = term_col.get(token)
                    if col is not None:
                        tf[row, col] += 1
            doc_index = np.array([pool.setdefault(collection.docs[d], len(pool)) for d, _ in docs],
                                 dtype=np.int64)
            measured.append(_QueryMeasures(
                qid=qid, query_index=q_index, doc_index=doc_index,
                docnos=[d for d, _ in docs], grade=np.array([g for _, g in docs], dtype=np.int64),
                length=length, tf=tf, sumtf=tf.sum(axis=1)))
        return _Measured(list(pool), measured, skipped)

    return context.memo("mmp:measures", build)


def _tolerance(context: ProbeContext, control: str) -> float:
    raw = context.family_options("mmp", MeasureMatchOptions).tolerance
    if isinstance(raw, Mapping):
        raw = raw.get(control, 0)
    return float(raw)


def _control_mask(m: _QueryMeasures, control: str, tol: float) -> np.ndarray:
    if control == "tf":
        diff = np.abs(m.tf[:, None, :] - m.tf[None, :, :])
        # numpy types element-wise results of untyped arrays as Any
        return cast(np.ndarray, (diff <= tol).all(axis=2))
    if control == "overlap":
        if tol == 0:
            return cast(np.ndarray, (_overlap_cmp(m) == 0) & _both_overlap(m))
        ratio = np.divide(m.sumtf, m.length, out=np.zeros(len(m.length)), where=m.length > 0)
        return cast(np.ndarray, (np.abs(ratio[:, None] - ratio[None, :]) <= tol) & _both_overlap(m))
    values = {"relevance": m.grade, "length": m.length, "sumtf": m.sumtf}[control]
    return cast(np.ndarray, np.abs(values[:, None] - values[None, :]) <= tol)


def _both_overlap(m: _QueryMeasures) -> np.ndarray:
    """Pairs whose two documents both hold a query term (overlap > 0)."""
    some = (m.sumtf > 0) & (m.length > 0)
    return some[:, None] & some[None, :]


def _overlap_cmp(m: _QueryMeasures) -> np.ndarray:
    """sign(overlap_i − overlap_j), computed exactly by cross-multiplication."""
    length = np.where(m.length > 0, m.length, 1)
    return cast(np.ndarray,
                np.sign(m.sumtf[:, None] * length[None, :] - m.sumtf[None, :] * length[:, None]))


def _higher_mask(m: _QueryMeasures, variable: str) -> np.ndarray:
    if variable == "tf":
        ge = (m.tf[:, None, :] >= m.tf[None, :, :]).all(axis=2)
        gt = (m.tf[:, None, :] > m.tf[None, :, :]).any(axis=2)
        return np.asarray(ge & gt)
    if variable == "overlap":
        return cast(np.ndarray, (_overlap_cmp(m) > 0) & _both_overlap(m))
    values = {"relevance": m.grade, "length": m.length, "sumtf": m.sumtf}[variable]
    return values[:, None] > values[None, :]


#: Variables whose higher value a good ranker should prefer (training-triple export).
DIRECTED = ("relevance", "tf", "sumtf", "overlap")


class _PairMeta:
    """Rebuilds one sample's metadata on demand from its query's measures (a plain object,
    so a table built in a worker process can be handed back)."""

    def __init__(self, queries: Any, first: np.ndarray, second: np.ndarray,
                 owner: np.ndarray):
        self.queries = queries
        self.first = first
        self.second = second
        self.owner = owner

    def __call__(self, index: int) -> dict[str, Any]:
        m = self.queries[self.owner[index]]
        a, b = int(self.first[index]), int(self.second[index])
        return {"qid": m.qid, "docno1": m.docnos[a], "docno2": m.docnos[b],
                "grade1": int(m.grade[a]), "grade2": int(m.grade[b]),
                "length1": int(m.length[a]), "length2": int(m.length[b]),
                "sumtf1": int(m.sumtf[a]), "sumtf2": int(m.sumtf[b])}


@dataclass(frozen=True)
class MeasureMatchProbe(KeyedProbe):
    """Pairs judged documents of a query that match on ``control`` and differ on ``variable``."""

    family: ClassVar[str] = "mmp"

    variable: str
    control: str

    @property
    def suffix(self) -> str:
        return f"{self.variable}:{self.control}"

    @property
    def label(self) -> tuple[str, str]:
        return LABELS[self.variable], LABELS[self.control]

    @property
    def prefers(self) -> str | None:
        """``"doc1"``, the more relevant / more query-matching document, when the variable
        makes that claim (:data:`DIRECTED`); None for length, which makes none."""
        return "doc1" if self.variable in DIRECTED else None

    def sample_table(self, context: ProbeContext) -> SampleTable:
        measured = measure_collection(context)
        tol = _tolerance(context, self.control)
        parts: dict[str, list[np.ndarray]] = {k: [] for k in ("q", "d1", "d2", "i", "j", "o")}
        for q_pos, m in enumerate(measured.queries):
            mask = _control_mask(m, self.control, tol) & _higher_mask(m, self.variable)
            np.fill_diagonal(mask, False)
            i, j = np.nonzero(mask)
            parts["q"].append(np.full(i.shape[0], m.query_index, dtype=np.int64))
            parts["d1"].append(m.doc_index[i])
            parts["d2"].append(m.doc_index[j])
            parts["i"].append(i)
            parts["j"].append(j)
            parts["o"].append(np.full(i.shape[0], q_pos, dtype=np.int64))
        cols = {k: (np.concatenate(v) if v else np.zeros(0, dtype=np.int64)).astype(np.int64)
                for k, v in parts.items()}
        first = cols["i"]
        return SampleTable(
            texts=measured.texts,
            query=cols["q"], doc1=cols["d1"], doc2=cols["d2"],
            grade=np.full(first.shape[0], np.nan),
            skipped=Counter(measured.skipped),
            meta=_PairMeta(measured.queries, first, cols["j"], cols["o"]))

    def samples(self, context: ProbeContext) -> Iterator[Sample | Skip]:
        table = self.sample_table(context)
        for reason, count in table.skipped.items():
            for _ in range(count):
                yield Skip(reason)
        yield from table_samples(table)


def all_mmp_probes() -> list[MeasureMatchProbe]:
    return [MeasureMatchProbe(v, c) for v in CHARACTERISTICS for c in CHARACTERISTICS
            if v != c and (v, c) not in _IMPOSSIBLE]


def available() -> list[MeasureMatchProbe]:
    return all_mmp_probes()
