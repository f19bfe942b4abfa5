"""Query-clustered bootstrap confidence intervals for probe scores and mean differences.

Samples of one query are not independent: one passage can sit in hundreds of
measure-and-match pairs, so a per-sample interval would be far too narrow. The unit that
was sampled is the query, so the bootstrap resamples *queries* (with replacement) and keeps
all samples of each drawn query together; the statistic of a resample is the ratio of the
summed values to the summed sample counts of the drawn queries (the pooled mean, exactly
the probe score's definition). The interval is the percentile interval of the resampled
statistics.

Everything is vectorised: each query's sum and count are computed once (``np.bincount``),
and every resample is one row of a (resamples × queries) multiplicity matrix (drawn
indices counted with one ``bincount``), so a probe costs one matrix product however many
samples it has. The matrix is drawn in row blocks of at most :data:`CHUNK_ELEMENTS` cells
(the same random stream as one draw), so memory stays bounded for any number of queries;
counts above :data:`MAX_RESAMPLES` are refused.

Two cases where resampling cannot show any uncertainty get no percentile interval.
With fewer than two queries every resample draws the same query, so the interval would be
a single point: it is left undefined (None). When every sample has the same effect (a score
of exactly +1, −1, or 0 with all ties), every resample has that score too and the
percentile interval is a point, which would claim certainty from as few as two samples;
:func:`unanimous_interval` gives the exact Clopper–Pearson bound instead, with the number
of queries as the number of trials (each query is one independent draw).

The generator is seeded from the run's seed, the probe and the subset (never the ranker),
so every ranker of one probe sees the *same* resampled queries — their intervals are
paired — and the result does not depend on the order records are built in.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator

import numpy as np

DEFAULT_RESAMPLES = 1000
DEFAULT_LEVEL = 0.95
CHUNK_ELEMENTS = 1 << 22
"""Cells of one block of the multiplicity matrix (32 MiB of float64)."""
MAX_RESAMPLES = 2_000_000
"""The most resamples (and permutation rounds) a run accepts: the intervals keep one
statistic per resample, and beyond this the p-value floor is far below any α in use."""


def stable_seed(*parts: object) -> list[int]:
    """A seed sequence for ``np.random.default_rng`` from any values, stable across runs."""
    digest = hashlib.blake2b("\x00".join(map(str, parts)).encode(), digest_size=16).digest()
    return [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4)]


def cluster_codes(cluster: np.ndarray | None, n: int) -> tuple[np.ndarray, int]:
    """Map arbitrary cluster labels to 0…k−1; without labels every sample is its own cluster."""
    if cluster is None:
        return np.arange(n, dtype=np.int64), n
    cluster = np.asarray(cluster)
    if cluster.dtype.kind in "iu" and cluster.size and cluster.min() >= 0 \
            and cluster.max() < 4 * cluster.size + 1024:
        # codes already (a subset's queries): renumber the present ones in order, as
        # np.unique would, without sorting
        present = np.bincount(cluster) > 0
        number = np.cumsum(present) - 1
        return number[cluster].astype(np.int64), int(number[-1]) + 1
    labels, codes = np.unique(cluster, return_inverse=True)
    return codes.reshape(-1).astype(np.int64), int(labels.shape[0])


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """Matrix products on the calling thread only, for the resampling loops.

    Their products are thin (resamples × queries by queries × columns, a few queries
    deep) and come one block at a time: the BLAS library's worker threads would spend more
    CPU time waking and waiting than they save, several times the single-threaded cost
    on a busy machine. Restored on exit; a no-op where ``threadpoolctl`` is missing.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:                             # pragma: no cover - a core dependency
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def resample_weights(k: int, resamples: int, rng: np.random.Generator,
                     dtype: type = np.float64) -> np.ndarray:
    """(resamples × k) multiplicities: row r says how often each cluster is drawn in resample r.

    Each row counts ``k`` cluster indices drawn uniformly with replacement (a
    multinomial(k, 1/k) row). Drawing the indices and counting them with one ``bincount``
    over row-offset codes (``np.add.at`` where it is fast) is ~10× faster than
    ``rng.multinomial`` for these sizes. The counts are small integers, exact in any float
    ``dtype``.
    """
    drawn = rng.integers(0, k, size=(resamples, k))
    drawn += np.arange(0, resamples * k, k, dtype=drawn.dtype)[:, None]
    if _FAST_ADD_AT:
        counts: np.ndarray = np.zeros(resamples * k, dtype=dtype)
        np.add.at(counts, drawn.ravel(), counts.dtype.type(1))
        return counts.reshape(resamples, k)
    return np.bincount(drawn.ravel(), minlength=resamples * k).reshape(
        resamples, k).astype(dtype)


