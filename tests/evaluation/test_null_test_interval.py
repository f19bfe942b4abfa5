"""The identical-document null test's interval counts both its lists and its queries.

Known answers: the Wilson score interval of a share p̂ over n trials at 95 % is
(p̂ + z²/2n ± z·√(p̂(1 − p̂)/n + z²/4n²)) / (1 + z²/n), z = 1.959964; lists of one query
count as n / (1 + (m − 1)·ρ) trials (Kish), ρ the queries' intraclass correlation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from abnirml.evaluation.analyses.position_analyses import rate_interval

Z = 1.959963984540054


def wilson(rate: float, trials: float) -> tuple[float, float]:
    shrink = 1 + Z * Z / trials
    centre = (rate + Z * Z / (2 * trials)) / shrink
    half = Z / shrink * math.sqrt(rate * (1 - rate) / trials + Z * Z / (4 * trials ** 2))
    return max(0.0, centre - half), min(1.0, centre + half)


def test_every_query_with_the_same_share_is_not_a_point():
    # 8 lists over 2 queries, the earlier copy first in one of each query's four: the
    # queries agree exactly, so resampling them showed 25.0 % – 25.0 %; the lists vary
    hits = np.array([1, 0, 0, 0, 0, 1, 0, 0], dtype=float)
    low, high = rate_interval(hits, np.repeat([0, 1], 4), 0.95)
    assert (low, high) == pytest.approx(wilson(0.25, 8))
    assert (round(low, 3), round(high, 3)) == (0.071, 0.591)     # statsmodels agrees


def test_queries_whose_lists_all_agree_count_once_each():
    # one query's copies always first, the other's never: ρ = 1, two trials' worth
    hits = np.array([1, 1, 1, 1, 0, 0, 0, 0], dtype=float)
    assert rate_interval(hits, np.repeat([0, 1], 4), 0.95) == pytest.approx(wilson(0.5, 2))
    # every list of every query agrees: only the 16 queries count (never a point either)
    low, high = rate_interval(np.ones(64), np.repeat(np.arange(16), 4), 0.95)
    assert high == 1.0 and low == pytest.approx(16 / (16 + Z * Z))


def test_between_the_two_the_design_effect_of_the_intraclass_correlation():
    rng = np.random.default_rng(3)
    cluster = np.repeat(np.arange(12), 6)
    hits = (rng.uniform(size=72) < np.repeat(rng.uniform(0.1, 0.9, 12), 6)).astype(float)
    # one-way ANOVA from its definition: mean squares between and within the queries
    means = hits.reshape(12, 6).mean(axis=1)
    between = 6 * np.sum((means - hits.mean()) ** 2) / 11
    within = np.sum((hits.reshape(12, 6) - means[:, None]) ** 2) / (72 - 12)
    rho = max(0.0, (between - within) / (between + 5 * within))
    effective = 72 / (1 + 5 * rho)
    assert 12 < effective < 72
    assert rate_interval(hits, cluster, 0.95) == pytest.approx(wilson(hits.mean(), effective))


def test_one_query_has_no_interval():
    assert rate_interval(np.array([1.0, 0.0, 1.0]), np.zeros(3), 0.95) is None
