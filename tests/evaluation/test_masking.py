"""Query-term masking analysis (Rau & Kamps): Only-Q / Drop-Q rankings and their measures."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from abnirml.cli import main
from abnirml.data.collection import Collection
from abnirml.evaluation.analyses.masking import (
    DROP_QUERY,
    ONLY_QUERY,
    ORIGINAL,
    masking_analysis,
    measure_names,
)
from abnirml.evaluation.execution.scoring import Scorer
from abnirml.probes.base import ProbeContext
from abnirml.rankers.base import RankerHints
from abnirml.rankers.support.cache import ScoreCache

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
    from abnirml.evaluation.analyses.masking import MaskingConfig, run_masking
    from abnirml.evaluation.execution.workspace import SessionSettings

    result = run_masking(MaskingConfig(collection="demo", rankers=["bm25", "ql"],
                                       session=SessionSettings(cache=None, progress=False)))
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
    assert set(rows[0]) == {"ranker", "input", "mask_token", "queries", NDCG, MAP, MRR,
                            "tied", "tie_breaks"}
    # BM25 scores every Drop-Q document 0: all tied, averaged over random tie-breaks
    assert float(rows[2]["tied"]) == 1.0 and rows[2]["tie_breaks"] == "10"
    assert all(0.0 <= float(r[NDCG]) <= 1.0 and r["queries"] == "16" for r in rows)
    report = (out / "masking.md").read_text(encoding="utf-8")
    assert "| Ranker | Input | nDCG@10 | MAP (rel=2) | MRR (rel=2) | Queries |" in report
    assert f"| bm25 | Only Q | {100 * float(rows[1][NDCG]):.2f} |" in report
    assert "bm25 Drop Q: 100.0 % of the candidates tie" in report
    assert "mean over 10 seeded random tie-breaks" in report and "cannot order" in report


def test_cli_errors_are_one_line(tmp_path, capsys):
    assert main(["masking", "--collection", "demo", "--ranker", "nope", "--out",
                 str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("abnirml: error: unknown ranker 'nope'")


@pytest.mark.shared
def test_dl19_masking_with_bm25(dl19):
    from abnirml.evaluation.analyses.masking import MaskingConfig, run_masking
    from abnirml.evaluation.execution.workspace import SessionSettings

    result = run_masking(MaskingConfig(collection=str(dl19), rankers=["bm25"],
                                       session=SessionSettings(cache=None, candidate_depth=30,
                                                               progress=False)))
    assert [r.queries for r in result.rows] == [43, 43, 43]
    assert all(s == 0.0 for docs in result.runs[("bm25", DROP_QUERY)].values()
               for s in docs.values())
    assert result.value("bm25", ORIGINAL, NDCG) > result.value("bm25", DROP_QUERY, NDCG)
    assert result.value("bm25", ONLY_QUERY, NDCG) > result.value("bm25", DROP_QUERY, NDCG)


def test_ties_are_broken_at_random_not_by_docno(tiny):
    # Original: MaskCounter scores every document 0. trec_eval's docno order (C, B, A,
    # descending) would put the relevant A last; random tie-breaks average over all orders.
    result = analyse(tiny, [MaskCounter()], tie_breaks=400)
    row = next(r for r in result.rows if r.variant == ORIGINAL)
    assert row.tied == 1.0 and row.tie_breaks == 400
    # A is equally likely at ranks 1, 2, 3: E[RR] = (1 + 1/2 + 1/3) / 3
    assert result.value("mask-counter", ORIGINAL, MRR) == pytest.approx(11 / 18, abs=0.03)
    assert row.tie_sd[MRR] > 0.2
    # rankings without ties are evaluated once, exactly as before
    drop = next(r for r in result.rows if r.variant == DROP_QUERY)
    assert drop.tied == 0.0 and drop.tie_breaks == 1 and drop.values[MRR] == 1.0


@pytest.mark.shared
def test_dl19_drop_query_bm25_is_no_better_than_random_order(dl19):
    # With docno tie-breaking Drop-Q BM25 reached nDCG@10 ≈ 28.8 on DL19 against
    # 22.0 ± 1.6 for random shuffles of the same candidates (~4 SD). Now it must land
    # within 2 SD of the shuffles.
    from abnirml.evaluation.analyses.masking import MaskingConfig, evaluate, run_masking
    from abnirml.evaluation.execution.workspace import SessionSettings

    result = run_masking(MaskingConfig(collection=str(dl19), rankers=["bm25"],
                                       session=SessionSettings(cache=None, progress=False)))
    dropped = result.runs[("bm25", DROP_QUERY)]
    assert all(s == 0.0 for docs in dropped.values() for s in docs.values())
    from abnirml.data.collection import load_collection

    qrels = load_collection(str(dl19)).qrels
    rng = np.random.default_rng(0)
    shuffles = []
    for _ in range(30):
        run = {}
        for qid, docs in dropped.items():
            order = rng.permutation(sorted(docs))
            run[qid] = {d: float(len(order) - i) for i, d in enumerate(order)}
        shuffles.append(evaluate(run, qrels, [NDCG])[NDCG])
    mean, sd = float(np.mean(shuffles)), float(np.std(shuffles, ddof=1))
    value = result.value("bm25", DROP_QUERY, NDCG)
    assert abs(value - mean) < 2 * sd, (value, mean, sd)
    assert result.value("bm25", ORIGINAL, NDCG) > mean + 10 * sd
