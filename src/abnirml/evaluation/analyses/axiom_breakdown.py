"""Two further views of the axiom results: Câmara & Hauff's split by query–document term
overlap, and ir_axioms' preference consistency.

*Overlap split* (Câmara & Hauff, Fig. 1). A query whose relevant document shares few of its
terms needs semantic matching; one whose relevant document holds them all, exact matching.
Each query gets the fraction of its distinct analysed terms found in one of its relevant
documents (drawn at random, seeded, when it has several), the queries are cut into three
near-equal groups by that fraction (low / medium / high), and each axiom's satisfaction is
reported per group — does a ranker satisfy, say, TFC1 less where exact matches are rare?
What Câmara & Hauff's figure itself plots is *effectiveness* per group (BERT against QL, over
all queries and over those whose relevant document is in the first-stage top 100), so
each group also carries the ranker's mean nDCG@10 re-ranking the candidates, over all the
group's queries and over those whose chosen relevant document is among the candidates
(present when the run evaluated effectiveness). The split is stored in each axiom record
(``overlap_split``), so reports rebuild from ``results.jsonl`` alone.

*Preference consistency* (ir_axioms' analysis). For a ranking, the fraction of its ordered
document pairs on which the axiom has a preference that the ranking orders the axiom's way.
Over a query's candidate pool, the pairs with an axiom preference are exactly the axiom's
instances, so the consistency is satisfied / (satisfied + violated) over the instances;
pairs the ranker scores equally have no order in a ranking and are left out (ir_axioms
would see them in whatever order the tie happened to be broken).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

BUCKETS = ("low", "medium", "high")
#: the group of instances whose query has no overlap value (no relevant document with text)
UNSPLIT = "no relevant document"


def query_overlap(collection: Any, analyzer: Any, relevant_grade: int = 2, seed: int = 0
                  ) -> dict[str, float]:
    """qid → fraction of the query's distinct analysed terms in one relevant document
    (queries without a relevant document with text are left out)."""
    return {qid: value for qid, (value, _) in
            query_overlap_choices(collection, analyzer, relevant_grade, seed).items()}


def query_overlap_choices(collection: Any, analyzer: Any, relevant_grade: int = 2,
                          seed: int = 0) -> dict[str, tuple[float, str]]:
    """qid → (overlap, the docno of the relevant document it was measured on)."""
    out: dict[str, tuple[float, str]] = {}
    for qid, judged in sorted(collection.qrels.items()):
        relevant = sorted(d for d, g in judged.items()
                          if g >= relevant_grade and d in collection.docs)
        if not relevant or qid not in collection.queries:
            continue
        terms = set(analyzer.analyze(collection.queries[qid]))
        if not terms:
            continue
        digest = hashlib.blake2b(f"{seed}\x00overlap\x00{qid}".encode(), digest_size=8)
        pick = relevant[int.from_bytes(digest.digest(), "little") % len(relevant)]
        doc_terms = set(analyzer.analyze(collection.docs[pick]))
        out[qid] = (len(terms & doc_terms) / len(terms), pick)
    return out


def overlap_buckets(overlap: Mapping[str, float]) -> dict[str, str]:
    """qid → ``low`` / ``medium`` / ``high``: three near-equal groups by overlap (ties go
    to the same group as their first member, ordered by (overlap, qid))."""
    ordered = sorted(overlap, key=lambda q: (overlap[q], q))
    n = len(ordered)
    out: dict[str, str] = {}
    for k, qid in enumerate(ordered):
        out[qid] = BUCKETS[min(3 * k // max(n, 1), 2)]
    # keep equal overlaps together: a query takes the group of the first with its value
    first: dict[float, str] = {}
    for qid in ordered:
        out[qid] = first.setdefault(overlap[qid], out[qid])
    return out


def sample_qids(table: Any) -> np.ndarray:
    """Each sample's qid (axiom tables carry query positions; others their metadata)."""
    instances = table.extra.get("instances")
    features = table.extra.get("features")
    if instances is not None and features is not None:
        qids = np.array([f.qid for f in features], dtype=object)
        return qids[np.asarray(instances["query"], dtype=np.int64)]
    return np.array([table.meta(i).get("qid") for i in range(len(table))], dtype=object)


def overlap_split(qids: np.ndarray, score1: np.ndarray, score2: np.ndarray,
                  buckets: Mapping[str, str], overlap: Mapping[str, float],
                  unsplit_queries: int = 0) -> list[dict[str, Any]]:
    """Per overlap group: its overlap range, queries, instances and the fractions of
    instances satisfied / violated / tied (strict order).

    Instances of queries without an overlap (no relevant document with text) belong to no
    group; with ``unsplit_queries`` > 0 they get a last group, :data:`UNSPLIT`, so the
    groups' instances add up to the probe's instead of silently leaving them out.
    """
    diff = score1 - score2
    group = np.array([buckets.get(q, UNSPLIT) for q in qids.tolist()], dtype=object)
    rows: list[dict[str, Any]] = []
    for name in BUCKETS + ((UNSPLIT,) if unsplit_queries else ()):
        if name == UNSPLIT:
            mask = group == name
            rows.append({"bucket": name, "overlap_min": None, "overlap_max": None,
                         "queries": unsplit_queries, "n": int(mask.sum()),
                         "satisfied": int((diff[mask] > 0).sum()),
                         "violated": int((diff[mask] < 0).sum()),
                         "ties": int((diff[mask] == 0).sum())})
            continue
        members = [q for q, b in buckets.items() if b == name]
        mask = group == name
        n = int(mask.sum())
        values = [overlap[q] for q in members]
        rows.append({
            "bucket": name, "overlap_min": round(min(values), 6) if values else None,
            "overlap_max": round(max(values), 6) if values else None,
            "queries": len(members), "n": n,
            "satisfied": int((diff[mask] > 0).sum()), "violated": int((diff[mask] < 0).sum()),
            "ties": int((diff[mask] == 0).sum()),
        })
    return rows


