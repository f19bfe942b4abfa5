"""Statistics with few queries: no row claims more than its queries can carry, and a
stronger effect never reads weaker than a weaker one.

Known answers: an exact test over k queries (each query's effects sign-flipped, all 2ᵏ
ways) gives at best p = 2/2ᵏ, reached when every query leans the same way; the exact
(Clopper–Pearson) bound of a perfect score over k queries at coverage 1 − a is
2·(a/2)^(1/k) − 1.
"""

from __future__ import annotations

import numpy as np
import pytest

from abnirml.evaluation.stats.significance import StatsConfig, caption, p_value, record_fields
from abnirml.evaluation.stats.verdict import DrawItem, query_floor, row_rules, table_draws


def _draws(effects, cluster, rounds=60_000, symmetric=False, alpha=0.05):
    (found,) = table_draws([DrawItem("f", "all", np.asarray(effects, dtype=np.float64),
                                     np.asarray(cluster), symmetric)], {"f": rounds}, 0,
                           alpha)
    return found


def test_two_queries_are_never_significant():
    # two queries that both lean +, not every sample alike: the clustered bootstrap never
    # draws a resample ≤ 0, so on its own it gave p = 2/(R + 1) ≈ 3e-5
    (single,) = _draws([[1.0], [1.0]], [0, 1])              # 2 samples, both +1
    assert single.p_value() == 0.5
    effects = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    for drawn in _draws(effects, [0, 0, 1, 1]):             # two rankers, two queries
        assert drawn.resampled_p() < 1e-4
        assert drawn.p_value() == 0.5 and drawn.floored
        (rule,) = row_rules([drawn.p_value()], 0.05, "none")
        low, high = drawn.interval(rule)
        assert low <= 0.0 <= high                           # not significant, and says so


def test_the_default_test_and_the_bootstrap_test_on_two_queries_as_compare_asks():
    # compare's paired test: the change of effect per sample, clustered by query
    a = np.array([0.0, -1.0])
    b = np.array([1.0, 1.0])
    cluster = np.array([0, 1])
    clustered = p_value(b, a, 0.0, False, StatsConfig(), cluster, ("compare", "p", "all"),
                        100_000, statistic=b - a)
    assert clustered == 0.5
    bootstrap = p_value(np.array([0.9, 0.4]), np.array([0.1, 0.2]), 0.0, False,
                        StatsConfig(test="bootstrap"), cluster, ("p", "all", "r"), 100_000)
    assert bootstrap == 0.5
    # a symmetric probe's bootstrap test is one-sided: at best 1/2ᵏ
    one_sided = p_value(np.array([0.9, 0.4]), np.array([0.1, 0.2]), 0.0, True,
                        StatsConfig(test="bootstrap"), cluster, ("p", "all", "r"), 100_000)
    assert one_sided == 0.25


@pytest.mark.parametrize("queries", [3, 5, 8, 12])
def test_every_query_leaning_one_way_gives_the_exact_sign_flip_p(queries):
    rng = np.random.default_rng(queries)
    sizes = rng.integers(2, 6, size=queries)
    cluster = np.repeat(np.arange(queries), sizes)
    effects = np.ones(cluster.shape[0])
    effects[np.cumsum(sizes) - 1] = 0.0                      # one tie in every query
    (drawn,) = _draws(effects[:, None], cluster)
    assert drawn.p_value() == 2 / 2 ** queries == query_floor(queries)
    # with a query the other way the resamples cross 0: their p, never below the floor
    effects[0] = effects[1] = -1.0
    (drawn,) = _draws(effects[:, None], cluster)
    assert drawn.below > 0
    assert drawn.p_value() == max(drawn.resampled_p(), 2 / 2 ** queries)


def _sixteen_queries(agreeing: int) -> tuple[np.ndarray, np.ndarray]:
    """160 samples over 16 queries, the first ``agreeing`` +1 and the rest ties (every
    query keeps at least 7 of its 10 samples at +1)."""
    effects = np.zeros(160)
    order = np.argsort(np.tile(np.arange(10), 16), kind="stable")   # spread the ties
    effects[order[:agreeing]] = 1.0
    return effects, np.repeat(np.arange(16), 10)


@pytest.mark.parametrize("tests", [651, 126])
def test_a_perfect_score_never_reads_weaker_than_a_near_perfect_one(tests):
    """160/160 against 148/160 over the same 16 queries, in a table of ``tests`` tests
    (Bonferroni): the same verdict, and the perfect score's lower end no lower."""
    perfect, cluster = _sixteen_queries(160)
    near, _ = _sixteen_queries(148)
    rows = _draws(np.stack([perfect, near], axis=1), cluster, rounds=300_000, alpha=0.01)
    p = [d.p_value() for d in rows]
    assert p == [2 / 2 ** 16, 2 / 2 ** 16]                  # every query leans +
    rules = row_rules(p, 0.01, "bonferroni")
    rules = [type(r)(float(tests), r.divisor, r.alpha) for r in rules]   # m tests
    (lp, hp), (ln, hn) = (d.interval(r) for d, r in zip(rows, rules, strict=True))
    significant = [r.passes(x) for r, x in zip(rules, p, strict=True)]
    assert significant == [tests == 126] * 2                # 2/2¹⁶ vs α/m
    assert lp >= ln and hp >= hn
    assert (lp > 0) == (ln > 0) == significant[0]
    bound = 2 * ((0.01 / tests) / 2) ** (1 / 16) - 1        # exact bound of 16 × +1
    assert lp == pytest.approx(bound, abs=1e-12)
    assert ln <= bound + 1e-12


def test_the_intervals_beside_another_test_never_read_weaker_either():
    """With --test ttest the intervals are 95 % ones: 140/140 over 7 queries gets the
    exact bound, and 133/140 no narrower lower end than that."""
    cluster = np.repeat(np.arange(7), 20)
    config = StatsConfig(test="ttest", resamples=2000)
    perfect = record_fields(np.ones(140), np.zeros(140), 0.5, False, config, cluster, ("k",))
    near_scores = np.ones(140)
    near_scores[::20] = 0.0                                  # one tie in each query
    near = record_fields(near_scores, np.zeros(140), 0.5, False, config, cluster, ("k",))
    bound = 2 * 0.025 ** (1 / 7) - 1
    assert perfect["ci_low"] == pytest.approx(bound, abs=1e-12)
    assert near["ci_low"] <= perfect["ci_low"] and near["ci_high"] <= perfect["ci_high"]


def test_a_symmetric_rows_caption_states_the_coverage_its_ends_have():
    """A symmetric probe is tested one-sided, so each end of its interval is a one-sided
    bound at the row's level α/m: coverage 1 − 2α/m, which the caption says."""
    text = caption("clustered", "bonferroni", 0.01, 0.95, 1000)
    assert "1 − α/m" in text and "1 − 2α/m" in text
    # and the code: the ends are the (j+1)-th smallest and largest of R resampled shares
    # with (1 + j)/(R + 1) < level, each a one-sided α/m quantile
    rng = np.random.default_rng(2)
    cluster = np.repeat(np.arange(30), 5)
    told_apart = (rng.uniform(size=150) < 0.4).astype(np.float64)
    rounds = 20_000
    (drawn,) = _draws(told_apart[:, None], cluster, rounds=rounds, symmetric=True)
    (rule,) = row_rules([drawn.p_value()], 0.05, "none")
    deepest = int(np.ceil(0.05 * (rounds + 1))) - 2
    low, high = drawn.interval(rule)
    assert (low, high) == (drawn.lowest[deepest], drawn.highest[deepest])
    assert drawn.coverage(rule) == pytest.approx(0.9)
