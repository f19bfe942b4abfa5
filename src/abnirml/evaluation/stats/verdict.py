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
only the few extreme scores the loosest rule can reach (about α·R). The two ends are
quantiles at the row's level each: coverage 1 − level for a two-sided row, 1 − 2·level
for a symmetric probe's one-sided row (each end a one-sided bound at the level).

Few queries. A query-resampling test cannot see beyond its k queries: when every query's
effects lean one way, no resample crosses 0 and the bootstrap's p is its floor 2/(R + 1)
whether k is 2 or 200. An exact test over the queries (flipping the sign of each query's
effects, all 2ᵏ ways) can then give no less than 2/2ᵏ, so that is the least p a signed row
gets (:func:`query_floor`): with k queries a row needs its level above 2/2ᵏ, i.e. more
than 1 + log₂(1/level) queries, to be significant (8 at α = 0.01 uncorrected, 17 for one
of 651 Bonferroni tests). Symmetric probes ask whether any pair is told apart, which one
told-apart pair settles: no floor.

A score every sample shares (±1, 0 with all ties) has no spread to resample; its interval
is the exact Clopper–Pearson bound over its k queries at the row's coverage
(:func:`.bootstrap.unanimous_interval`), and its p the test that bound inverts: the sign
test over queries, 2·2⁻ᵏ for ±1 (the floor), 1 for 0, and 0 for a symmetric probe whose
every pair is told apart (a share of 0 is then impossible). A stronger effect never reads
weaker: no interval's lower end lies above that bound for a perfect score (+1 over k
queries, :func:`perfect_bounds`), nor its upper end below the bound for −1 (symmetric:
a share of 0), so a near-perfect row's percentile interval, which cannot see the queries
that were not drawn, is widened to the perfect score's where it would be narrower. Fewer
than two queries: no p, no interval.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from abnirml.evaluation.stats.bootstrap import (
    CHUNK_ELEMENTS,
    cluster_codes,
    one_blas_thread,
    stable_seed,
    unanimous_interval,
    weight_blocks,
)
from abnirml.evaluation.stats.corrections import Correction, RowRule, get_correction

Rounding = Callable[[float], float]


def row_rules(p_values: Sequence[float], alpha: float, correction: str | Correction
              ) -> list[RowRule]:
    """One :class:`RowRule` per test of a table, matching ``corrections.significant``
    (the correction's record says how: :meth:`.corrections.Correction.row_rules`)."""
    return get_correction(correction).row_rules(p_values, alpha)


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

    def resampled_p(self) -> float:
        """The p of the resampled scores alone (no floor)."""
        return self.p_of(self.below if self.symmetric else min(self.below, self.above))

    def p_value(self) -> float:
        if self.unanimous is not None:
            return unanimous_p(self.unanimous, self.clusters, self.symmetric)
        if self.symmetric:
            return self.resampled_p()
        return max(self.resampled_p(), query_floor(self.clusters))

    @property
    def floored(self) -> bool:
        """Whether the p is the least its queries allow rather than the resamples' own."""
        return (not self.symmetric and self.p_value() == query_floor(self.clusters)
                and (self.unanimous is not None
                     or self.resampled_p() < query_floor(self.clusters)))

    def coverage(self, rule: RowRule) -> float:
        """The interval's coverage at ``rule``: each end is a quantile at the row's level,
        one-sided for a symmetric probe."""
        return 1.0 - (2.0 if self.symmetric else 1.0) * rule.level

    def interval(self, rule: RowRule, rounding: Rounding = float) -> tuple[float, float]:
        """The score interval whose excluding 0 is ``rule.passes(p)`` (module docstring);
        ``rounding`` is applied to p exactly as the record stores it."""
        if self.unanimous is not None:
            return unanimous_interval(self.unanimous, self.clusters, self.coverage(rule),
                                      self.symmetric)
        resampled = self._resampled_interval(rule, rounding)
        top, bottom = perfect_bounds(self.clusters, self.coverage(rule), self.symmetric)
        low, high = min(resampled[0], top), max(resampled[1], bottom)
        if not rule.passes(rounding(self.p_value())):
            return min(low, 0.0), max(high, 0.0)
        if low <= 0.0 <= high:      # the perfect score's bound rounded onto 0: keep the side
            tiny = float(np.nextafter(0.0, 1.0))
            return (tiny, high) if resampled[0] > 0 else (low, -tiny)
        return low, high

    def _resampled_interval(self, rule: RowRule, rounding: Rounding) -> tuple[float, float]:
        """The percentile interval of the resampled scores at the row's level."""
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


