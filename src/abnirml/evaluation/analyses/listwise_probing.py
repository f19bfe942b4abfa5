"""Probing listwise rankers directly: a sample's two documents placed inside a ranked list.

A listwise ranker (:mod:`abnirml.rankers.listwise`) returns a permutation of a window of
passages, never a score, and its verdict on two documents can depend on where each sits in
the prompt. Definitions (docs/guide/rankers.md, *Listwise rankers*):

* **Probe lists.** Each sample ⟨q, d1, d2⟩ becomes a list of k = ``list_size`` passages
  (the ranker's ``+list_size``, default 10): d1 and d2 and k − 2 *fillers* drawn from the
  candidates of the sample's query (never a text equal to d1 or d2; topped up from every
  query's candidates when the query has too few), at positions (i, j) drawn uniformly. The
  same list is asked again with d1 and d2 swapped, (j, i). Fillers and positions come from
  a generator seeded by (seed, probe, k): every listwise ranker of a run with the same k
  sees the same lists, and a rerun the same windows.
* **Verdict.** d1 wins an order when the returned permutation puts it above d2. The
  preference is p = (wins of d1 over the two orders) / 2 ∈ {0, ½, 1}; a sample with p = ½
  followed the position in both orders — a tie, and a *position-following* verdict
  counted in ``position_bias``. The engine then applies its statistics to the scores
  (p, ½) as it does for pairwise rankers: effect +1 when p > ½ + δ, and so on.
* **δ.** Verdicts are discrete, so δ = 0 unless given (``--delta``); run.json names the
  source ``listwise``.
* **Query-side probes** (qvp: d1 is the document under the varied query, d2 the same
  document under the original). One list holds the document at position i, ranked once
  under each query, and again at position j: each position votes +1 when the document
  ranks higher under the variation, −1 when lower; p = ½ + (votes) / 4. Both queries see
  the same list at the same place, so no position bias is defined for these probes.
* **Sliding windows.** A list longer than the ranker's ``window_size`` is ranked by one
  back-to-front sliding-window pass (:func:`~abnirml.rankers.listwise.sliding_window_order`),
  as RankGPT re-ranks candidates; samples whose two positions share no window of that pass
  form the ``window-straddle`` subset, the others ``window-inside``.
* **Effectiveness**: the candidates re-ranked by one sliding-window pass over the whole
  candidate list; run scores are the number of candidates minus the rank.

**Cache.** Each distinct window (query and every passage, in order) is asked once per
ranker: its permutation is stored in the ordinary score cache, keyed by (ranker
fingerprint, query, hash of the whole ordered window and a part number). Each row's value
packs the output ranks of consecutive passages as an integer below 2⁵³ (exact in a
float): a window of up to 13 passages is one row, RankGPT's 20 are two. A rerun with the
same cache asks nothing.
Probes whose samples compare more than two documents (TFC2) are not defined for lists and
get no samples.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from abnirml.errors import ScoringError, ranker_call_error
from abnirml.evaluation.stats.calibration import Calibration
from abnirml.rankers.listwise import (
    Permutation,
    Window,
    checked_permutation,
    is_listwise,
    list_size,
    sliding_windows,
    window_step,
)

__all__ = ["is_listwise", "order_lists", "rank_cached", "rerank_run", "score_probes"]

#: windows handed to ``rank_windows`` per call (a served ranker spreads them over its
#: concurrent requests); each batch is committed to the cache before the next
WINDOW_BATCH = 32
#: the subsets of samples whose lists a sliding window cuts (lists longer than the window)
INSIDE, STRADDLE = "window-inside", "window-straddle"
WINDOW_SUBSETS = (INSIDE, STRADDLE)
_ROW_TAG = b"abnirml listwise window v2\x00"
#: integers up to 2**53 are exact in a float64 (the cache's value)
_EXACT_BITS = 53


def listwise_calibration(delta: float | None) -> Calibration:
    """δ of a listwise ranker: the given one, else 0 (its verdicts are discrete)."""
    return Calibration(delta=0.0 if delta is None else float(delta), gaps=np.zeros(0),
                       queries=0, source="given" if delta is not None else "listwise")


# -- asking the ranker, through the cache ----------------------------------------------------

def _call(ranker: Any, windows: Sequence[Window]) -> list[Permutation]:
    """``ranker.rank_windows`` checked: one permutation per window; a user's ranker that
    fails is one line naming its file and line."""
    try:
        replies = ranker.rank_windows(list(windows))
        replies = list(replies) if replies is not None else None
    except (SystemExit, Exception) as exc:
        error = ranker_call_error(ranker, "rank_windows()", "permutations", exc)
        if error is None:
            raise
        raise error from None
    if replies is None or len(replies) != len(windows):
        got = "None" if replies is None else f"{len(replies)} permutations"
        raise ScoringError(f"ranker {ranker.name}: rank_windows() returned {got} for "
                           f"{len(windows)} windows: expected one permutation per window")
    return [checked_permutation(ranker.name, reply, len(window.passages))
            for reply, window in zip(replies, windows, strict=True)]


def _packing(size: int) -> tuple[int, int]:
    """(bits per rank, ranks per cache row) for a window of ``size`` passages."""
    bits = max(1, (size - 1).bit_length())
    return bits, _EXACT_BITS // bits


def _row_keys(scorer: Any, window: Window) -> list[tuple[bytes, bytes]]:
    """The cache rows of one window: (query hash, hash of (ordered window, part))."""
    digest = hashlib.blake2b(_ROW_TAG, digest_size=16)
    for passage in window.passages:
        digest.update(scorer.text_key(passage))
    whole = digest.digest()
    query = scorer.text_key(window.query)
    per = _packing(len(window.passages))[1]
    parts = -(-len(window.passages) // per)
    return [(query, hashlib.blake2b(whole + r.to_bytes(4, "little"), digest_size=16).digest())
            for r in range(parts)]


def _packed(permutation: Permutation) -> list[float]:
    """The output rank of each input index, packed ``ranks per row`` to a row."""
    bits, per = _packing(len(permutation))
    rank = [0] * len(permutation)
    for r, index in enumerate(permutation):
        rank[index] = r
    return [float(sum(value << (bits * offset)
                      for offset, value in enumerate(rank[start:start + per])))
            for start in range(0, len(rank), per)]


def _unpacked(values: Sequence[float], size: int) -> Permutation | None:
    """The permutation packed in ``values``, or None for values that do not hold one."""
    bits, per = _packing(size)
    rank: list[int] = []
    for value in values:
        if not float(value).is_integer() or not 0 <= value < 2 ** _EXACT_BITS:
            return None
        number = int(value)
        rank += [(number >> (bits * offset)) & ((1 << bits) - 1) for offset in range(per)]
    rank = rank[:size]
    if sorted(rank) != list(range(size)):
        return None
    return tuple(sorted(range(size), key=rank.__getitem__))


def rank_cached(scorer: Any, ranker: Any, windows: Sequence[Window]) -> list[Permutation]:
    """The permutation of each window, each distinct window asked once, through the score
    cache when ``scorer`` is given (its ``windows_ranked``/``windows_reused`` count them)."""
    unique = list(dict.fromkeys(windows))
    found: dict[Window, Permutation] = {}
    keys: dict[Window, list[tuple[bytes, bytes]]] = {}
    cacheable = scorer is not None and getattr(ranker, "cacheable", True)
    if cacheable:
        keys = {w: _row_keys(scorer, w) for w in unique}
        stored = scorer.cache.lookup(ranker.fingerprint,
                                     [k for w in unique for k in keys[w]])
        for window in unique:
            values = [stored.get(k) for k in keys[window]]
            if any(v is None for v in values):
                continue
            permutation = _unpacked(values, len(window.passages))
            if permutation is not None:
                found[window] = permutation
    missing = [w for w in unique if w not in found]
    if scorer is not None:
        scorer.windows_reused += len(unique) - len(missing)
    from abnirml.evaluation.execution.scoring import progress_bar

    bar = progress_bar(len(missing), f"ranking {ranker.name}",
                       scorer is not None and scorer.progress, unit="window")
    try:
        for start in range(0, len(missing), WINDOW_BATCH):
            batch = missing[start:start + WINDOW_BATCH]
            for window, permutation in zip(batch, _call(ranker, batch), strict=True):
                found[window] = permutation
            if scorer is not None:
                scorer.windows_ranked += len(batch)
            if cacheable:
                rows = [(q, d, value) for window in batch
                        for (q, d), value in zip(keys[window], _packed(found[window]),
                                                 strict=True)]
                scorer.cache.store(ranker.fingerprint, rows)
            bar.update(len(batch))
    finally:
        bar.close()
    return [found[w] for w in windows]


def order_lists(scorer: Any, ranker: Any, lists: Sequence[tuple[str, Sequence[str]]]
                ) -> list[Permutation]:
    """Each (query, passages) list's indices best first: one window when it fits the
    ranker's ``window_size``, else one back-to-front sliding-window pass (rank_llm's
    order). Every list's t-th window is asked in one batch, so the calls of all lists are
    spread over as few ``rank_windows`` calls as the windows' dependence allows."""
    size, step = int(ranker.window_size), window_step(ranker)
    if size < 1:
        raise ScoringError(f"ranker {ranker.name}: window_size must be at least 1, got {size}")
    orders = [list(range(len(passages))) for _, passages in lists]
    plans = [sliding_windows(len(passages), size, step) for _, passages in lists]
    for t in range(max((len(p) for p in plans), default=0)):
        active = [n for n, plan in enumerate(plans) if t < len(plan)]
        windows = []
        for n in active:
            start, end = plans[n][t]
            query, passages = lists[n]
            windows.append(Window(query, tuple(passages[i] for i in orders[n][start:end])))
        for n, permutation in zip(active, rank_cached(scorer, ranker, windows), strict=True):
            start, end = plans[n][t]
            inside = orders[n][start:end]
            orders[n][start:end] = [inside[i] for i in permutation]
    return [tuple(order) for order in orders]


