"""Query-variation probes (``qvp:``): the same document under a varied query.

Penha et al. (ECIR 2022) measure how retrieval pipelines cope with the ways real users
phrase one information need (:mod:`.query_variation_generators` makes the variations). A
textual-manipulation probe changes the document and keeps the query; these change the
query and keep the document, with the same statistics: **d1 = (q′, d), d2 = (q, d)** — the
same document scored under the varied and the original query — so a positive score means
the ranker scores documents *higher* under the variation (the table's ``query1`` column
carries q′; ``doc1`` and ``doc2`` are the same text).

Samples: for each query the variation applies to (one variation per query, seeded by
(seed, probe, qid)), every document of its pool — its top ``qvp_depth`` candidates and its
judged documents with text. Judged grades place samples in the non-relevant / relevant
subsets (the relevant subset is the paper's "score of the relevant documents");
unjudged candidates count in ``all`` only. Scoring the whole pool under both queries also
gives each query's ranking twice, so :func:`attach_ndcg_change` adds the mean nDCG@10 under
the original and the varied queries to the probe's records. Queries the variation does not
apply to are counted as ``not-applicable`` (one per query).

Options (``--option qvp.KEY=VALUE``, :class:`QueryVariationOptions`): ``qvp.depth``
(candidates per query, default 100; 0 uses the judged documents only).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from abnirml.probes.base import ProbeContext, SampleTable
from abnirml.probes.family import CODESPELL, GLOVE, Requirement
from abnirml.probes.options import setting
from abnirml.probes.query_variation_generators import (
    VARIATIONS,
    NearestNeighbours,
    VariationContext,
)
from abnirml.types import Sample, Skip

DEFAULT_DEPTH = 100
NDCG_DEPTH = 10


@dataclass(frozen=True)
class QueryVariationOptions:
    depth: int = setting(DEFAULT_DEPTH, minimum=0, legacy="qvp_depth",
                         help="candidates per query scored under both queries (0: judged "
                              "documents only)")


def _depth(context: ProbeContext) -> int:
    return int(context.family_options("qvp", QueryVariationOptions).depth)


def variation_context(context: ProbeContext, needs: str) -> VariationContext:
    """The generators' inputs, built once per run (shared by the five probes)."""
    stopwords = context.analyzer.stopword_set
    if needs == "typos":
        from abnirml.text.typos import load_misspellings

        return VariationContext(stopwords=stopwords, typo_map=load_misspellings())
    if needs == "idf":
        return VariationContext(stopwords=stopwords, idf=context.memo(
            "qvp:idf", lambda: _idf_function(context)))
    if needs == "embeddings":
        from abnirml.probes.axioms.semantics import glove_6b_50d

        return VariationContext(stopwords=stopwords, neighbour=context.memo(
            "qvp:neighbours", lambda: NearestNeighbours(glove_6b_50d())))
    return VariationContext(stopwords=stopwords)


def _idf_function(context: ProbeContext):
    """idf of a lowercased word under the run's analysis: log(N / df) of its analysed term
    (a stopword or a word no document holds gets 0 and is dropped first)."""
    env = context.options.get("ranker_env")
    if env is not None and getattr(env, "analyzer", None) is not None:
        stats = env.collection_stats()
        analyzer = env.analyzer
    else:
        from abnirml.data.stats import CollectionStats

        analyzer = context.analyzer
        stats = CollectionStats.build(context.collection.doc_texts(), analyzer)

    def idf(word: str) -> float:
        analysed = analyzer.analyze(word)
        if not analysed:
            return 0.0
        df = stats.df.get(analysed[0], 0)
        return math.log(stats.num_docs / df) if df else 0.0

    return idf


def pools(context: ProbeContext, depth: int) -> dict[str, list[str]]:
    """qid → its documents with text: top ``depth`` candidates, then judged ones."""
    collection = context.collection

    def build() -> dict[str, list[str]]:
        ranking = context.candidate_docnos() if depth > 0 else {}
        out: dict[str, list[str]] = {}
        for qid in sorted(collection.queries):
            docs = [d for d in ranking.get(qid, [])[:depth] if d in collection.docs]
            docs += [d for d in collection.qrels.get(qid, {}) if d in collection.docs]
            if docs:
                out[qid] = list(dict.fromkeys(docs))
        return out

    return context.memo(f"qvp:pools:{depth}", build)