def query_floor(clusters: int, one_sided: bool = False) -> float:
    """The least p-value an exact test over ``clusters`` queries can give, 2/2ᵏ (one-sided
    1/2ᵏ): flipping the sign of each query's effects, only the observed signs and their
    mirror image reach the observed score when every query leans one way."""
    return min(1.0, (1.0 if one_sided else 2.0) * 0.5 ** clusters)


def perfect_bounds(clusters: int, coverage: float, symmetric: bool) -> tuple[float, float]:
    """The lower end of the interval of a perfect score over ``clusters`` queries (+1, or a
    symmetric probe's share of 1) and the upper end of the opposite one (−1, or a share of
    0), at ``coverage``: no interval claims more than these."""
    top = unanimous_interval(1.0, clusters, coverage, symmetric)[0]
    bottom = unanimous_interval(0.0 if symmetric else -1.0, clusters, coverage, symmetric)[1]
    return top, bottom


def unanimous_p(effect: float, clusters: int, symmetric: bool) -> float:
    """The p-value the Clopper–Pearson interval of a shared effect inverts (module
    docstring): the sign test over ``clusters`` queries."""
    if effect == 0:
        return 1.0
    if symmetric:
        return 0.0
    return query_floor(clusters)


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
                alpha: float, correction: str | Correction = "none", progress: bool = False
                ) -> list[list[ScoreDraws] | None]:
    """:class:`ScoreDraws` of every column of every item (None: fewer than two queries).

    A table's resampled queries are one multinomial draw per (family, subset, number of
    queries k), seeded from those and ``seed``: any R × k matrix of draws is a bootstrap of
    any k queries, so the items of one table that have k queries share it, every column is
    one matrix product with it, and a table of hundreds of probes draws its R resamples
    once instead of once per probe. Blocks of rows keep memory bounded, and each column
    keeps only the extreme scores its loosest possible rule can reach (Bonferroni: α/m
    over the table's m tested columns; the step-wise corrections: α). ``progress``: a
    bar counting the resamples drawn, over every table.
    """
    from abnirml.evaluation.execution.scoring import progress_bar

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
    bar = progress_bar(sum(rounds[family] for family, _, _ in groups), "statistics",
                       progress, unit="resample")
    record = get_correction(correction)
    with bar, one_blas_thread():
        for (family, subset, k), members in groups.items():
            _draw_group(items, members, family, subset, k, rounds[family],
                        record.loosest_level(alpha, tested[family]),
                        seed, out, bar.update)
    return out


def _draw_group(items: Sequence[DrawItem], members: Sequence[tuple[int, np.ndarray]],
                family: str, subset: str, k: int, rounds: int, level: float, seed: int,
                out: list[list[ScoreDraws] | None], advance: Callable[[int], object]
                ) -> None:
    """The :class:`ScoreDraws` of the items of one table that have ``k`` queries."""
    values = [np.asarray(items[i].statistics, dtype=np.float64).reshape(
        codes.shape[0], -1) for i, codes in members]
    sums = np.concatenate([np.stack([np.bincount(codes, weights=v[:, j], minlength=k)
                                     for j in range(v.shape[1])], axis=1)
                           for (_, codes), v in zip(members, values, strict=True)], axis=1)
    counts = np.stack([np.bincount(codes, minlength=k).astype(np.float64)
                       for _, codes in members], axis=1)
    owner = np.concatenate([np.full(v.shape[1], m) for m, v in enumerate(values)])
    drawn = _draw_columns(sums, counts, owner, rounds, k, level,
                          np.random.default_rng(stable_seed(seed, "clustered", family,
                                                            subset, k)), advance)
    start = 0
    for (i, _), v in zip(members, values, strict=True):
        below, above, lowest, highest = (part[..., start:start + v.shape[1]]
                                         for part in drawn)
        start += v.shape[1]
        out[i] = [ScoreDraws(rounds, int(below[j]), int(above[j]),
                             lowest[:, j].copy(), highest[:, j].copy(),
                             items[i].symmetric, k, _shared(v[:, j]))
                  for j in range(v.shape[1])]