# -- probe lists ------------------------------------------------------------------------------

@dataclass
class FillerPool:
    """Candidate passages per judged query, and every query's together (for top-ups)."""

    by_qid: dict[str, list[str]]
    every: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, collection: Any, ranking: Mapping[str, Sequence[str]] | None) -> FillerPool:
        by_qid: dict[str, list[str]] = {}
        for qid in sorted(ranking or {}):
            texts = [collection.docs[d] for d in (ranking or {})[qid] if d in collection.docs]
            by_qid[qid] = list(dict.fromkeys(texts))
        every = list(dict.fromkeys(t for qid in sorted(by_qid) for t in by_qid[qid]))
        return cls(by_qid, every)

    def draw(self, qid: str | None, exclude: set[str], count: int,
             rng: np.random.Generator) -> list[str]:
        """``count`` distinct fillers (fewer when there are not enough), none in
        ``exclude``: the query's own candidates first, then any query's."""
        own = [t for t in self.by_qid.get(qid or "", ()) if t not in exclude]
        chosen = [own[i] for i in rng.permutation(len(own))[:count].tolist()]
        if len(chosen) < count and self.every:
            taken = exclude | set(chosen)
            rest = [t for t in self.every if t not in taken]
            chosen += [rest[i] for i in rng.permutation(len(rest))[:count - len(chosen)]]
        return chosen