@dataclass(frozen=True)
class QueryVariationProbe:
    """One query variation applied to every query (see the module docstring)."""

    key: str
    family: str = "qvp"
    symmetric: bool = False

    @property
    def name(self) -> str:
        return f"qvp:{self.key}"

    @property
    def label(self) -> str:
        return VARIATIONS[self.key][0]

    @property
    def requires(self) -> tuple[Requirement, ...]:
        needs = VARIATIONS[self.key][2]
        if needs == "typos":
            return (CODESPELL,)
        if needs == "embeddings":
            return (GLOVE,)
        return ()

    def sample_table(self, context: ProbeContext) -> SampleTable:
        _, generate, needs = VARIATIONS[self.key]
        depth = _depth(context)
        text_context = variation_context(context, needs)
        collection = context.collection
        pool: dict[str, int] = {}
        q1: list[int] = []
        q2: list[int] = []
        docs: list[int] = []
        grades: list[float] = []
        qids: list[str] = []
        docnos: list[str] = []
        skipped: Counter[str] = Counter()
        for qid, pool_docs in pools(context, depth).items():
            query = collection.queries[qid]
            varied = generate(query, text_context, context.rng(f"{self.name}\x00{qid}"))
            if varied is None:
                skipped["not-applicable"] += 1
                continue
            if varied == query:
                skipped["unchanged"] += 1
                continue
            v = pool.setdefault(varied, len(pool))
            o = pool.setdefault(query, len(pool))
            judged = collection.qrels.get(qid, {})
            for docno in pool_docs:
                q1.append(v)
                q2.append(o)
                docs.append(pool.setdefault(collection.docs[docno], len(pool)))
                grade = judged.get(docno)
                grades.append(float("nan") if grade is None else float(grade))
                qids.append(qid)
                docnos.append(docno)
        doc_index = np.asarray(docs, dtype=np.int64)
        texts = list(pool)
        query_texts = np.asarray(q2, dtype=np.int64)
        varied_texts = np.asarray(q1, dtype=np.int64)

        def meta(i: int) -> dict[str, Any]:
            g = grades[i]
            return {"qid": qids[i], "docno": docnos[i], "docno2": docnos[i],
                    "grade": None if math.isnan(g) else int(g),
                    "query_variation": texts[varied_texts[i]]}

        return SampleTable(texts=texts, query=query_texts, doc1=doc_index, doc2=doc_index.copy(),
                           grade=np.asarray(grades, dtype=np.float64), skipped=skipped,
                           meta=meta, query1=varied_texts,
                           extra={"qids": np.asarray(qids, dtype=object),
                                  "record": {"qvp_depth": depth}})

    def samples(self, context: ProbeContext) -> Iterator[Sample | Skip]:
        """The samples, with the varied query in ``meta["query_variation"]`` (the engine
        uses :meth:`sample_table`, which scores doc1 under that query)."""
        table = self.sample_table(context)
        for reason, count in table.skipped.items():
            for _ in range(count):
                yield Skip(reason)
        for i in range(len(table)):
            yield table.sample(i)


def available() -> list[QueryVariationProbe]:
    return [QueryVariationProbe(key) for key in VARIATIONS]


# --------------------------------------------------------------------------- nDCG@10


def ndcg_at(scores: np.ndarray, gains: np.ndarray, docnos: np.ndarray, k: int = NDCG_DEPTH
            ) -> float:
    """nDCG@k of ranking ``scores`` with linear gains, ideal over the same pool; NaN when
    the pool holds no positive gain. Tied scores are ordered as trec_eval (and so the
    effectiveness table, through ir_measures) orders them: by docno, descending."""
    docno_rank = np.unique(np.asarray(docnos), return_inverse=True)[1].reshape(-1)
    order = np.lexsort((-docno_rank, -scores))[:k]
    discounts = 1.0 / np.log2(np.arange(2, k + 2))
    dcg = float((gains[order] * discounts[:order.size]).sum())
    ideal = np.sort(gains)[::-1][:k]
    idcg = float((ideal * discounts[:ideal.size]).sum())
    return dcg / idcg if idcg > 0 else float("nan")


def ndcg_change(table: SampleTable, score1: np.ndarray, score2: np.ndarray
                ) -> dict[str, Any]:
    """Mean nDCG@10 over the queries with a relevant document, under the original query
    (score2) and the variation (score1), and their difference."""
    qids = table.extra["qids"]
    gains = np.nan_to_num(table.grade, nan=0.0)
    docnos = np.array([table.meta(i)["docno"] for i in range(len(table))], dtype=object)
    before, after = [], []
    for qid in dict.fromkeys(qids.tolist()):
        mask = qids == qid
        original = ndcg_at(score2[mask], gains[mask], docnos[mask].astype(str))
        if math.isnan(original):
            continue
        before.append(original)
        after.append(ndcg_at(score1[mask], gains[mask], docnos[mask].astype(str)))
    if not before:
        return {"ndcg10_original": None, "ndcg10_variation": None, "ndcg10_change": None,
                "ndcg10_queries": 0}
    b, a = float(np.mean(before)), float(np.mean(after))
    return {"ndcg10_original": round(b, 6), "ndcg10_variation": round(a, 6),
            "ndcg10_change": round(a - b, 6), "ndcg10_queries": len(before)}


def attach_ndcg_change(result: Any) -> None:
    """Add the nDCG@10 fields to every qvp record (all subsets: they describe the rankings)."""
    cache: dict[tuple[str, str], dict[str, Any]] = {}
    for record in result.records:
        if record.get("family") != "qvp" or record["probe"] not in result.tables:
            continue
        key = (record["probe"], record["ranker"])
        if key not in cache:
            scores = result.probe_scores[key]
            cache[key] = ndcg_change(result.tables[record["probe"]], scores.score1,
                                     scores.score2)
        record.update(cache[key])
