"""Report values and figures a warm rerun reads back instead of computing: the correlation
table (scipy.stats), the interval figures (matplotlib) and the δ sweep's one-pass form."""

from __future__ import annotations

import pytest

from abnirml.evaluation.analyses import effectiveness
from abnirml.report import analyses, intervals, plots


def _values():
    fulfilment = {"bm25": 0.61, "ql": 0.58, "tfidf": 0.55, "knrm": 0.40}
    values = {"bm25": {"nDCG@10": 0.50, "RR": 0.81}, "ql": {"nDCG@10": 0.47, "RR": 0.84},
              "tfidf": {"nDCG@10": 0.45, "RR": 0.70}, "knrm": {"nDCG@10": 0.30, "RR": 0.52}}
    return fulfilment, values


def _forbid(*_args, **_kwargs):
    raise AssertionError("computed again although the same inputs were cached")


def test_cached_correlation_equals_scipys_and_is_read_back(monkeypatch):
    pytest.importorskip("scipy")
    fulfilment, values = _values()
    direct = effectiveness.correlate(fulfilment, values, "nDCG@10")
    assert direct.kendall_tau == pytest.approx(1.0) and direct.pearson_r > 0.9
    first = analyses._correlation(fulfilment, values, "nDCG@10")
    monkeypatch.setattr(effectiveness, "correlate", _forbid)
    again = analyses._correlation(fulfilment, values, "nDCG@10")
    assert first == again == direct                     # exact floats through JSON
    values["knrm"]["nDCG@10"] = 0.46                    # another input: computed again
    with pytest.raises(AssertionError, match="computed again"):
        analyses._correlation(fulfilment, values, "nDCG@10")


def test_cached_json_recomputes_a_damaged_entry_and_can_be_off(monkeypatch, tmp_path):
    monkeypatch.setenv("ABNIRML_FIGURE_CACHE", str(tmp_path))
    assert plots.cached_json("v", lambda: [1.5, None], "in") == [1.5, None]
    (entry,) = tmp_path.glob("v-*.json")
    entry.write_text("{not json")
    assert plots.cached_json("v", lambda: [2.5], "in") == [2.5]
    assert plots.cached_json("v", _forbid, "in") == [2.5]
    monkeypatch.setenv("ABNIRML_FIGURE_CACHE", "off")
    assert plots.cached_json("v", lambda: [3], "in") == [3]


def test_interval_figures_are_drawn_once_per_input(monkeypatch):
    pytest.importorskip("matplotlib")
    records = [{"family": "tmp", "subset": "all", "probe": f"tmp:{p}", "ranker": r,
                "score": s, "ci_low": s - 0.1, "ci_high": s + 0.1}
               for p, r, s in (("a", "bm25", 0.2), ("a", "ql", -0.3), ("b", "bm25", 0.5))]
    png = intervals.interval_figure(records, "tmp")
    assert png[:4] == b"\x89PNG"
    monkeypatch.setattr(intervals, "_draw_intervals", _forbid)
    assert intervals.interval_figure(records, "tmp") == png
    assert intervals.interval_figure(records, "axiom") is None
    records[0]["ci_high"] = 0.35
    with pytest.raises(AssertionError, match="computed again"):
        intervals.interval_figure(records, "tmp")


def test_the_report_takes_the_all_subset_from_one_full_sweep(monkeypatch):
    """The δ section sweeps once and filters ``all``: the same points, in the same order,
    as a sweep restricted to ``all``, and δ is computed once per ranker and percentile."""
    import numpy as np

    from abnirml.evaluation.execution.score_file import (
        ProbeInfo,
        ProbeScores,
        RankerInfo,
        ScoreStore,
    )
    from abnirml.evaluation.stats import sweep as sweep_module
    from abnirml.evaluation.stats.calibration import Calibration

    rng = np.random.default_rng(3)
    probes = [ProbeInfo(f"tmp:{i}", "tmp", i == 2) for i in range(4)]
    grade = rng.integers(0, 4, 50).astype(np.float64)
    store = ScoreStore(
        probes=probes, rankers=[RankerInfo("a"), RankerInfo("b")],
        scores={(p.name, r): ProbeScores(rng.normal(size=50), rng.normal(size=50), grade)
                for p in probes for r in ("a", "b")},
        calibrations={r: Calibration(0.3, np.abs(rng.normal(size=30)), 5, "calibrated")
                      for r in ("a", "b")})
    calls = []
    original = sweep_module.delta_at
    monkeypatch.setattr(sweep_module, "delta_at", lambda c, p: calls.append(p) or original(c, p))
    every = sweep_module.sweep(store)
    assert len(calls) == 2 * len(sweep_module.DEFAULT_PERCENTILES)
    assert [p for p in every if p.subset == "all"] == sweep_module.sweep(store, subsets=["all"])
    assert {p.subset for p in every} > {"all"}
