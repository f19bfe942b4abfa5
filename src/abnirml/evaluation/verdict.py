"""One verdict per row: the clustered test's p-value and the score interval beside it.

A reader who sees a score marked significant beside an interval that contains 0 is given
two answers. The default test (``clustered``) therefore has one: it resamples queries (the
unit that was sampled), the score interval printed beside the row is read off the very same
resampled scores, and it is taken at the level the table's correction tests the row at — so
the row is significant exactly when its printed interval excludes 0.

How the two agree to the last draw. Of R resampled scores, ``below`` are ≤ 0 and ``above``
≥ 0; the two-sided p is 2·(1 + min(below, above))/(R + 1) (one-sided for symmetric probes,
whose score lies in [0, 1]: (1 + below)/(R + 1), "is the share of pairs told apart above
0?"). The correction turns into a rule per row, ``p · scale / divisor < α``
(:func:`row_rules`: Bonferroni m/1, none 1/1, Holm (m − rank)/1 up to the first row it
keeps, Benjamini–Hochberg m/R or m/(R + 1) with R rows rejected). Let j* be the largest
count whose p passes the row's rule; the interval is [the (j*+1)-th smallest, the
(j*+1)-th largest resampled score]. Its lower end is above 0 exactly when at most j*
resampled scores are ≤ 0, i.e. exactly when the p of ``below`` passes — the same integer
comparison, so no float rounding can split them. Nothing is re-drawn: each record keeps
only the few extreme scores the loosest rule can reach (about α·R).

A score every sample shares (±1, 0 with all ties) has no spread to resample; its interval
is the exact Clopper–Pearson bound over its k queries at the row's level
(:func:`.bootstrap.unanimous_interval`), and its p the test that bound inverts: the sign
test over queries, 2·2⁻ᵏ for ±1, 1 for 0, and 0 for a symmetric probe whose every pair is
told apart (a share of 0 is then impossible). Fewer than two queries: no p, no interval.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from abnirml.evaluation.bootstrap import (
    CHUNK_ELEMENTS,
    cluster_codes,
    stable_seed,
    unanimous_interval,
    weight_blocks,
)

Rounding = Callable[[float], float]


@dataclass(frozen=True)
class RowRule:
    """The correction's verdict on one row as a threshold on its own p:
    significant when ``p · scale / divisor < alpha`` (the same float operations the
    correction performs, so the two never disagree)."""

    scale: float
    divisor: float
    alpha: float

    def passes(self, p: float) -> bool:
        return p * self.scale / self.divisor < self.alpha

    @property
    def level(self) -> float:
        """The per-row test level: the interval's coverage is 1 − this."""
        return self.alpha * self.divisor / self.scale


def row_rules(p_values: Sequence[float], alpha: float, correction: str) -> list[RowRule]:
    """One :class:`RowRule` per test of a table, matching ``significance.significant``."""
    from abnirml.evaluation.corrections import significant

    m = len(p_values)
    if correction == "none":
        return [RowRule(1.0, 1.0, alpha)] * m
    if correction == "bonferroni":
        return [RowRule(float(m), 1.0, alpha)] * m
    flags = significant(p_values, alpha, correction)
    order = np.argsort(np.asarray(p_values, dtype=np.float64), kind="stable")
    rules: list[RowRule] = [RowRule(1.0, 1.0, alpha)] * m
    if correction == "holm":
        kept = next((rank for rank, i in enumerate(order) if not flags[i]), m)
        for rank, i in enumerate(order):
            rules[i] = RowRule(float(m - min(rank, kept)), 1.0, alpha)
        return rules
    if correction == "bh":
        rejected = sum(flags)
        for i in range(m):
            rules[i] = RowRule(float(m), float(rejected if flags[i] else rejected + 1), alpha)
        return rules
    raise ValueError(correction)


