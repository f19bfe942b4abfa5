"""Câmara & Hauff's overlap split and ir_axioms' preference consistency."""

from __future__ import annotations

import json

import numpy as np

from abnirml.data.collection import Collection
from abnirml.evaluation.axiom_breakdown import (
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
    assert main(["run", "--ranker", "bm25", "--probe", "axiom:tfc1", "--probe", "axiom:prox1",
                 "--no-cache", "--quiet", "--no-effectiveness", "--out", str(out)]) == 0
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