def _shared(column: np.ndarray) -> float | None:
    return float(column[0]) if column.min() == column.max() else None


def _draw_columns(sums: np.ndarray, counts: np.ndarray, owner: np.ndarray, rounds: int,
                  k: int, level: float, rng: np.random.Generator,
                  advance: Callable[[int], object] | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per column of ``sums`` (k × columns; ``owner`` names its column of ``counts``): the
    resampled pooled means ≤ 0 and ≥ 0, and the most extreme ones a rule at ``level`` (or
    stricter) can reach (``lowest`` ascending, ``highest`` descending; rows = kept).

    Only columns whose resampled means can differ are resampled, each once:

    * a column whose every query has the same mean (all its effects equal, or each query's
      effects summing to the same share of its samples) has that mean in every resample;
    * columns with the same sums over the same queries (two rankers that agree on every
      sample, or both all ties) have the same resampled means.

    Effects are integers, so every sum of a resample is an exact integer in float64 and
    each resampled mean is the correctly rounded ratio of two exact integers: the counts
    and the kept scores are the same bits however the columns are grouped. ``advance`` is
    told the resamples drawn, block by block (a progress bar).
    """
    columns = sums.shape[1]
    keep = tail_size(rounds, level, True)      # enough for one- and two-sided rows alike
    below = np.zeros(columns, dtype=np.int64)
    above = np.zeros(columns, dtype=np.int64)
    low = np.empty((columns, keep))
    high = np.empty((columns, keep))
    own = counts[:, owner]                     # k × columns: each column's query sizes
    constant = _constant_columns(sums, own)
    if constant.any():
        value = sums[0, constant] / own[0, constant]
        below[constant] = np.where(value <= 0, rounds, 0)
        above[constant] = np.where(value >= 0, rounds, 0)
        low[constant] = value[:, None]
        high[constant] = value[:, None]
    varying = np.flatnonzero(~constant)
    if varying.size:
        _, first, copies = np.unique(np.concatenate([sums[:, varying], own[:, varying]]).T,
                                     axis=0, return_index=True, return_inverse=True)
        distinct = varying[first]
        drawn = _draw_distinct(sums[:, distinct], counts, owner[distinct], rounds, k, keep,
                               rng, advance)
        for target, part in zip((below, above, low, high), drawn, strict=True):
            target[varying] = part[copies.reshape(-1)]
    elif advance is not None:
        advance(rounds)
    return below, above, np.sort(low, axis=1).T, -np.sort(-high, axis=1).T


def _constant_columns(sums: np.ndarray, own: np.ndarray) -> np.ndarray:
    """Columns whose queries all have the same mean, sums[q] / own[q] (k × columns each),
    told by exact integer cross-products: only when the sums are integers (effects), whose
    resampled means are then that ratio exactly (other values: none is treated as
    constant)."""
    bound = float(np.abs(sums).max(initial=0.0)) * float(own.max(initial=0.0))
    if bound >= 2.0 ** 52 or not np.array_equal(sums, np.round(sums)):
        return np.zeros(sums.shape[1], dtype=bool)
    constant: np.ndarray = np.all(sums * own[:1] == own * sums[:1], axis=0)
    return constant


BLOCK_ROWS = 1 << 14
"""At most this many resamples per block: the block's draws and counts then stay in the
processor's cache (larger blocks cost half as much again per drawn query)."""

SINGLE_EXACT = 2.0 ** 24
"""Integers below this are exact in float32, and so is every sum of them that stays below."""


def _draw_distinct(sums: np.ndarray, counts: np.ndarray, owner: np.ndarray, rounds: int,
                   k: int, keep: int, rng: np.random.Generator,
                   advance: Callable[[int], object] | None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The resampling of :func:`_draw_columns` for the columns that need it.

    Per block of resamples two matrix products give every column's resampled sums and
    the sizes of the queries drawn (once per distinct set of query sizes); their ratio
    (``rough``) and its least and largest value per column decide what else the block
    needs. When no sum can reach 2²⁴ (effects of queries of up to a million samples) the
    products are taken in float32,
    where those integers are exact, at half the memory traffic; a mean itself is always
    the float64 ratio of the two integers. The sign of a mean is its sum's (sizes are
    positive): a column whose block lies on one side of 0 is counted whole, and only the
    columns whose block reaches 0 from both sides are counted resample by resample;
    ``low``/``high`` keep each column's ``keep`` extreme means (:class:`_Tails`).
    """
    columns = sums.shape[1]
    sizes, slot = np.unique(counts[:, owner], axis=1, return_inverse=True)
    slot = slot.reshape(-1)
    largest = k * float(sizes.max(initial=1.0))
    reach = max(k * float(np.abs(sums).max(initial=0.0)), largest)
    single = reach < SINGLE_EXACT and np.array_equal(sums, np.round(sums))
    dtype = np.float32 if single else np.float64
    sums_t, sizes_t = sums.T.astype(dtype), sizes.T.astype(dtype)
    ordered = not single or _rounding_keeps_order(sums, counts[:, owner], largest)
    below = np.zeros(columns, dtype=np.int64)
    above = np.zeros(columns, dtype=np.int64)
    low = _Tails(columns, keep, False, ordered)
    high = _Tails(columns, keep, True, ordered)
    rows = max(1, min(CHUNK_ELEMENTS // (k + 4 * columns), BLOCK_ROWS))
    for block in weight_blocks(k, rounds, rng, rows, dtype):
        # columns × resamples: each column's resamples contiguous, for the reductions
        total = sums_t @ block.T
        size = (sizes_t @ block.T)[slot]        # per set of sizes, then one row per column
        rough = total / size                    # float32: within rounding of the means
        least, most = rough.min(axis=1), rough.max(axis=1)
        _count_signs(total, least, most, below, above)
        low.add(total, size, rough, least)
        high.add(total, size, rough, most)
        if advance is not None:
            advance(block.shape[0])
    return below, above, low.kept, high.kept


def _rounding_keeps_order(sums: np.ndarray, sizes: np.ndarray, largest: float) -> bool:
    """Whether float32 ratios order the resampled means exactly as float64 ones do, ties
    included. Two different means of resamples no larger than ``largest`` samples differ
    by at least 1/largest²; when that is more than float32's spacing at the largest |mean|
    possible (a query's own mean), rounding to float32 cannot merge or swap them."""
    widest = float(np.max(np.abs(sums) / sizes, initial=0.0))
    spacing = float(np.spacing(np.nextafter(np.float32(widest), np.float32(np.inf))))
    return spacing * largest * largest < 1.0


def _count_signs(total: np.ndarray, least: np.ndarray, most: np.ndarray,
                 below: np.ndarray, above: np.ndarray) -> None:
    """Add each column's sums ≤ 0 to ``below`` and ≥ 0 to ``above`` (columns × resamples;
    ``least``/``most``: each column's extreme means, whose signs are their sums'). A
    column on one side of 0 (or all 0) counts whole; the others resample by resample,
    the comparisons summed as bytes (a block has at most 2³¹ rows)."""
    rows = total.shape[1]
    positive, negative = least > 0, most < 0
    zero = (least == 0) & (most == 0)
    above += np.where(positive | zero, rows, 0)
    below += np.where(negative | zero, rows, 0)
    mixed = np.flatnonzero(~(positive | negative | zero))
    if mixed.size:
        part = total[mixed]
        for side, counted in ((part <= 0, below), (part >= 0, above)):
            counted[mixed] += np.add.reduce(side.view(np.uint8), axis=1, dtype=np.int32)


class _Tails:
    """The ``keep`` smallest (``largest``: largest) resampled means of each column.

    A resampled mean is the float64 ratio of two exact integers (its sum and its size).
    Once a column holds ``keep`` means only a mean beyond its least extreme kept one can
    enter; late in a long draw few do. A block is screened with ``rough``, the same
    ratios in the products' precision, and each column's extreme rough value: only the
    columns that reach the bound are looked at, and only their resamples that reach it
    get their float64 mean computed and compared. When rough values order the means
    exactly (``ordered``) a mean equal to the bound — frequent, means being ratios of
    small integers — is screened out with the rough value of the bound itself; otherwise
    the bound is rounded outwards (rounding is monotone, so no mean beyond it is missed)
    and ties are settled in float64.
    """

    def __init__(self, columns: int, keep: int, largest: bool, ordered: bool) -> None:
        self.keep = keep
        self.largest = largest
        self.ordered = ordered
        self.kept = np.empty((columns, 0))
        self.rough: np.ndarray | None = None   # the kept means' rough values, as computed

    def add(self, total: np.ndarray, size: np.ndarray, rough: np.ndarray,
            extreme: np.ndarray) -> None:
        """Merge one block (columns × resamples) of sums, sizes, their rough ratios and
        each column's most extreme rough ratio on this side."""
        keep, largest = self.keep, self.largest
        if self.kept.shape[1] < keep:
            means = np.concatenate([self.kept, np.divide(total, size, dtype=np.float64)],
                                   axis=1)
            roughs = np.concatenate([np.empty((rough.shape[0], 0), rough.dtype)
                                     if self.rough is None else self.rough, rough], axis=1)
            if means.shape[1] > keep:
                chosen = (np.argpartition(means, means.shape[1] - keep, axis=1)[:, -keep:]
                          if largest else np.argpartition(means, keep - 1, axis=1)[:, :keep])
                means = np.take_along_axis(means, chosen, axis=1)
                roughs = np.take_along_axis(roughs, chosen, axis=1)
            self.kept, self.rough = means, roughs
            return
        assert self.rough is not None
        bound = self.kept.min(axis=1) if largest else self.kept.max(axis=1)
        if self.ordered:
            threshold = self.rough.min(axis=1) if largest else self.rough.max(axis=1)
            reach = extreme > threshold if largest else extreme < threshold
        else:
            threshold = _outward(bound, rough.dtype, largest)
            reach = extreme >= threshold if largest else extreme <= threshold
        columns = np.flatnonzero(reach)
        if columns.size == 0:
            return
        part = rough[columns]
        limit = threshold[columns, None]
        if self.ordered:
            near = np.flatnonzero(part > limit if largest else part < limit)
        else:
            near = np.flatnonzero(part >= limit if largest else part <= limit)
        slot, row = np.divmod(near, part.shape[1])
        column = columns[slot]
        means = np.divide(total[column, row], size[column, row], dtype=np.float64)
        beyond = means > bound[column] if largest else means < bound[column]
        if beyond.any():
            self._merge(column[beyond], means[beyond], part.ravel()[near][beyond])

    def _merge(self, column: np.ndarray, means: np.ndarray, rough: np.ndarray) -> None:
        """Insert new ``means`` (with their ``rough`` values) of ``column`` into the kept."""
        assert self.rough is not None
        keep = self.keep
        columns = np.unique(column)
        slot = np.searchsorted(columns, column)
        owner = np.concatenate([np.repeat(np.arange(columns.size), keep), slot])
        found = np.concatenate([self.kept[columns].ravel(), means])
        found_rough = np.concatenate([self.rough[columns].ravel(), rough])
        order = np.lexsort((-found if self.largest else found, owner))
        starts = np.searchsorted(owner[order], np.arange(columns.size))
        take = order[(starts[:, None] + np.arange(keep)).ravel()]
        self.kept[columns] = found[take].reshape(columns.size, keep)
        self.rough[columns] = found_rough[take].reshape(columns.size, keep)


def _outward(bound: np.ndarray, dtype: np.dtype, largest: bool) -> np.ndarray:
    """``bound`` in ``dtype``, rounded away from the kept values (down for the largest)."""
    rounded = bound.astype(dtype)
    if rounded.dtype == bound.dtype:
        return rounded
    towards = -np.inf if largest else np.inf
    short = rounded > bound if largest else rounded < bound
    return np.where(short, np.nextafter(rounded, np.asarray(towards, dtype=dtype)), rounded)


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