def per_query_ndcg10(run: Mapping[str, Sequence[tuple[str, float]]],
                     qrels: Mapping[str, Mapping[str, int]]) -> dict[str, float]:
    """qid → nDCG@10 of ``run`` (ir_measures; queries without judgments are left out)."""
    import ir_measures

    as_dict = {qid: {docno: float(score) for docno, score in ranking}
               for qid, ranking in run.items()}
    return {m.query_id: float(m.value)
            for m in ir_measures.iter_calc([ir_measures.nDCG @ 10], qrels, as_dict)}


def group_effectiveness(buckets: Mapping[str, str], ndcg: Mapping[str, float],
                        retrieved: set[str]) -> dict[str, dict[str, Any]]:
    """Per overlap group: mean nDCG@10 over its queries that have a value, and over those
    of them whose chosen relevant document is among the candidates (``retrieved``) —
    Câmara & Hauff's Fig. 1, left and right. None where a group has no such query."""
    out: dict[str, dict[str, Any]] = {}
    for name in BUCKETS:
        members = sorted(q for q, b in buckets.items() if b == name and q in ndcg)
        hits = [q for q in members if q in retrieved]
        out[name] = {"ndcg10": _mean([ndcg[q] for q in members]),
                     "ndcg10_queries": len(members),
                     "ndcg10_retrieved": _mean([ndcg[q] for q in hits]),
                     "retrieved_queries": len(hits)}
    return out


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 6) if values else None


def attach_overlap_split(result: Any, collection: Any, analyzer: Any, seed: int = 0,
                         relevant_grade: int = 2) -> None:
    """Add ``overlap_split`` to every axiom record of subset ``all`` (in place); with the
    effectiveness analysis' re-rankings in ``result.extras``, each group also gets the
    ranker's nDCG@10 (see :func:`group_effectiveness`)."""
    from abnirml.probes.family_registry import keys_with_layout

    axiomatic = keys_with_layout(lambda layout: layout.axiom_instances)
    axiom_probes = {r["probe"] for r in result.records if r["family"] in axiomatic}
    if not axiom_probes or not collection.qrels:
        return
    choices = query_overlap_choices(collection, analyzer, relevant_grade, seed)
    overlap = {qid: value for qid, (value, _) in choices.items()}
    buckets = overlap_buckets(overlap)
    effectiveness = _effectiveness_by_ranker(result, collection.qrels, buckets, choices)
    qids = {name: sample_qids(result.tables[name]) for name in axiom_probes
            if name in result.tables}
    unsplit = {q for values in qids.values() for q in values.tolist() if q not in buckets}
    for record in result.records:
        if record["probe"] not in qids or record["subset"] != "all":
            continue
        scores = result.probe_scores[(record["probe"], record["ranker"])]
        if scores.score1.shape[0] != qids[record["probe"]].shape[0]:
            continue     # a pairwise or listwise ranker has no samples of TFC2's triples
        rows = overlap_split(qids[record["probe"]], scores.score1, scores.score2, buckets,
                             overlap, len(unsplit))
        by_group = effectiveness.get(record["ranker"])
        if by_group is not None:
            for row in rows:
                # the group of queries without a relevant document has no nDCG@10
                row.update(by_group.get(row["bucket"], {
                    "ndcg10": None, "ndcg10_queries": 0, "ndcg10_retrieved": None,
                    "retrieved_queries": 0}))
        record["overlap_split"] = rows


def _effectiveness_by_ranker(result: Any, qrels: Mapping[str, Mapping[str, int]],
                             buckets: Mapping[str, str],
                             choices: Mapping[str, tuple[float, str]]
                             ) -> dict[str, dict[str, dict[str, Any]]]:
    """ranker → group → nDCG@10 figures, from the effectiveness analysis' re-rankings
    (empty when it did not run)."""
    extras = getattr(result, "extras", {})
    reranked = extras.get("reranked")
    candidate_run = extras.get("candidate_run")
    if not reranked or candidate_run is None:
        return {}
    retrieved = {qid for qid, (_, pick) in choices.items()
                 if any(docno == pick for docno, _ in candidate_run.get(qid, ()))}
    return {name: group_effectiveness(buckets, per_query_ndcg10(run, qrels), retrieved)
            for name, run in reranked.items()}


def preference_consistency(record: Mapping[str, Any]) -> float | None:
    """ir_axioms' preference consistency from an axiom record (see the module docstring)."""
    satisfied: int | None = record.get("satisfied")
    violated: int | None = record.get("violated")
    if satisfied is None or violated is None or satisfied + violated == 0:
        return None
    return satisfied / (satisfied + violated)


def consistency_rows(records: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], float | None]:
    """(ranker, probe) → preference consistency, for the axiom records of subset all (the
    records of the families registered with the axiom layout)."""
    from abnirml.probes.family_registry import keys_with_layout

    axiomatic = keys_with_layout(lambda layout: layout.axiom_instances)
    return {(r["ranker"], r["probe"]): preference_consistency(r) for r in records
            if r.get("family") in axiomatic and r.get("subset") == "all"}
