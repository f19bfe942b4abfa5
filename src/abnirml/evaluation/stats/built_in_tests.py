"""The statistical tests every run knows, as records (:data:`BUILT_IN_TESTS`), and their
p-value functions. The registry (:mod:`.stat_tests`) loads them on first use; this module
imports only the record types, so the registry, the tests and the settings
(:mod:`.significance`) never import each other in a circle. What each test asks is in
:mod:`.significance`'s docstring.
"""

from __future__ import annotations

import math

import numpy as np

from abnirml.evaluation.stats.bootstrap import cluster_codes, clustered_means, weight_blocks
from abnirml.evaluation.stats.stat_test_types import RoundsRule, StatisticalTest, TestData
from abnirml.evaluation.stats.statistics import greater_than_zero_p, paired_ttest_p


def _ttest_p(data: TestData) -> float:
    return (greater_than_zero_p(data.values) if data.symmetric
            else paired_ttest_p(data.score1, data.score2))


def _wilcoxon_p(data: TestData) -> float:
    return wilcoxon_p(data.values, one_sided=data.symmetric)


def _permutation_p(data: TestData) -> float:
    return permutation_p(data.values, data.rounds, data.rng, one_sided=data.symmetric)


def _bootstrap_p(data: TestData) -> float:
    return bootstrap_p(data.values, data.cluster, data.rounds, data.rng,
                       one_sided=data.symmetric)


def _clustered_p(data: TestData) -> float:
    from abnirml.evaluation.stats.verdict import clustered_p

    return clustered_p(data.statistic, data.cluster, data.rounds, data.rng, data.symmetric)


def wilcoxon_p(values: np.ndarray, one_sided: bool = False) -> float:
    """Wilcoxon signed-rank p-value of median(values) ≠ 0 (> 0 when ``one_sided``)."""
    if not np.any(values != 0):
        return 1.0
    from scipy.stats import wilcoxon

    result = wilcoxon(values, alternative="greater" if one_sided else "two-sided")
    return float(result.pvalue)


EXACT_SIGN_FLIPS = 16
"""Up to this many samples (and 2ⁿ ≤ the rounds asked for) the randomization test
enumerates all 2ⁿ sign patterns: the exact p-value, cheaper than the random rounds."""


def permutation_p(values: np.ndarray, rounds: int, rng: np.random.Generator,
                  one_sided: bool = False, chunk: int = 1 << 22) -> float:
    """Fisher randomization: flip each value's sign at random, ``rounds`` times (chunked);
    exact (every sign pattern once) when 2ⁿ ≤ ``rounds`` and n ≤ :data:`EXACT_SIGN_FLIPS`."""
    n = values.shape[0]
    observed = float(values.mean())
    tolerance = 1e-12 * max(float(np.abs(values).max()), 1e-300)
    if n <= EXACT_SIGN_FLIPS and 2 ** n <= rounds:
        codes = np.arange(2 ** n, dtype=np.int64)[:, None] >> np.arange(n, dtype=np.int64)
        means = ((codes & 1) * 2 - 1).astype(np.float64) @ values / n
        if one_sided:
            return float(np.mean(means >= observed - tolerance))
        return float(np.mean(np.abs(means) >= abs(observed) - tolerance))
    reached = 0
    per_chunk = max(1, chunk // n)
    done = 0
    while done < rounds:
        m = min(per_chunk, rounds - done)
        signs = rng.integers(0, 2, size=(m, n), dtype=np.int8) * 2 - 1
        means = (signs @ values) / n
        if one_sided:
            reached += int((means >= observed - tolerance).sum())
        else:
            reached += int((np.abs(means) >= abs(observed) - tolerance).sum())
        done += m
    return (1 + reached) / (1 + rounds)


def bootstrap_p(values: np.ndarray, cluster: np.ndarray | None, resamples: int,
                rng: np.random.Generator, one_sided: bool = False) -> float:
    """Share of query-clustered bootstrap means on the far side of 0 (×2 when two-sided),
    and never below what an exact test over the k queries can give, 2/2ᵏ (one-sided 1/2ᵏ:
    :func:`.verdict.query_floor` — when every query's mean leans one way no resample
    crosses 0, whether k is 2 or 200); NaN with one query, whose every resample is itself
    (no variation to test against). Resamples are drawn and counted in blocks, so memory
    does not grow with their number."""
    from abnirml.evaluation.stats.verdict import query_floor

    codes, k = cluster_codes(cluster, values.shape[0])
    if k < 2:
        return math.nan
    resamples = max(resamples, 1)
    low = high = 0
    for block in weight_blocks(k, resamples, rng):
        means = clustered_means(values, codes, k, block)
        low += int((means <= 0).sum())
        high += int((means >= 0).sum())
    below = (1 + low) / (1 + resamples)
    floor = query_floor(k, one_sided)
    if one_sided:
        return min(1.0, max(below, floor))
    above = (1 + high) / (1 + resamples)
    return min(1.0, max(2.0 * min(below, above), floor))


_QUERY_RESAMPLES = RoundsRule(floor=2.0, option="bootstrap", config_field="resamples",
                              unit="resamples of queries")

BUILT_IN_TESTS: tuple[StatisticalTest, ...] = (
    StatisticalTest("clustered", "query-clustered bootstrap test of the score", _clustered_p,
                    rounds=RoundsRule(floor=2.0, option="bootstrap",
                                      config_field="resamples",
                                      unit="resamples of queries", least=0),
                    score_interval=True, queries_as_unit=True,
                    symmetric_question="score > 0",
                    help="query-clustered bootstrap test of the score; a row is significant "
                         "exactly when its printed score interval excludes 0"),
    StatisticalTest("ttest", "paired t-test", _ttest_p,
                    help="the ABNIRML papers' paired t-test over samples (reproduces their "
                         "tables)"),
    StatisticalTest("wilcoxon", "Wilcoxon signed-rank test", _wilcoxon_p),
    StatisticalTest("permutation", "Fisher randomization test", _permutation_p,
                    rounds=RoundsRule(floor=1.0, option="permutations",
                                      config_field="permutations", unit="sign-flip rounds")),
    StatisticalTest("bootstrap", "query-clustered bootstrap test", _bootstrap_p,
                    rounds=_QUERY_RESAMPLES, queries_as_unit=True,
                    help="query-clustered bootstrap test of the mean difference"),
)
"""The tests every run knows, the default first."""