@dataclass(frozen=True)
class ProbeLists:
    """The lists of one probe table for one list size: per sample, the list with d1 at
    ``first`` and d2 at ``second`` (``a``) and with the two swapped (``b``); for query-side
    tables, ``a`` holds the lists under the varied query and ``b`` under the original, the
    document at ``first`` in the first half of each and at ``second`` in the second half."""

    a: list[tuple[str, tuple[str, ...]]]
    b: list[tuple[str, tuple[str, ...]]]
    first: np.ndarray
    second: np.ndarray
    sizes: np.ndarray
    query_side: bool


def sample_qids(table: Any, collection: Any) -> list[str | None]:
    """The judged query of each sample (its ``qids``, else the collection query with the
    sample's text)."""
    from abnirml.evaluation.execution.routing import Identities

    identities = Identities(getattr(collection, "queries", None) or {})
    codes = identities.table_codes(table)
    listing = identities.listing()
    return [listing[c].qid for c in codes.tolist()]


def probe_lists(name: str, table: Any, size: int, pool: FillerPool, qids: Sequence[str | None],
                seed: int) -> ProbeLists:
    """Every sample's lists (see the module docstring), drawn from one generator seeded by
    (seed, probe, size)."""
    from abnirml.evaluation.stats.bootstrap import stable_seed

    rng = np.random.default_rng(stable_seed(seed, "listwise", name, size))
    texts = table.texts
    n = len(table)
    first = np.zeros(n, dtype=np.int64)
    second = np.zeros(n, dtype=np.int64)
    sizes = np.zeros(n, dtype=np.int64)
    a: list[tuple[str, tuple[str, ...]]] = []
    b: list[tuple[str, tuple[str, ...]]] = []
    query_side = table.query1 is not None
    for s in range(n):
        query = texts[int(table.query[s])]
        d1, d2 = texts[int(table.doc1[s])], texts[int(table.doc2[s])]
        fillers = pool.draw(qids[s], {d1, d2}, size - (1 if query_side else 2), rng)
        k = len(fillers) + (1 if query_side else 2)
        # a query-side list without fillers holds the document alone: both halves at 0
        i, j = (int(x) for x in rng.choice(k, size=2, replace=False)) if k > 1 else (0, 0)
        first[s], second[s], sizes[s] = i, j, k
        if query_side:
            varied = texts[int(table.query1[s])]
            at_i, at_j = _placed(fillers, {i: d1}), _placed(fillers, {j: d1})
            a += [(varied, at_i), (varied, at_j)]
            b += [(query, at_i), (query, at_j)]
        else:
            a.append((query, _placed(fillers, {i: d1, j: d2})))
            b.append((query, _placed(fillers, {i: d2, j: d1})))
    return ProbeLists(a, b, first, second, sizes, query_side)


