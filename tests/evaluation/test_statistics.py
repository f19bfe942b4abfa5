import numpy as np
import pytest
from scipy import stats

from abnirml.evaluation.stats.calibration import adjacent_gaps, calibrate
from abnirml.evaluation.stats.statistics import (
    bonferroni_significant,
    effects,
    paired_ttest_p,
    summarize,
)


def test_effects_with_delta():
    diff = np.array([0.5, -0.5, 0.1, -0.1, 0.2, -0.2])
    assert effects(diff, 0.2).tolist() == [1, -1, 0, 0, 0, 0]
    assert effects(diff, 0.2, symmetric=True).tolist() == [1, 1, 0, 0, 0, 0]
    assert effects(diff, 0.0).tolist() == [1, -1, 1, -1, 1, -1]


def test_summary_counts_score_and_mean_diff():
    s1 = np.array([3.0, 1.0, 2.0, 5.0])
    s2 = np.array([1.0, 2.0, 2.05, 1.0])
    summary = summarize(s1, s2, delta=0.1)
    assert (summary.pos, summary.neg, summary.neutral, summary.n) == (2, 1, 1, 4)
    assert summary.score == pytest.approx(0.25)
    assert summary.mean_diff == pytest.approx(np.mean(s1 - s2))
    symmetric = summarize(s1, s2, delta=0.1, symmetric=True)
    assert symmetric.score == pytest.approx(0.75)
    assert 0.0 <= symmetric.score <= 1.0


def test_ttest_matches_scipy():
    rng = np.random.default_rng(1)
    a = rng.normal(size=50)
    b = a + rng.normal(0.3, 1.0, size=50)
    assert paired_ttest_p(a, b) == pytest.approx(stats.ttest_rel(a, b).pvalue, rel=1e-10)


def test_ttest_degenerate_cases():
    same = np.array([1.0, 2.0, 3.0])
    assert paired_ttest_p(same, same) == 1.0          # no difference at all
    # every sample moved by exactly 1: no t statistic; the exact sign-flip p-value is the
    # share of the 2³ sign patterns whose |mean| reaches 1 (all + or all −): 2/8
    assert paired_ttest_p(same, same - 1.0) == 0.25
    assert np.isnan(paired_ttest_p(np.array([1.0]), np.array([0.0])))   # n < 2: undefined


def test_symmetric_probes_test_magnitude_against_delta():
    rng = np.random.default_rng(3)
    s1 = rng.normal(size=200)
    s2 = s1 + rng.choice([-1.0, 1.0], size=200) * rng.uniform(0.5, 1.5, size=200)
    # signs cancel, so a paired test sees nothing; magnitudes are clearly above δ = 0.2
    assert paired_ttest_p(s1, s2) > 0.01
    summary = summarize(s1, s2, delta=0.2, symmetric=True)
    expected = stats.ttest_1samp(np.abs(s1 - s2) - 0.2, 0.0, alternative="greater").pvalue
    assert summary.p_value == pytest.approx(expected, rel=1e-9)
    assert summary.p_value < 1e-10
    # magnitudes below δ: not significant
    assert summarize(s1, s2, delta=5.0, symmetric=True).p_value > 0.5


def test_bonferroni_against_scaled_threshold():
    p = [0.001, 0.004, 0.02, 0.5]
    # m = 4, alpha = 0.01: significant iff p < 0.0025
    assert bonferroni_significant(p, 0.01) == [True, False, False, False]
    assert bonferroni_significant(p, 0.1) == [True, True, True, False]   # 0.02·4 < 0.1


def test_adjacent_gaps_of_top_ten():
    scores = np.arange(20, dtype=float)[::-1] * 2   # 38, 36, …, 0
    rng = np.random.default_rng(0)
    gaps = adjacent_gaps(rng.permutation(scores))
    assert gaps.tolist() == [2.0] * 9


def test_calibration_is_median_of_pooled_gaps():
    per_query = {
        "q1": np.array([10.0, 9.0, 7.0]),        # gaps 1, 2
        "q2": np.array([5.0, 5.0, 4.5, 0.5]),    # gaps 0, 0.5, 4
    }
    result = calibrate(per_query)
    assert sorted(result.gaps.tolist()) == [0.0, 0.5, 1.0, 2.0, 4.0]
    assert result.delta == 1.0
    assert result.queries == 2
    assert result.at_percentile(100) == 4.0
    assert result.at_percentile(0) == 0.0
