"""Query-clustered bootstrap intervals, test choices, corrections and effect sizes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from abnirml.evaluation.stats.bootstrap import (
    cluster_codes,
    clustered_ci,
    resample_weights,
    stable_seed,
)
from abnirml.evaluation.stats.corrections import adjust, significant
from abnirml.evaluation.stats.significance import (
    StatsConfig,
    effect_size,
    p_value,
    permutation_p,
    record_fields,
)
from abnirml.evaluation.stats.statistics import effects, paired_ttest_p

# Five queries with unequal numbers of samples: per-sample score differences.
FIXTURE_DIFF = np.array([0.9, 0.4, -0.2,        # q1
                         0.0, 0.1,              # q2
                         -0.7,                  # q3
                         0.3, 0.3, 0.5, 0.8,    # q4
                         -0.1, 0.05])           # q5
FIXTURE_QUERY = np.array(["q1"] * 3 + ["q2"] * 2 + ["q3"] + ["q4"] * 4 + ["q5"] * 2)
DELTA = 0.15


def brute_force_ci(diff: np.ndarray, query: np.ndarray, delta: float, resamples: int,
                   level: float, rng: np.random.Generator) -> tuple[float, float]:
    """The textbook procedure, one resample at a time: draw queries with replacement,
    concatenate all their samples, recompute the score."""
    queries = sorted(set(query.tolist()))
    stats = []
    for _ in range(resamples):
        drawn = rng.choice(len(queries), size=len(queries), replace=True)
        pooled: list[int] = []
        for i in drawn:
            pooled.extend(int(e) for e in effects(diff[query == queries[i]], delta))
        stats.append(sum(pooled) / len(pooled))
    tail = (1 - level) / 2
    low, high = np.quantile(stats, [tail, 1 - tail])
    return float(low), float(high)


def test_ci_matches_brute_force_resampling_of_queries() -> None:
    # Vectorised interval with 20,000 resamples vs the loop with its own 20,000 draws:
    # both estimate the same bootstrap distribution, so the endpoints agree closely.
    eff = effects(FIXTURE_DIFF, DELTA).astype(np.float64)
    low, high = clustered_ci(eff, FIXTURE_QUERY, 20_000, 0.9, seed=3)  # type: ignore[misc]
    b_low, b_high = brute_force_ci(FIXTURE_DIFF, FIXTURE_QUERY, DELTA, 20_000, 0.9,
                                   np.random.default_rng(11))
    assert low == pytest.approx(b_low, abs=0.03)
    assert high == pytest.approx(b_high, abs=0.03)
    assert low < eff.mean() < high


def test_ci_equals_loop_over_the_same_draws() -> None:
    # Same multiplicity matrix, aggregated by hand: the vectorised sums are exact.
    eff = effects(FIXTURE_DIFF, DELTA).astype(np.float64)
    codes, k = cluster_codes(FIXTURE_QUERY, len(eff))
    weights = resample_weights(k, 500, np.random.default_rng(stable_seed(0, "p", "all")))
    by_hand = []
    for row in weights:
        pooled = [e for c, w in enumerate(row) for _ in range(int(w)) for e in eff[codes == c]]
        by_hand.append(np.mean(pooled))
    low, high = clustered_ci(eff, FIXTURE_QUERY, 500, 0.95, 0, ("p", "all"))  # type: ignore[misc]
    exp_low, exp_high = np.quantile(by_hand, [0.025, 0.975])
    assert float(low) == pytest.approx(exp_low, abs=1e-12)
    assert float(high) == pytest.approx(exp_high, abs=1e-12)


def test_exact_bootstrap_distribution_by_enumeration() -> None:
    # Three queries: all 27 ordered draws are equally likely; the vectorised resampler's
    # distribution of the pooled mean must match the enumerated one.
    values = np.array([1.0, 1.0, 0.0, -1.0, 0.0, 0.0])
    query = np.array([0, 0, 1, 1, 2, 2])
    exact: dict[float, float] = {}
    for draw in itertools.product(range(3), repeat=3):
        pooled = np.concatenate([values[query == q] for q in draw])
        key = round(float(pooled.mean()), 9)
        exact[key] = exact.get(key, 0.0) + 1 / 27
    codes, k = cluster_codes(query, len(values))
    weights = resample_weights(k, 200_000, np.random.default_rng(5))
    means = (weights @ np.bincount(codes, weights=values)) / (weights @ np.bincount(codes))
    observed = {key: float(np.mean(np.isclose(means, key))) for key in exact}
    for key, probability in exact.items():
        assert observed[key] == pytest.approx(probability, abs=0.005)


def test_clustering_widens_the_interval_when_a_query_dominates() -> None:
    # 40 queries, each with 50 identical effects: really 40 observations, not 2000.
    rng = np.random.default_rng(0)
    per_query = rng.choice([-1.0, 1.0], size=40)
    values = np.repeat(per_query, 50)
    query = np.repeat(np.arange(40), 50)
    low_c, high_c = clustered_ci(values, query, 2000, 0.95, 0)  # type: ignore[misc]
    low_i, high_i = clustered_ci(values, None, 2000, 0.95, 0)  # type: ignore[misc]
    assert (high_c - low_c) > 5 * (high_i - low_i)
    # ≈ ±1.96·SD/√40 for the clustered interval
    half = 1.96 * per_query.std() / np.sqrt(40)
    assert (high_c - low_c) / 2 == pytest.approx(half, rel=0.15)


def test_intervals_off_and_deterministic() -> None:
    assert clustered_ci(np.ones(3), None, 0, 0.95, 0) is None
    a = record_fields(FIXTURE_DIFF, np.zeros(12), DELTA, False, StatsConfig(seed=4),
                      FIXTURE_QUERY, ("p", "all"))
    b = record_fields(FIXTURE_DIFF, np.zeros(12), DELTA, False, StatsConfig(seed=4),
                      FIXTURE_QUERY, ("p", "all"))
    c = record_fields(FIXTURE_DIFF, np.zeros(12), DELTA, False, StatsConfig(seed=5),
                      FIXTURE_QUERY, ("p", "all"))
    assert a == b and a != c
    assert a["ci_low"] <= effects(FIXTURE_DIFF, DELTA).mean() <= a["ci_high"]  # type: ignore[operator]
    assert a["mean_diff_ci_low"] <= FIXTURE_DIFF.mean() <= a["mean_diff_ci_high"]  # type: ignore[operator]


def test_effect_size_is_mean_over_sd_of_differences() -> None:
    s1 = np.array([3.0, 5.0, 4.0, 6.0])
    s2 = np.array([1.0, 2.0, 2.0, 2.0])
    # differences 2, 3, 2, 4: mean 2.75, SD (ddof 1) = sqrt(0.9166…)
    assert effect_size(s1, s2, 0.0) == pytest.approx(2.75 / np.sqrt(11 / 12))
    assert effect_size(s1, s1 - 1.0, 0.0) is None          # constant differences
    # symmetric probes: no direction to standardise; the score (a rate) is the effect size
    assert effect_size(np.array([1.0, -2.0, 3.0]), np.zeros(3), 0.5, symmetric=True) is None


def test_corrections_known_answers() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    assert significant(p, 0.05, "bonferroni") == [True, False, False, True]
    assert significant(p, 0.05, "holm") == [True, False, False, True]
    assert significant(p, 0.05, "bh") == [True, True, True, True]
    assert significant(p, 0.02, "none") == [True, False, False, True]
    assert adjust(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert adjust(p, "bh") == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert adjust(p, "bonferroni") == pytest.approx([0.04, 0.16, 0.12, 0.02])


def test_permutation_p_matches_exact_enumeration() -> None:
    values = np.array([0.5, 1.0, -0.2, 0.8, 0.3, 0.1, 0.9, -0.4])
    observed = abs(values.mean())
    flips = np.array(list(itertools.product([-1, 1], repeat=8)))
    exact = float(np.mean(np.abs(flips @ values / 8) >= observed - 1e-12))
    estimate = permutation_p(values, 50_000, np.random.default_rng(1))
    assert estimate == pytest.approx(exact, abs=0.01)


def test_ttest_is_the_papers_paired_ttest_and_the_default_tests_queries() -> None:
    assert StatsConfig().test == "clustered"
    s1 = np.array([1.0, 2.5, 3.0, 0.5, 2.0])
    s2 = np.array([0.5, 2.0, 3.5, 0.0, 1.0])
    assert p_value(s1, s2, 0.1, False, StatsConfig(test="ttest")) == paired_ttest_p(s1, s2)
    from scipy.stats import wilcoxon

    assert p_value(s1, s2, 0.1, False, StatsConfig(test="wilcoxon")) == pytest.approx(
        wilcoxon(s1 - s2).pvalue)
    # a clear effect is found by every test; no effect by none
    rng = np.random.default_rng(2)
    big = rng.normal(1.0, 0.5, size=60)
    query = np.repeat(np.arange(20), 3)
    for test in ("clustered", "ttest", "wilcoxon", "permutation", "bootstrap"):
        config = StatsConfig(test=test, permutations=2000)
        assert p_value(big, np.zeros(60), 0.0, False, config, query, ("k",)) < 0.01, test
        assert p_value(np.zeros(60), np.zeros(60), 0.0, False, config, query, ("k",)) \
            > 0.5, test


def test_percentile_interval_is_numpys_linear_quantile() -> None:
    """The interval reads the same values as np.quantile's default method, ties, 1-D and
    2-D statistics, tiny and huge samples alike (it replaces that call for speed)."""
    from abnirml.evaluation.stats.bootstrap import percentile_interval

    rng = np.random.default_rng(3)
    for trial in range(400):
        n = int(rng.integers(1, 2500))
        values = (rng.normal(size=(n, 3)) if trial % 2
                  else rng.integers(-3, 4, size=(n, 3)) / 7)
        level = float(rng.choice([0.5, 0.9, 0.95, 0.99, 0.999999, rng.uniform(0.01, 0.99)]))
        tail = (1 - level) / 2
        for sample in (values, values[:, 0]):
            low, high = percentile_interval(sample, level)
            expected = np.quantile(sample, [tail, 1 - tail], axis=0)
            assert np.array_equal(low, expected[0]) and np.array_equal(high, expected[1])


def test_cluster_codes_number_labels_in_sorted_order() -> None:
    """Integer labels (a subset's query codes, with gaps) are renumbered 0…k−1 in
    ascending order, exactly as np.unique's inverse; other labels too."""
    rng = np.random.default_rng(4)
    for _ in range(200):
        labels = rng.integers(0, int(rng.integers(1, 60)), size=int(rng.integers(1, 300)))
        codes, k = cluster_codes(labels, labels.size)
        unique, inverse = np.unique(labels, return_inverse=True)
        assert k == unique.size and np.array_equal(codes, inverse.reshape(-1))
    codes, k = cluster_codes(np.array(["b", "a", "b", "c"]), 4)
    assert k == 3 and codes.tolist() == [1, 0, 1, 2]
    codes, k = cluster_codes(np.array([10**12, 5, 10**12]), 3)   # sparse: sorted path
    assert k == 2 and codes.tolist() == [1, 0, 1]