@dataclass(frozen=True)
class ScoreDraws:
    """What one row's verdict needs of its R resampled scores: how many lie on each side
    of 0 and the few most extreme ones (``lowest`` ascending, ``highest`` descending)."""

    rounds: int
    below: int
    above: int
    lowest: np.ndarray
    highest: np.ndarray
    symmetric: bool
    clusters: int
    #: the effect every sample shares, None when they differ
    unanimous: float | None = None

    def p_of(self, count: int) -> float:
        """The p-value of ``count`` resampled scores on the far side of 0."""
        sides = 1.0 if self.symmetric else 2.0
        return min(1.0, sides * ((1 + count) / (1 + self.rounds)))

    def p_value(self) -> float:
        if self.unanimous is not None:
            return unanimous_p(self.unanimous, self.clusters, self.symmetric)
        return self.p_of(self.below if self.symmetric else min(self.below, self.above))

    def interval(self, rule: RowRule, rounding: Rounding = float) -> tuple[float, float]:
        """The score interval whose excluding 0 is ``rule.passes(p)`` (module docstring);
        ``rounding`` is applied to p exactly as the record stores it."""
        if self.unanimous is not None:
            return unanimous_interval(self.unanimous, self.clusters, 1.0 - rule.level,
                                      self.symmetric)
        reach = min(self.lowest.shape[0], self.rounds) - 1
        deepest = -1                                # the largest passing count, if any
        if rule.passes(rounding(self.p_of(0))):
            low, high = 0, reach
            while low < high:
                mid = (low + high + 1) // 2
                if rule.passes(rounding(self.p_of(mid))):
                    low = mid
                else:
                    high = mid - 1
            deepest = low
            if deepest == reach < self.rounds - 1:
                raise ValueError(f"the row's rule (α = {rule.alpha:g}) reaches past the "
                                 f"{reach + 1} extreme scores kept for a looser α")
        if deepest < 0:
            return (0.0 if self.symmetric else -1.0), 1.0
        return float(self.lowest[deepest]), float(self.highest[deepest])


def unanimous_p(effect: float, clusters: int, symmetric: bool) -> float:
    """The p-value the Clopper–Pearson interval of a shared effect inverts (module
    docstring): the sign test over ``clusters`` queries."""
    if effect == 0:
        return 1.0
    if symmetric:
        return 0.0
    return min(1.0, 2.0 * 0.5 ** clusters)


def tail_size(rounds: int, level: float, symmetric: bool) -> int:
    """Extreme scores a row keeps: enough for a rule p < ``level`` to reach."""
    sides = 1.0 if symmetric else 2.0
    return max(1, min(rounds, math.ceil(level * (1 + rounds) / sides) + 1))


@dataclass(frozen=True)
class DrawItem:
    """One probe × subset of a table: every ranker's per-sample effects (samples ×
    rankers), each sample's query and whether the probe is symmetric."""

    family: str
    subset: str
    statistics: np.ndarray
    cluster: np.ndarray | None
    symmetric: bool


def table_draws(items: Sequence[DrawItem], rounds: Mapping[str, int], seed: int,
                alpha: float, correction: str = "none") -> list[list[ScoreDraws] | None]:
    """:class:`ScoreDraws` of every column of every item (None: fewer than two queries).

    A table's resampled queries are one multinomial draw per (family, subset, number of
    queries k), seeded from those and ``seed``: any R × k matrix of draws is a bootstrap of
    any k queries, so the items of one table that have k queries share it, every column is
    one matrix product with it, and a table of hundreds of probes draws its R resamples
    once instead of once per probe. Blocks of rows keep memory bounded, and each column
    keeps only the extreme scores its loosest possible rule can reach (Bonferroni: α/m
    over the table's m tested columns; the step-wise corrections: α).
    """
    out: list[list[ScoreDraws] | None] = [None] * len(items)
    groups: dict[tuple[str, str, int], list[tuple[int, np.ndarray]]] = {}
    for i, item in enumerate(items):
        n = int(np.asarray(item.statistics).shape[0])
        codes, k = cluster_codes(item.cluster, n)
        if n and k >= 2 and rounds.get(item.family, 0) >= 1:
            groups.setdefault((item.family, item.subset, k), []).append((i, codes))
    tested: dict[str, int] = {}
    for (family, _, _), members in groups.items():
        tested[family] = tested.get(family, 0) + sum(
            int(np.asarray(items[i].statistics).reshape(codes.shape[0], -1).shape[1])
            for i, codes in members)
    for (family, subset, k), members in groups.items():
        level = alpha / tested[family] if correction == "bonferroni" else alpha
        values = [np.asarray(items[i].statistics, dtype=np.float64).reshape(
            codes.shape[0], -1) for i, codes in members]
        sums = np.concatenate([np.stack([np.bincount(codes, weights=v[:, j], minlength=k)
                                         for j in range(v.shape[1])], axis=1)
                               for (_, codes), v in zip(members, values, strict=True)], axis=1)
        counts = np.stack([np.bincount(codes, minlength=k).astype(np.float64)
                           for _, codes in members], axis=1)
        owner = np.concatenate([np.full(v.shape[1], m) for m, v in enumerate(values)])
        drawn = _draw_columns(sums, counts, owner, rounds[family], k, level,
                              np.random.default_rng(stable_seed(seed, "clustered", family,
                                                                subset, k)))
        start = 0
        for (i, _), v in zip(members, values, strict=True):
            below, above, lowest, highest = (part[..., start:start + v.shape[1]]
                                             for part in drawn)
            start += v.shape[1]
            out[i] = [ScoreDraws(rounds[family], int(below[j]), int(above[j]),
                                 lowest[:, j].copy(), highest[:, j].copy(),
                                 items[i].symmetric, k, _shared(v[:, j]))
                      for j in range(v.shape[1])]
    return out