_FAST_ADD_AT = int(np.__version__.split(".")[0]) >= 2
"""``np.add.at`` into the float array directly is faster than ``bincount`` and a cast
from numpy 2 on; before, it was an order of magnitude slower."""


def weight_blocks(k: int, resamples: int, rng: np.random.Generator,
                  rows: int | None = None, dtype: type = np.float64) -> Iterator[np.ndarray]:
    """:func:`resample_weights` in row blocks of at most :data:`CHUNK_ELEMENTS` cells (or
    ``rows`` rows); the rows are exactly those of one (resamples × k) draw from ``rng``
    (the generator's stream does not depend on how the draw is split)."""
    rows = max(1, CHUNK_ELEMENTS // max(k, 1)) if rows is None else max(1, rows)
    for start in range(0, resamples, rows):
        yield resample_weights(k, min(rows, resamples - start), rng, dtype)


def clustered_means(values: np.ndarray, codes: np.ndarray, k: int,
                    weights: np.ndarray) -> np.ndarray:
    """Pooled mean of ``values`` in each resample (rows of ``weights``); 2-D values → columns.

    A resample that drew only empty clusters cannot happen (every cluster has ≥ 1 sample).
    """
    values = np.asarray(values, dtype=np.float64)
    counts = np.bincount(codes, minlength=k).astype(np.float64)
    drawn = weights @ counts
    if values.ndim == 1:
        sums = np.bincount(codes, weights=values, minlength=k)
        return (weights @ sums) / drawn
    sums = np.stack([np.bincount(codes, weights=values[:, j], minlength=k)
                     for j in range(values.shape[1])], axis=1)
    return (weights @ sums) / drawn[:, None]


def percentile_interval(statistics: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The equal-tailed percentile interval of bootstrap statistics (along axis 0).

    The values of ``np.quantile(statistics, [tail, 1 − tail], axis=0)`` (its default,
    linear method: Hyndman and Fan's 7th), computed with one partition and numpy's own
    interpolation formula, without the general function's per-call work — a run asks
    for thousands of these.
    """
    tail = (1.0 - level) / 2.0
    count = statistics.shape[0]
    virtual = (count - 1) * np.array([tail, 1.0 - tail])
    previous = np.floor(virtual)
    following = previous + 1
    last = virtual >= count - 1
    previous[last] = following[last] = -1
    below, above = previous.astype(np.intp), following.astype(np.intp)
    ordered = np.partition(statistics, np.unique(np.concatenate(
        ([0, count - 1], np.where(below < 0, count - 1, below),
         np.where(above < 0, count - 1, above)))), axis=0)
    start, end = ordered[below], ordered[above]
    share = (virtual - previous).reshape((2,) + (1,) * (statistics.ndim - 1))
    step = end - start
    value = start + step * share
    np.subtract(end, step * (1 - share), out=value, where=share >= 0.5)
    return value[0], value[1]


def clustered_ci(values: np.ndarray, cluster: np.ndarray | None, resamples: int,
                 level: float, seed: int, key: tuple[object, ...] = ()
                 ) -> tuple[np.ndarray, np.ndarray] | None:
    """Interval(s) of the pooled mean of ``values`` (1-D, or 2-D with one statistic per column).

    ``key`` (probe, subset, …) seeds the generator together with ``seed``. None when
    intervals are off (``resamples`` = 0), or there are fewer than two queries (clusters).
    """
    n = int(np.asarray(values).shape[0])
    if resamples <= 0 or n == 0:
        return None
    codes, k = cluster_codes(cluster, n)
    if k < 2:
        return None
    if resamples * k <= CHUNK_ELEMENTS:
        weights = seeded_weights(k, resamples, seed, tuple(map(str, key)))
        return percentile_interval(clustered_means(values, codes, k, weights), level)
    rng = np.random.default_rng(stable_seed(seed, *map(str, key)))
    means = np.concatenate([clustered_means(values, codes, k, block)
                            for block in weight_blocks(k, resamples, rng)])
    return percentile_interval(means, level)


def seeded_weights(k: int, resamples: int, seed: int, key: tuple[str, ...]) -> np.ndarray:
    """The multiplicity matrix of one (seed, key): every ranker of a probe and subset asks
    for the same one, and ``compare`` asks again for each pair of rankers, so it is drawn
    once (read-only; callers never modify it) and kept in :data:`_WEIGHTS`."""
    found = _WEIGHTS.get((k, resamples, seed, key))
    if found is None:
        found = resample_weights(k, resamples, np.random.default_rng(stable_seed(seed, *key)))
        found.flags.writeable = False
        _WEIGHTS.put((k, resamples, seed, key), found)
    return found


class _ByteBoundedCache:
    """A least-recently-used map of arrays holding at most ``limit`` bytes in all: enough
    for every probe × subset of a run (a thousand resamples of a few dozen queries is a few
    hundred KiB), never more memory than that however many there are."""

    def __init__(self, limit: int) -> None:
        from collections import OrderedDict

        self.limit = limit
        self.held = 0
        self.entries: OrderedDict[object, np.ndarray] = OrderedDict()

    def get(self, key: object) -> np.ndarray | None:
        found = self.entries.get(key)
        if found is not None:
            self.entries.move_to_end(key)
        return found

    def put(self, key: object, value: np.ndarray) -> None:
        if value.nbytes > self.limit:
            return
        self.entries[key] = value
        self.held += value.nbytes
        while self.held > self.limit:
            _, dropped = self.entries.popitem(last=False)
            self.held -= dropped.nbytes


_WEIGHTS = _ByteBoundedCache(64 << 20)


def unanimous_interval(effect: float, clusters: int, level: float, symmetric: bool
                       ) -> tuple[float, float]:
    """Interval of a probe score when all samples of ``clusters`` queries have one ``effect``.

    Effects lie in [−1, 1] ([0, 1] for symmetric probes): +1 → [2L − 1, 1], −1 →
    [−1, 1 − 2L], 0 (all ties) → [−(1 − L), 1 − L]; symmetric 1 → [L, 1], 0 → [0, 1 − L]
    (:func:`unanimous_range`).
    """
    return unanimous_range(effect, clusters, level, 0.0 if symmetric else -1.0, 1.0)


def unanimous_range(value: float, clusters: int, level: float, lowest: float,
                    highest: float) -> tuple[float, float]:
    """Interval of a mean of values bounded by [``lowest``, ``highest``] when every sample
    of ``clusters`` queries has the same ``value``.

    Clopper–Pearson: after k successes in k trials the two-sided ``level`` interval of the
    success rate is [(α/2)^(1/k), 1], α = 1 − level. Here a success is a query whose samples
    all have ``value``; at least a share L of the population does, and in the worst case the
    rest sits at one bound: [L·value + (1 − L)·lowest, L·value + (1 − L)·highest].
    """
    share = ((1.0 - level) / 2.0) ** (1.0 / clusters)
    return (share * value + (1.0 - share) * lowest, share * value + (1.0 - share) * highest)
