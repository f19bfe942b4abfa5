"""Câmara & Hauff's overlap split and ir_axioms' preference consistency."""

from __future__ import annotations

import json

import numpy as np

from abnirml.data.collection import Collection
from abnirml.evaluation.analyses.axiom_breakdown import (
    overlap_buckets,
    overlap_split,
    preference_consistency,
    query_overlap,
)
from abnirml.text.analyzer import Analyzer


def test_query_overlap_uses_one_relevant_document():
    collection = Collection(
        name="t", queries={"q1": "apple banana cherry", "q2": "kiwi", "q3": "lime"},
        docs={"a": "apple banana w", "b": "w w", "c": "kiwi pie", "d": "lime"},
        qrels={"q1": {"a": 2, "b": 0}, "q2": {"c": 3}, "q3": {"d": 1}})
    overlap = query_overlap(collection, Analyzer(stopwords="none", stem=False))
    assert overlap == {"q1": 2 / 3, "q2": 1.0}          # q3 has no relevant document
    two = Collection(name="t", queries={"q": "apple banana"},
                     docs={"x": "apple", "y": "apple banana"}, qrels={"q": {"x": 2, "y": 2}})
    seen = {query_overlap(two, Analyzer(stopwords="none", stem=False), seed=s)["q"]
            for s in range(20)}
    assert seen == {0.5, 1.0}                             # a seeded choice between the two


def test_buckets_are_near_equal_and_keep_ties_together():
    overlap = {f"q{i}": v for i, v in enumerate([0.0, 0.1, 0.2, 0.3, 0.4, 0.5])}
    buckets = overlap_buckets(overlap)
    assert [buckets[f"q{i}"] for i in range(6)] == ["low", "low", "medium", "medium",
                                                      "high", "high"]
    tied = overlap_buckets({"a": 0.2, "b": 0.5, "c": 0.5, "d": 0.5})
    # b would open the low group's last slot: c and d, equal to b, follow it there
    assert tied == {"a": "low", "b": "low", "c": "low", "d": "low"}


def test_overlap_split_counts_per_group():
    qids = np.array(["q1", "q1", "q2", "q3"], dtype=object)
    s1 = np.array([2.0, 0.0, 1.0, 1.0])
    s2 = np.array([1.0, 1.0, 1.0, 0.0])
    buckets = {"q1": "low", "q2": "medium", "q3": "high"}
    rows = overlap_split(qids, s1, s2, buckets, {"q1": 0.2, "q2": 0.5, "q3": 1.0})
    assert [(r["bucket"], r["n"], r["satisfied"], r["violated"], r["ties"]) for r in rows] == [
        ("low", 2, 1, 1, 0), ("medium", 1, 0, 0, 1), ("high", 1, 1, 0, 0)]
    assert rows[0]["overlap_min"] == 0.2 and rows[0]["queries"] == 1


def test_consistency_leaves_ties_out():
    assert preference_consistency({"satisfied": 6, "violated": 2, "ties": 5}) == 0.75
    assert preference_consistency({"satisfied": 0, "violated": 0}) is None


def test_run_records_and_report_carry_both(tmp_path):
    from abnirml.cli import main

    out = tmp_path / "out"
    assert main(["run", "--ranker", "bm25", "--probe", "axiom:rennings-tfc1", "--probe",
                 "axiom:prox1", "--no-cache", "--quiet", "--no-effectiveness", "--out",
                 str(out)]) == 0
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    for record in records:
        split = record["overlap_split"]
        assert [g["bucket"] for g in split] == ["low", "medium", "high"]
        assert sum(g["n"] for g in split) == record["n"]
        assert sum(g["satisfied"] for g in split) == record["satisfied"]
    report = (out / "report.md").read_text()
    assert "### Preference consistency (ir_axioms)" in report
    assert "| bm25 | 1.00 |" in report                     # BM25 never violates TFC1
    assert "by query–document term overlap" in report and "PROX1" in report


def test_per_query_ndcg10_known_answers():
    from abnirml.evaluation.analyses.axiom_breakdown import per_query_ndcg10

    qrels = {"q1": {"a": 1, "b": 0}, "q2": {"a": 1, "b": 0}}
    run = {"q1": [("a", 2.0), ("b", 1.0)], "q2": [("a", 1.0), ("b", 2.0)],
           "q3": [("a", 1.0)]}                                   # q3 is not judged
    ndcg = per_query_ndcg10(run, qrels)
    assert set(ndcg) == {"q1", "q2"}
    assert ndcg["q1"] == 1.0
    assert abs(ndcg["q2"] - 1 / np.log2(3)) < 1e-9               # relevant at rank 2


def test_group_effectiveness_means_over_all_and_retrieved_queries():
    from abnirml.evaluation.analyses.axiom_breakdown import group_effectiveness

    buckets = {"q1": "low", "q2": "low", "q3": "medium", "q4": "high"}
    ndcg = {"q1": 0.2, "q2": 0.6, "q3": 1.0}                     # q4 has no value
    groups = group_effectiveness(buckets, ndcg, retrieved={"q2", "q4"})
    assert groups["low"] == {"ndcg10": 0.4, "ndcg10_queries": 2, "ndcg10_retrieved": 0.6,
                             "retrieved_queries": 1}
    assert groups["medium"] == {"ndcg10": 1.0, "ndcg10_queries": 1, "ndcg10_retrieved": None,
                                "retrieved_queries": 0}
    assert groups["high"]["ndcg10"] is None and groups["high"]["ndcg10_queries"] == 0


def test_overlap_split_carries_each_rankers_ndcg_per_group(tmp_path):
    """Câmara & Hauff's Fig. 1 plots effectiveness per overlap group: each group of an axiom
    record holds the ranker's mean nDCG@10 over the group's queries, recomputed here from
    the re-ranked run the run wrote."""
    from abnirml.cli import main
    from abnirml.data.collection import load_collection
    from abnirml.data.trec import read_run
    from abnirml.evaluation.analyses.axiom_breakdown import per_query_ndcg10, query_overlap_choices

    out = tmp_path / "out"
    assert main(["run", "--ranker", "bm25", "--probe", "axiom:rennings-tfc1", "--no-cache",
                 "--quiet", "--bootstrap", "0", "--out", str(out)]) == 0
    record = json.loads((out / "results.jsonl").read_text().splitlines()[0])
    collection = load_collection("demo")
    ndcg = per_query_ndcg10(read_run(out / "reranked" / "bm25.run"), collection.qrels)
    choices = query_overlap_choices(collection, Analyzer())
    buckets = overlap_buckets({q: v for q, (v, _) in choices.items()})
    total = 0
    for group in record["overlap_split"]:
        members = [q for q, b in buckets.items() if b == group["bucket"] and q in ndcg]
        total += group["ndcg10_queries"]
        assert group["ndcg10_queries"] == len(members)
        assert group["ndcg10"] == round(sum(ndcg[q] for q in members) / len(members), 6)
        assert 0 <= group["retrieved_queries"] <= len(members)
    assert total == len(choices) == 16
    report = (out / "report.md").read_text()
    assert "nDCG@10, relevant document in candidates" in report
