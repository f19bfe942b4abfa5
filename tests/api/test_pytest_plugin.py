"""The pytest plugin: --abnirml gating, readable failures, results cached between runs."""

from __future__ import annotations

import os
from importlib.metadata import entry_points
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SRC = str(Path(__file__).resolve().parents[2] / "src")
INSTALLED = any(e.value == "abnirml.pytest_plugin" for e in entry_points(group="pytest11"))
PLUGIN = [] if INSTALLED else ["-p", "abnirml.pytest_plugin"]

GATES = '''
def test_tf_wins(abnirml):
    assert abnirml.expect("bm25", "mmp:tf:length").score >= 0.9

def test_impossible(abnirml):
    assert abnirml.expect("bm25", "mmp:tf:length").score >= 1.5

def test_ql_shuffles(abnirml):
    result = abnirml.expect("ql", "tmp:shuffle-words")
    assert result.score == 0 and result.n > 0
'''


@pytest.fixture
def gates(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    pytester.makepyfile(test_gates=GATES)
    return pytester


def test_gates_skip_without_the_option(gates):
    result = gates.runpytest_subprocess(*PLUGIN, "-rs")
    result.assert_outcomes(skipped=3)
    result.stdout.fnmatch_lines(["*behaviour gates run with pytest --abnirml*"])


def test_failures_name_probe_score_and_counterexamples(gates):
    result = gates.runpytest_subprocess(*PLUGIN, "--abnirml", "-rN")
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    assert "abnirml: bm25 on mmp:tf:length (demo, all)" in out
    assert "score +" in out and "prefer d1" in out and "δ =" in out
    assert ">= 1.5" in out


@pytest.mark.slow
def test_results_are_cached_between_runs(gates):
    first = gates.runpytest_subprocess(*PLUGIN, "--abnirml", "-k", "impossible")
    first.assert_outcomes(failed=1)
    assert "(cached result)" not in first.stdout.str()
    second = gates.runpytest_subprocess(*PLUGIN, "--abnirml", "-k", "impossible")
    second.assert_outcomes(failed=1)
    assert "(cached result)" in second.stdout.str()
    fresh = gates.runpytest_subprocess(*PLUGIN, "--abnirml", "--abnirml-refresh", "-k",
                                       "impossible")
    assert "(cached result)" not in fresh.stdout.str()


def test_counterexamples_go_against_the_probe_sign():
    from abnirml.expect import expect

    found = expect("bm25", "mmp:length:relevance")
    assert found.neg > 0
    assert 0 < len(found.counterexamples) <= 3
    for example in found.counterexamples:
        assert example["score1"] - example["score2"] < -found.delta


def test_gate_scores_compare_like_floats_and_explain_themselves():
    from abnirml.pytest_plugin import GateResult, GateScore, pytest_assertrepr_compare

    result = GateResult(ranker="r", probe="p", collection="c", subset="all", score=0.5,
                        significant=True, p_value=0.001, n=10, pos=8, neg=2, neutral=0,
                        delta=0.1, record={"ci_low": 0.4, "ci_high": 0.6})
    assert isinstance(result.score, GateScore) and result.score == 0.5 and result.score < 0.6
    lines = pytest_assertrepr_compare(None, ">=", result.score, 0.95)
    assert lines[0] == "0.5 >= 0.95"
    assert "CI [+0.400, +0.600]" in lines[2]
    assert pytest_assertrepr_compare(None, ">=", 0.5, 0.95) is None


def test_gate_results_are_expectations_and_survive_the_cache_round_trip():
    from dataclasses import fields

    from abnirml.expect import Expectation
    from abnirml.pytest_plugin import GateResult, GateScore

    def plain(result):
        return Expectation(**{f.name: getattr(result, f.name) for f in fields(Expectation)})

    found = Expectation(ranker="r", probe="p", collection="c", subset="all", score=0.25,
                        significant=False, p_value=0.2, n=4, pos=2, neg=1, neutral=1,
                        delta=0.5, record={"ci_low": -0.1, "ci_high": 0.6, "probe": "p"},
                        counterexamples=({"query": "q", "doc1": "a", "doc2": "b",
                                          "score1": 0.0, "score2": 1.0, "meta": {}},))
    gate = GateResult.of(found)
    assert isinstance(gate, Expectation) and plain(gate) == found and not gate.cached
    assert isinstance(gate.ci_high, GateScore) and gate.ci_high == 0.6
    with pytest.raises(AssertionError, match="below"):
        gate.require(at_least=0.5)
    back = GateResult.from_json(gate.to_json())
    assert plain(back) == found and back.cached
    assert back.record == found.record and back.counterexamples == found.counterexamples
    assert back.ci_low == -0.1 and "(cached result)" in back.explain()[2]
    no_interval = GateResult.of(Expectation(**{**found.__dict__, "record": {}}))
    assert no_interval.ci_low is None and "CI" not in no_interval.explain()[1]
