"""Effectiveness via ir_measures, and axiom fulfilment vs effectiveness (Rennings)."""

from __future__ import annotations

import pytest

from abnirml.evaluation.analyses.effectiveness import axiom_fulfilment, correlate, evaluate


def test_bm25_run_matches_ir_measures_directly(dl19):
    import ir_measures

    from abnirml.data.trec import read_qrels, read_run

    ours = evaluate(read_run(dl19 / "runs" / "bm25.run"), read_qrels(dl19 / "qrels.txt"))
    measures = [ir_measures.nDCG @ 10, ir_measures.AP(rel=2), ir_measures.RR(rel=2)]
    direct = ir_measures.calc_aggregate(
        measures, ir_measures.read_trec_qrels(str(dl19 / "qrels.txt")),
        ir_measures.read_trec_run(str(dl19 / "runs" / "bm25.run")))
    assert ours["nDCG@10"] == pytest.approx(direct[measures[0]], abs=1e-12)
    assert ours["AP(rel=2)"] == pytest.approx(direct[measures[1]], abs=1e-12)
    assert ours["RR(rel=2)"] == pytest.approx(direct[measures[2]], abs=1e-12)
    assert 0.3 < ours["nDCG@10"] < 0.7          # BM25 on DL19 passages is about 0.5


def test_small_known_values():
    qrels = {"q": {"a": 3, "b": 1}}
    run = {"q": [("b", 2.0), ("a", 1.0), ("c", 0.5)]}
    values = evaluate(run, qrels)
    assert values["RR(rel=2)"] == pytest.approx(0.5)       # b has grade 1 < 2
    # one convention: grade ≥ 2 is relevant, so only a counts (found at rank 2)
    assert values["AP(rel=2)"] == pytest.approx(0.5)
    assert evaluate(run, qrels, ["AP"])["AP"] == pytest.approx(1.0)   # rel ≥ 1: both count
    from abnirml.errors import ConfigError

    with pytest.raises(ConfigError):
        evaluate(run, qrels, ["NoSuchMeasure@3"])


def _axiom(ranker, probe, satisfied, violated, ties):
    n = satisfied + violated + ties
    return {"family": "axiom", "probe": probe, "ranker": ranker, "subset": "all", "n": n,
            "satisfied": satisfied, "violated": violated, "ties": ties}


def test_axiom_fulfilment_and_correlation_with_synthetic_records():
    records = [
        _axiom("a", "axiom:rennings-tfc1", 90, 10, 0), _axiom("a", "axiom:lnc2", 50, 50, 0),
        _axiom("b", "axiom:rennings-tfc1", 60, 20, 20), _axiom("b", "axiom:lnc2", 40, 60, 0),
        _axiom("c", "axiom:rennings-tfc1", 30, 70, 0), _axiom("c", "axiom:lnc2", 10, 80, 10),
        {"family": "mmp", "probe": "mmp:tf:length", "ranker": "a", "subset": "all", "n": 5},
    ]
    fulfilment = axiom_fulfilment(records)
    assert fulfilment == pytest.approx({"a": 0.7, "b": 0.5, "c": 0.2})
    effectiveness = {"a": {"AP": 0.5}, "b": {"AP": 0.4}, "c": {"AP": 0.1}}
    c = correlate(fulfilment, effectiveness, "AP")
    assert c.kendall_tau == pytest.approx(1.0)
    # by hand: Σdxdy = 0.10333…, Σdx² = 0.12667…, Σdy² = 0.08667… → r = 0.98624
    assert c.pearson_r == pytest.approx(0.31 / 3 / ((0.38 / 3 * 0.26 / 3) ** 0.5))
    reversed_eff = {"a": {"AP": 0.1}, "b": {"AP": 0.4}, "c": {"AP": 0.5}}
    assert correlate(fulfilment, reversed_eff, "AP").kendall_tau == pytest.approx(-1.0)
    few = correlate({"a": 0.7, "b": 0.5}, effectiveness, "AP")
    assert few.kendall_tau is None and "at least 3" in few.note


def test_pipeline_records_effectiveness(tmp_path):
    from abnirml.pipeline import RunConfig, SessionSettings, run

    output = run(RunConfig(rankers=["bm25", "ql"], probes=["mmp:tf:length"], out=str(tmp_path),
                           session=SessionSettings(cache=None, progress=False)))
    info = output.run_info["effectiveness"]
    assert set(info["rankers"]) == {"bm25", "ql"}
    from abnirml.data.collection import load_collection
    from abnirml.data.trec import read_run

    reranked = read_run(tmp_path / "reranked" / info["run_files"]["ql"])
    qrels = load_collection("demo").qrels
    assert evaluate(reranked, qrels) == pytest.approx(info["rankers"]["ql"])
    assert 0.0 < info["rankers"]["bm25"]["nDCG@10"] <= 1.0


@pytest.mark.parametrize("measures", [("RR(rel=2)", "nDCG@10", "AP(rel=2)"),
                                      ("AP(rel=2)", "nDCG@10", "RR(rel=2)")])
def test_per_query_values_keep_the_measures_order(measures):
    """run.json's per-query table lists each query's measures as asked, whatever order
    ir_measures computes them in (it differs between processes)."""
    from abnirml.evaluation.analyses.effectiveness import evaluate_per_query

    qrels = {"q2": {"d1": 1, "d3": 2}, "q1": {"d1": 2, "d2": 0}}
    run = {"q1": [("d1", 2.0), ("d2", 1.0)], "q2": [("d1", 1.0), ("d3", 0.5)]}
    found = evaluate_per_query(run, qrels, measures)
    assert list(found) == ["q1", "q2"]
    assert [list(values) for values in found.values()] == [list(measures)] * 2
    assert found["q2"]["RR(rel=2)"] == 0.5 and found["q1"]["AP(rel=2)"] == 1.0
