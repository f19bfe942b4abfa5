"""Query-term masking analysis (Rau & Kamps): Only-Q / Drop-Q rankings and their measures."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from abnirml.cli import main
from abnirml.data.collection import Collection
from abnirml.evaluation.masking import (
    DROP_QUERY,
    ONLY_QUERY,
    ORIGINAL,
    masking_analysis,
    measure_names,
)
from abnirml.evaluation.scoring import Scorer
from abnirml.probes.base import ProbeContext
from abnirml.rankers.base import RankerHints
from abnirml.rankers.cache import ScoreCache

NDCG, MAP, MRR = measure_names()


class MaskCounter:
    """Scores a document by how many mask tokens it holds (its own token is ``<m>``)."""

    name = "mask-counter"
    fingerprint = "mask-counter/1"
    hints = RankerHints(mask_token="<m>")

    def score(self, pairs):
        return np.array([float(doc.count("<m>")) for _, doc in pairs])


@pytest.fixture
def tiny():
    collection = Collection(
        name="tiny", queries={"q1": "cat"},
        docs={"A": "cat cat Cats", "B": "dog bird fish cat", "C": "dog"},
        qrels={"q1": {"A": 2, "B": 0, "C": 0}})
    return ProbeContext(collection=collection, candidates=lambda: {"q1": ["A", "B", "C"]})


def analyse(context, rankers, **kwargs):
    with ScoreCache(None) as cache:
        return masking_analysis(context, rankers, Scorer(cache, progress=False), **kwargs)


def test_masked_rankings_and_measures_by_hand(tiny):
    result = analyse(tiny, [MaskCounter()])
    # Drop-Q masks the query terms: A has 3 (cat, cat, Cats), B 1, C 0 → A first.
    assert result.runs[("mask-counter", DROP_QUERY)] == {"q1": {"A": 3.0, "B": 1.0, "C": 0.0}}
    # Only-Q masks everything else: A 0, B 3, C 1 → the relevant A comes third.
    assert result.runs[("mask-counter", ONLY_QUERY)] == {"q1": {"A": 0.0, "B": 3.0, "C": 1.0}}
    assert result.runs[("mask-counter", ORIGINAL)] == {"q1": {"A": 0.0, "B": 0.0, "C": 0.0}}
    for measure in (NDCG, MAP, MRR):
        assert result.value("mask-counter", DROP_QUERY, measure) == 1.0
    assert math.isclose(result.value("mask-counter", ONLY_QUERY, MRR), 1 / 3)
    assert math.isclose(result.value("mask-counter", ONLY_QUERY, MAP), 1 / 3)
    # one relevant document at rank 3: DCG = g / log2(4), ideal = g / log2(2)
    assert math.isclose(result.value("mask-counter", ONLY_QUERY, NDCG), 0.5)
    assert {row.mask_token for row in result.rows} == {"<m>"}
    assert [row.queries for row in result.rows] == [1, 1, 1]


def test_one_mask_token_for_every_ranker_overrides_the_rankers_own(tiny):
    result = analyse(tiny, [MaskCounter()], mask_token="[MASK]")
    assert {row.mask_token for row in result.rows} == {"[MASK]"}
    assert result.runs[("mask-counter", ONLY_QUERY)] == {"q1": {"A": 0.0, "B": 0.0, "C": 0.0}}


def test_relevance_level_of_the_binary_measures(tiny):
    result = analyse(tiny, [MaskCounter()], rel_level=3)
    assert result.measures == ["nDCG@10", "AP(rel=3)", "RR(rel=3)"]
    # no document reaches grade 3, so nothing is relevant for MAP and MRR
    assert result.value("mask-counter", DROP_QUERY, "RR(rel=3)") == 0.0


def test_demo_bm25_loses_everything_without_the_query_terms(demo_collection, tmp_path):
    from abnirml.evaluation.masking import MaskingConfig, run_masking

    result = run_masking(MaskingConfig(collection="demo", rankers=["bm25", "ql"], cache=None,
                                       progress=False))
    original = result.runs[("bm25", ORIGINAL)]
    dropped = result.runs[("bm25", DROP_QUERY)]
    only = result.runs[("bm25", ONLY_QUERY)]
    assert set(original) == set(demo_collection.queries)
    # with every query term masked BM25 has nothing to match
    assert all(score == 0.0 for docs in dropped.values() for score in docs.values())
    # keeping the query terms keeps exactly the documents that match
    for qid, docs in original.items():
        assert {d for d, s in docs.items() if s > 0} == {d for d, s in only[qid].items() if s > 0}
    assert result.value("bm25", ONLY_QUERY, NDCG) > result.value("bm25", DROP_QUERY, NDCG)
    assert [(r.ranker, r.variant) for r in result.rows] == [
        ("bm25", ORIGINAL), ("bm25", ONLY_QUERY), ("bm25", DROP_QUERY),
        ("ql", ORIGINAL), ("ql", ONLY_QUERY), ("ql", DROP_QUERY)]


def test_cli_writes_csv_and_markdown(tmp_path, capsys):
    out = tmp_path / "masking"
    assert main(["masking", "--collection", "demo", "--ranker", "bm25", "--out", str(out),
                 "--no-cache", "--quiet"]) == 0
    assert "masking.md" in capsys.readouterr().out
    with (out / "masking.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["input"] for r in rows] == [ORIGINAL, ONLY_QUERY, DROP_QUERY]
    assert set(rows[0]) == {"ranker", "input", "mask_token", "queries", NDCG, MAP, MRR}
    assert all(0.0 <= float(r[NDCG]) <= 1.0 and r["queries"] == "16" for r in rows)
    report = (out / "masking.md").read_text(encoding="utf-8")
    assert "| Ranker | Input | nDCG@10 | MAP (rel=2) | MRR (rel=2) | Queries |" in report
    assert f"| bm25 | Only Q | {100 * float(rows[1][NDCG]):.2f} |" in report


def test_cli_errors_are_one_line(tmp_path, capsys):
    assert main(["masking", "--collection", "demo", "--ranker", "nope", "--out",
                 str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("abnirml: error: unknown ranker 'nope'")


@pytest.mark.shared
def test_dl19_masking_with_bm25(dl19):
    from abnirml.evaluation.masking import MaskingConfig, run_masking

    result = run_masking(MaskingConfig(collection=str(dl19), rankers=["bm25"], cache=None,
                                       candidate_depth=30, progress=False))
    assert [r.queries for r in result.rows] == [43, 43, 43]
    assert all(s == 0.0 for docs in result.runs[("bm25", DROP_QUERY)].values()
               for s in docs.values())
    assert result.value("bm25", ORIGINAL, NDCG) > result.value("bm25", DROP_QUERY, NDCG)
    assert result.value("bm25", ONLY_QUERY, NDCG) > result.value("bm25", DROP_QUERY, NDCG)
