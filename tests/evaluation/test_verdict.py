"""One verdict per row: the clustered test and the score interval printed beside it agree."""

from __future__ import annotations

import math

import numpy as np
import pytest

from abnirml.evaluation.stats.bootstrap import clustered_means, resample_weights, stable_seed
from abnirml.evaluation.stats.corrections import correction_names, significant
from abnirml.evaluation.stats.verdict import DrawItem, row_rules, table_draws, unanimous_p

ALPHA = 0.01


def score_draws(effects, cluster, rounds, seed, key, alpha, symmetric):
    """The draws of one item (a probe × subset with one column per ranker)."""
    (found,) = table_draws([DrawItem("f", "/".join(map(str, key)), effects, cluster,
                                     symmetric)], {"f": rounds}, seed, alpha)
    return found


def _p_values(rng: np.random.Generator, m: int) -> list[float]:
    """Small and large p-values with ties, as a table of m tests has them."""
    p = np.concatenate([rng.uniform(0, 1e-5, m // 4), rng.uniform(0, 0.003, m // 4),
                        rng.uniform(0, 1, m - 2 * (m // 4))])
    p[m // 8: m // 4] = p[m // 8]                          # a run of equal p-values
    return rng.permutation(p).tolist()


@pytest.mark.parametrize("correction", correction_names())
def test_each_row_rule_is_the_corrections_verdict(correction):
    rng = np.random.default_rng(1)
    for m in (1, 2, 7, 40, 279):
        p = _p_values(rng, m)
        flags = significant(p, ALPHA, correction)
        rules = row_rules(p, ALPHA, correction)
        assert [rule.passes(x) for rule, x in zip(rules, p, strict=True)] == flags
        assert any(flags) or m < 40


def test_row_levels_have_known_values():
    # Bonferroni over 4 tests: every row at α/4; Holm: α/4, α/3 for the first two, the rest
    # at the level of the first row Holm keeps; BH with two rejections: 2α/4, the rest 3α/4
    p = [0.001, 0.002, 0.2, 0.5]
    assert [r.level for r in row_rules(p, 0.01, "bonferroni")] == [0.0025] * 4
    assert [r.level for r in row_rules(p, 0.01, "holm")] == pytest.approx(
        [0.01 / 4, 0.01 / 3, 0.01 / 2, 0.01 / 2])
    assert [r.level for r in row_rules(p, 0.01, "bh")] == pytest.approx(
        [0.005, 0.005, 0.0075, 0.0075])
    assert [r.level for r in row_rules(p, 0.01, "none")] == [0.01] * 4


def _table(rng: np.random.Generator, rows: int, symmetric: bool):
    """Effects of ``rows`` rankers over 12 queries (3–8 samples each), some shifted."""
    sizes = rng.integers(3, 9, size=12)
    cluster = np.repeat(np.arange(12), sizes)
    shift = rng.uniform(-0.9, 0.9, size=rows) * rng.integers(0, 2, size=rows)
    if symmetric:
        effects = (rng.uniform(size=(cluster.shape[0], rows)) < np.abs(shift) / 3)
    else:
        noise = rng.uniform(-1, 1, size=(cluster.shape[0], rows)) + shift
        effects = np.sign(np.round(noise, 1))
    return effects.astype(np.float64), cluster


@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize("correction", correction_names())
def test_the_interval_excludes_zero_exactly_when_the_row_is_significant(correction,
                                                                       symmetric):
    rng = np.random.default_rng(7)
    seen = set()
    for table in range(4):
        effects, cluster = _table(rng, 10, symmetric)      # 10 rows: 20,000 rounds reject
        draws = score_draws(effects, cluster, 20_000, 0, ("t", table), ALPHA, symmetric)
        p = [d.p_value() for d in draws]
        flags = significant(p, ALPHA, correction)
        for drawn, rule, flag in zip(draws, row_rules(p, ALPHA, correction), flags,
                                     strict=True):
            low, high = drawn.interval(rule)
            assert (not low <= 0.0 <= high) == flag
            seen.add(flag)
    assert seen == {True, False}


def test_p_counts_the_resampled_scores_of_the_tables_draw():
    """p and the ends of the interval, recounted from the table's one multinomial draw of
    (seed, family, subset, number of queries)."""
    effects = np.array([1, 1, 0, 1, -1, 1, 1, 0, 1, 1, -1, 1, 0, 1], dtype=np.float64)
    cluster = np.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6])
    rounds = 4000
    (drawn,) = score_draws(effects[:, None], cluster, rounds, 3, ("all",), 0.05, False)
    weights = resample_weights(7, rounds, np.random.default_rng(
        stable_seed(3, "clustered", "f", "all", 7)))
    means = clustered_means(effects, cluster, 7, weights)
    below, above = int((means <= 0).sum()), int((means >= 0).sum())
    assert (drawn.below, drawn.above) == (below, above)
    assert drawn.resampled_p() == min(1.0, 2 * (1 + min(below, above)) / (rounds + 1))
    # every one of the 7 queries leans +: no p below the exact sign-flip test's 2/2⁷
    assert drawn.p_value() == max(drawn.resampled_p(), 2 / 2 ** 7) == 2 / 2 ** 7
    (rule,) = row_rules([drawn.p_value()], 0.05, "none")
    deepest = math.ceil(0.05 * (rounds + 1) / 2) - 2     # largest count with 2(1+j)/(R+1) < α
    ordered = np.sort(means)
    # the lower end no higher than a perfect score's over 7 queries: 2·0.025^(1/7) − 1
    perfect = 2 * 0.025 ** (1 / 7) - 1
    assert ordered[deepest] > perfect > 0
    assert drawn.interval(rule) == pytest.approx((perfect, ordered[rounds - 1 - deepest]),
                                                 abs=1e-15)


@pytest.mark.parametrize(("queries", "significant_at_5"), [(5, False), (6, True)])
def test_a_shared_effect_is_the_sign_test_over_queries_and_its_clopper_pearson_bound(
        queries, significant_at_5):
    effects = np.ones(2 * queries)
    cluster = np.repeat(np.arange(queries), 2)
    (drawn,) = score_draws(effects[:, None], cluster, 1000, 0, ("k",), 0.05, False)
    assert drawn.p_value() == 2 * 0.5 ** queries              # 0.0625, then 0.03125
    (rule,) = row_rules([drawn.p_value()], 0.05, "none")
    low, high = drawn.interval(rule)
    assert low == pytest.approx(2 * 0.025 ** (1 / queries) - 1) and high == 1.0
    assert (low > 0) == significant_at_5                      # −0.044, then +0.081
    assert unanimous_p(0.0, 9, False) == 1.0 and unanimous_p(1.0, 9, True) == 0.0


def test_one_query_has_no_draws():
    assert score_draws(np.ones((4, 2)), np.zeros(4), 1000, 0, ("k",), ALPHA, False) is None


def test_the_draws_show_a_progress_bar_only_when_asked(capsys):
    """The clustered test's resampling (the long part of a cached rerun) counts its
    resamples on a "statistics" bar on stderr; without ``progress`` it prints nothing."""
    effects = np.tile(np.array([1.0, -1.0, 1.0, 0.0]), 5)[:, None]
    cluster = np.repeat(np.arange(5), 4)
    items = [DrawItem("f", "all", effects, cluster, False)]
    table_draws(items, {"f": 3000}, 0, ALPHA, progress=True)
    assert "statistics" in capsys.readouterr().err
    table_draws(items, {"f": 3000}, 0, ALPHA, progress=False)
    assert capsys.readouterr().err == ""