def _shared(column: np.ndarray) -> float | None:
    return float(column[0]) if column.min() == column.max() else None


def _draw_columns(sums: np.ndarray, counts: np.ndarray, owner: np.ndarray, rounds: int,
                  k: int, level: float, rng: np.random.Generator
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per column of ``sums`` (k × columns; ``owner`` names its column of ``counts``): the
    resampled pooled means ≤ 0 and ≥ 0, and the most extreme ones a rule at ``level`` (or
    stricter) can reach (``lowest`` ascending, ``highest`` descending; rows = kept)."""
    columns = sums.shape[1]
    keep = tail_size(rounds, level, True)      # enough for one- and two-sided rows alike
    below = np.zeros(columns, dtype=np.int64)
    above = np.zeros(columns, dtype=np.int64)
    low = np.empty((columns, 0))
    high = np.empty((columns, 0))
    rows = CHUNK_ELEMENTS // (k + 2 * columns + counts.shape[1])
    for block in weight_blocks(k, rounds, rng, rows):
        # columns × resamples, so that each column's resamples are contiguous
        means = (sums.T @ block.T) / (counts.T @ block.T)[owner]
        below += (means <= 0).sum(axis=1)
        above += (means >= 0).sum(axis=1)
        low = _merge_smallest(low, means, keep)
        high = -_merge_smallest(-high, -means, keep)
    return below, above, np.sort(low, axis=1).T, -np.sort(-high, axis=1).T


def _merge_smallest(kept: np.ndarray, values: np.ndarray, keep: int) -> np.ndarray:
    """The ``keep`` smallest of each row of ``kept`` and ``values`` together (in no order).

    Once a row holds ``keep`` values only the new values below its largest kept one can
    enter; late in a long draw those are few, so they are picked out with one comparison
    and merged by one sort instead of partitioning every block whole.
    """
    if kept.shape[1] < keep:
        merged = np.concatenate([kept, values], axis=1)
        if merged.shape[1] <= keep:
            return merged
        return np.partition(merged, keep - 1, axis=1)[:, :keep]
    row, column = np.nonzero(values < kept.max(axis=1)[:, None])
    if row.size == 0:
        return kept
    rows = kept.shape[0]
    owner = np.concatenate([np.repeat(np.arange(rows), keep), row])
    found = np.concatenate([kept.ravel(), values[row, column]])
    order = np.lexsort((found, owner))
    starts = np.searchsorted(owner[order], np.arange(rows))
    return found[order][(starts[:, None] + np.arange(keep)).ravel()].reshape(rows, keep)


def clustered_p(statistic: np.ndarray, cluster: np.ndarray | None, rounds: int,
                rng: np.random.Generator, symmetric: bool) -> float:
    """The clustered test's p-value of one row, drawing its own resamples from ``rng``
    (``compare`` and the generic ``p_value``); NaN with fewer than two queries."""
    values = np.asarray(statistic, dtype=np.float64)
    codes, k = cluster_codes(cluster, values.shape[0])
    if k < 2:
        return math.nan
    rounds = max(rounds, 1)
    sums = np.bincount(codes, weights=values, minlength=k)[:, None]
    counts = np.bincount(codes, minlength=k).astype(np.float64)[:, None]
    below, above, lowest, highest = _draw_columns(sums, counts, np.zeros(1, dtype=np.int64),
                                                  rounds, k, 0.0, rng)
    return ScoreDraws(rounds, int(below[0]), int(above[0]), lowest[:, 0], highest[:, 0],
                      symmetric, k, _shared(values)).p_value()