def _placed(fillers: Sequence[str], fixed: Mapping[int, str]) -> tuple[str, ...]:
    rest = iter(fillers)
    return tuple(fixed[p] if p in fixed else next(rest)
                 for p in range(len(fillers) + len(fixed)))


def _rank_of(order: Permutation) -> dict[int, int]:
    return {index: rank for rank, index in enumerate(order)}


def verdicts(lists: ProbeLists, orders_a: Sequence[Permutation],
             orders_b: Sequence[Permutation]) -> tuple[np.ndarray, np.ndarray | None]:
    """The preferences p ∈ [0, 1] and, for document-side probes, the per-sample position
    directions (p = ½: the verdict followed the position in both orders; +1 when the
    earlier-placed document won both times, −1 the later one, 0 otherwise — as
    :func:`.preference_probing.position_direction`)."""
    n = lists.first.shape[0]
    p = np.empty(n, dtype=np.float64)
    if lists.query_side:
        for s in range(n):
            votes = 0
            for half, pos in ((0, lists.first[s]), (1, lists.second[s])):
                varied = _rank_of(orders_a[2 * s + half])[int(pos)]
                original = _rank_of(orders_b[2 * s + half])[int(pos)]
                votes += (varied < original) - (varied > original)
            p[s] = 0.5 + votes / 4.0
        return p, None
    direction = np.zeros(n, dtype=np.int8)
    for s in range(n):
        i, j = int(lists.first[s]), int(lists.second[s])
        rank_a, rank_b = _rank_of(orders_a[s]), _rank_of(orders_b[s])
        p[s] = ((rank_a[i] < rank_a[j]) + (rank_b[j] < rank_b[i])) / 2.0
        if p[s] == 0.5:                 # one position won both lists: which one?
            winner = i if rank_a[i] < rank_a[j] else j
            direction[s] = 1 if winner == min(i, j) else -1
    return p, direction


