"""Foil win rates with known answers: counts, ties, the clustered interval and its exact
bound when every pair agrees."""

from __future__ import annotations

import numpy as np
import pytest

from abnirml.evaluation.analyses.foil_wins import attach_foil_wins, win_rate_fields, wins


def test_a_win_is_a_strictly_higher_foil_score():
    assert wins(np.array([2.0, 1.0, 0.5, 0.7]), np.array([1.0, 1.0, 0.5, 0.9])).tolist() == \
        [1.0, 0.0, 0.0, 0.0]
    # a preference ranker's (p, ½): a tie that followed the position is not a win
    assert wins(np.array([1.0, 0.5, 0.0]), np.full(3, 0.5)).tolist() == [1.0, 0.0, 0.0]


def test_the_rate_and_its_query_clustered_interval():
    won = np.array([1, 1, 1, 0, 0, 1, 0, 1], dtype=float)
    cluster = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    fields = win_rate_fields(won, cluster, 2000, 0.95, 7, ("p", "all"))
    assert fields["foil_wins"] == 5 and fields["foil_win_rate"] == 0.625
    low, high = fields["foil_win_rate_ci_low"], fields["foil_win_rate_ci_high"]
    assert 0.0 <= low < 0.625 < high <= 1.0
    # the same seed and key draw the same queries; a narrower level lies inside
    assert fields == win_rate_fields(won, cluster, 2000, 0.95, 7, ("p", "all"))
    other = win_rate_fields(won, cluster, 2000, 0.5, 7, ("p", "all"))
    assert low <= other["foil_win_rate_ci_low"] <= other["foil_win_rate_ci_high"] <= high


def test_every_pair_agreeing_gets_the_exact_bound_over_the_queries():
    cluster = np.repeat(np.arange(5), 3)
    all_won = win_rate_fields(np.ones(15), cluster, 1000, 0.95, 0, ("p", "all"))
    assert all_won["foil_win_rate"] == 1.0
    assert all_won["foil_win_rate_ci_low"] == pytest.approx(0.025 ** (1 / 5))
    assert all_won["foil_win_rate_ci_high"] == 1.0
    none_won = win_rate_fields(np.zeros(15), cluster, 1000, 0.95, 0, ("p", "all"))
    assert none_won["foil_win_rate"] == 0.0 and none_won["foil_win_rate_ci_low"] == 0.0
    assert none_won["foil_win_rate_ci_high"] == pytest.approx(1 - 0.025 ** (1 / 5))


@pytest.mark.parametrize(("cluster", "resamples"), [(np.zeros(4, dtype=int), 1000),
                                                    (np.arange(4), 0)])
def test_one_query_or_intervals_off_leave_the_interval_undefined(cluster, resamples):
    fields = win_rate_fields(np.array([1.0, 0.0, 1.0, 1.0]), cluster, resamples, 0.95, 0, ())
    assert fields["foil_win_rate"] == 0.75
    assert fields["foil_win_rate_ci_low"] is fields["foil_win_rate_ci_high"] is None
    assert win_rate_fields(np.zeros(0), None, 1000, 0.95, 0, ())["foil_win_rate"] is None


class _Scores:
    def __init__(self, score1, score2, grade):
        self.score1, self.score2 = np.asarray(score1), np.asarray(score2)
        self.grade, self.cluster, self.subsets = np.asarray(grade), None, None


class _Probe:
    def __init__(self, name, foil):
        self.name, self.foil = name, foil


def test_only_foil_probes_records_get_the_fields_per_subset():
    scores = {("foil", "r"): _Scores([3, 1, 2, 5], [1, 2, 2, 4], [0, 0, 2, 2]),
              ("plain", "r"): _Scores([3, 1], [1, 2], [0, 2])}
    records = [{"probe": p, "ranker": "r", "subset": s}
               for p in ("foil", "plain") for s in ("all", "non-relevant", "relevant")]

    def masks(ps):
        return [("all", np.ones(ps.grade.shape, bool)), ("non-relevant", ps.grade < 2),
                ("relevant", ps.grade >= 2)]

    attach_foil_wins(records, [_Probe("foil", True), _Probe("plain", False)], scores, masks,
                     0, 0.95, 0)
    rates = [(r["subset"], r["foil_wins"], r["foil_win_rate"]) for r in records[:3]]
    assert rates == [("all", 2, 0.5), ("non-relevant", 1, 0.5), ("relevant", 1, 0.5)]
    assert not any("foil_wins" in r for r in records[3:])
