"""The ranking-bias probes through the listwise path, with ``listwise-of:bm25``: each pair
placed in a list of the query's candidates at (i, j) and again at (j, i), so a verdict
that only follows the position is a tie and is counted apart (``position_bias``).

``listwise-of:bm25`` sorts each window by BM25 (ties keep their input order), so its
preference on a pair is BM25's wherever BM25's two scores differ: p = 1 where BM25 prefers
d1, 0 where it prefers d2, ½ (the earlier-placed text won both times) where they tie —
as on every early-evidence pair, whose texts hold the same terms.
"""

from __future__ import annotations

import numpy as np
import pytest

from abnirml.pipeline import RunConfig, SessionSettings, StatisticsSettings, run

PROBES = ["bias:early-evidence", "bias:repetition", "bias:brevity", "bias:keyword-stuffing",
          "bias:biased-foil"]
LISTWISE = "listwise-of:bm25"


@pytest.fixture(scope="module")
def both():
    return run(RunConfig(collection="demo", rankers=["bm25", LISTWISE], probes=PROBES,
                         effectiveness=False, statistics=StatisticsSettings(delta=0.0),
                         session=SessionSettings(cache=None, progress=False)))


def _row(out, probe, ranker):
    return next(r for r in out.result.records
                if (r["probe"], r["ranker"], r["subset"]) == (probe, ranker, "all"))


@pytest.mark.parametrize("probe", PROBES)
def test_the_listwise_verdict_is_bm25s_wherever_bm25s_scores_differ(both, probe):
    pointwise = both.result.probe_scores[(probe, "bm25")]
    listwise = both.result.probe_scores[(probe, LISTWISE)]
    assert listwise.preferences and listwise.score1.shape == pointwise.score1.shape
    diff = pointwise.score1 - pointwise.score2
    expected = np.where(diff > 0, 1.0, np.where(diff < 0, 0.0, 0.5))
    assert listwise.score1.tolist() == expected.tolist()
    row = _row(both, probe, LISTWISE)
    assert row["position_bias"] == pytest.approx(float((diff == 0).mean()))
    assert row["pos"] == int((diff > 0).sum()) and row["neg"] == int((diff < 0).sum())


def test_early_evidence_is_all_position_for_a_bag_of_words_list(both):
    row = _row(both, "bias:early-evidence", LISTWISE)
    assert row["n"] >= 20 and row["score"] == 0.0 and row["position_bias"] == 1.0
    assert both.run_info["counts"]["windows_ranked"] > 0


@pytest.mark.parametrize("probe", ["bias:keyword-stuffing", "bias:biased-foil"])
def test_the_foil_win_rate_of_the_list_is_bm25s(both, probe):
    pointwise, listwise = _row(both, probe, "bm25"), _row(both, probe, LISTWISE)
    assert listwise["foil_wins"] == pointwise["foil_wins"]
    assert listwise["foil_win_rate"] == pointwise["foil_win_rate"]