def window_subsets(lists: ProbeLists, ranker: Any) -> dict[str, np.ndarray] | None:
    """``window-inside`` / ``window-straddle`` masks when some list is longer than the
    ranker's window (None otherwise): whether one window of the pass holds both positions."""
    size, step = int(ranker.window_size), window_step(ranker)
    if lists.sizes.size == 0 or int(lists.sizes.max()) <= size:
        return None
    inside = np.ones(lists.sizes.shape[0], dtype=bool)
    plans: dict[int, list[tuple[int, int]]] = {}
    for s, k in enumerate(lists.sizes.tolist()):
        plan = plans.setdefault(k, sliding_windows(k, size, step))
        i, j = int(lists.first[s]), int(lists.second[s])
        inside[s] = any(lo <= i < hi and lo <= j < hi for lo, hi in plan)
    return {INSIDE: inside, STRADDLE: ~inside}


@dataclass
class ListwiseScores:
    """One probe × listwise ranker: preferences, position flags (None: not defined) and
    the window-boundary subsets (None: every list fits one window)."""

    p: np.ndarray
    flags: np.ndarray | None
    subsets: dict[str, np.ndarray] | None


def score_probes(rankers: Sequence[Any], tables: Mapping[str, Any], scorer: Any,
                 delta_for: Any, context: Any
                 ) -> tuple[dict[str, Calibration], dict[tuple[str, str], ListwiseScores]]:
    """Per listwise ranker its δ (``delta_for(name)``: the given one or None) and per
    (probe, ranker) its :class:`ListwiseScores`."""
    collection = context.collection
    ranking = context.candidates() if getattr(context, "candidates", None) else None
    pool = FillerPool.of(collection, ranking)
    calibrations = {r.name: listwise_calibration(delta_for(r.name)) for r in rankers}
    results: dict[tuple[str, str], ListwiseScores] = {}
    built: dict[tuple[str, int], ProbeLists] = {}
    qids_of: dict[str, list[str | None]] = {}
    for ranker in rankers:
        k = list_size(ranker)
        if k < 2:
            raise ScoringError(f"ranker {ranker.name}: list_size must be at least 2, got {k}")
        for name, table in tables.items():
            if table.more_docs or not len(table):
                results[(name, ranker.name)] = ListwiseScores(np.zeros(0), None, None)
                continue
            if name not in qids_of:
                qids_of[name] = sample_qids(table, collection)
            key = (name, k)
            if key not in built:
                built[key] = probe_lists(name, table, k, pool, qids_of[name], context.seed)
            lists = built[key]
            orders = order_lists(scorer, ranker, [*lists.a, *lists.b])
            p, flags = verdicts(lists, orders[:len(lists.a)], orders[len(lists.a):])
            results[(name, ranker.name)] = ListwiseScores(p, flags, window_subsets(lists, ranker))
    return calibrations, results


def rerank_run(ranker: Any, scorer: Any, ranking: Mapping[str, list[str]],
               queries: Mapping[str, str], docs: Any) -> dict[str, list[tuple[str, float]]]:
    """Each query's candidates re-ranked by one sliding-window pass; a document's run score
    is the number of candidates minus its rank (best: the number of candidates)."""
    qids = [qid for qid in sorted(ranking) if qid in queries]
    present = {qid: [d for d in ranking[qid] if d in docs] for qid in qids}
    orders = order_lists(scorer, ranker, [(queries[qid], [docs[d] for d in present[qid]])
                                          for qid in qids])
    run: dict[str, list[tuple[str, float]]] = {}
    for qid, order in zip(qids, orders, strict=True):
        docnos = present[qid]
        run[qid] = [(docnos[i], float(len(docnos) - rank)) for rank, i in enumerate(order)]
    return run
