"""Where a listwise ranker's verdicts come from the position alone: two analyses per ranker.

* **Identical-document null test.** A passage and its exact copy sit at positions i < j of
  a list of the query's candidates; nothing but the position tells them apart, so an
  unbiased ranker puts either copy first half the time. The observed share of lists whose
  *earlier* copy ranks higher is reported with an interval at the run's ``--ci``
  (``--bootstrap 0`` leaves it out) that counts both the lists and the queries
  (:func:`rate_interval`): resampling only the queries would show no uncertainty at all
  when every query has the same share (one in four lists each), and counting only the
  lists would ignore that lists of one query share it. :data:`NULL_TRIALS` lists per
  query, each with its own passage, fillers and positions, drawn from a generator seeded
  by (seed, query, size).
* **Position-response curve.** One judged-relevant passage of each query (its highest
  grade ≥ :data:`RELEVANT`, first in candidate order among equals) is inserted at every
  position 1…k of one fixed list of the query's other top candidates; the curve is its mean
  output rank (1 = top) per input position over the queries. A ranker blind to position
  has the same mean rank everywhere; mean ranks that grow with the input position mean a
  passage placed late is ranked late (primacy) — drawn with rank 1 at the top, as the
  report draws it, a line falling to the right.

Both ask their windows through the score cache, so a rerun asks nothing; lists longer than
the ranker's window are ranked by one sliding-window pass, as in probing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from abnirml.evaluation.analyses.listwise_probing import FillerPool, _placed, order_lists
from abnirml.rankers.listwise import list_size, window_step

#: identical-document lists per query
NULL_TRIALS = 4
#: the least grade of the passage the position-response curve moves (TREC DL: relevant)
RELEVANT = 2


def null_test(ranker: Any, scorer: Any, pool: FillerPool, queries: Mapping[str, str],
              seed: int, resamples: int, level: float) -> dict[str, Any] | None:
    """The identical-document null test of ``ranker`` (None without candidates)."""
    from abnirml.evaluation.stats.bootstrap import stable_seed

    k = list_size(ranker)
    lists: list[tuple[str, tuple[str, ...]]] = []
    positions: list[tuple[int, int]] = []
    cluster: list[int] = []
    for code, qid in enumerate(q for q in sorted(pool.by_qid) if q in queries):
        texts = pool.by_qid[qid]
        if not texts:
            continue
        rng = np.random.default_rng(stable_seed(seed, "listwise-null", qid, k))
        for _ in range(NULL_TRIALS):
            passage = texts[int(rng.integers(len(texts)))]
            fillers = pool.draw(qid, {passage}, k - 2, rng)
            i, j = sorted(int(x) for x in rng.choice(len(fillers) + 2, size=2, replace=False))
            lists.append((queries[qid], _placed(fillers, {i: passage, j: passage})))
            positions.append((i, j))
            cluster.append(code)
    if not lists:
        return None
    orders = order_lists(scorer, ranker, lists)
    first = np.array([order.index(i) < order.index(j)
                      for order, (i, j) in zip(orders, positions, strict=True)], dtype=float)
    codes = np.asarray(cluster, dtype=np.int64)
    clusters = int(np.unique(codes).shape[0])
    rate = float(first.mean())
    interval = rate_interval(first, codes, level) if resamples > 0 else None
    return {"list_size": k, "lists": len(lists), "queries": clusters, "first_rate": rate,
            "ci_low": None if interval is None else interval[0],
            "ci_high": None if interval is None else interval[1], "ci": level}


def rate_interval(hits: np.ndarray, cluster: np.ndarray, level: float
                  ) -> tuple[float, float] | None:
    """The Wilson score interval of the share of ``hits`` (0/1 trials, each of one query in
    ``cluster``) at ``level``, its trials counted at their effective number; None with
    fewer than two queries.

    Trials of one query are not independent, so they count as n / DEFF trials, Kish's
    design effect DEFF = 1 + (m₀ − 1)·ρ with ρ the intraclass correlation of the one-way
    analysis of variance (m₀ the queries' adjusted mean size, ρ clipped to [0, 1]). Queries
    that differ no more than their trials do (ρ ≤ 0: every query one in four) leave all n
    trials; queries that differ entirely (ρ = 1: each query's lists all agree) count once
    each; where nothing varies at all (every list of every query agrees) only the queries
    count, as for the probe scores. The interval is never a point, and it is Wilson's
    rather than the normal approximation's, so shares near 0 and 1 keep sensible ends.
    """
    from statistics import NormalDist

    hits = np.asarray(hits, dtype=np.float64)
    used, codes = np.unique(np.asarray(cluster), return_inverse=True)
    queries, trials = int(used.shape[0]), int(hits.shape[0])
    if queries < 2 or trials == 0:
        return None
    sizes = np.bincount(codes.reshape(-1), minlength=queries).astype(np.float64)
    rates = np.bincount(codes.reshape(-1), weights=hits, minlength=queries) / sizes
    rate = float(hits.mean())
    between = float(np.sum(sizes * (rates - rate) ** 2)) / (queries - 1)
    within = (float(np.sum(sizes * rates * (1 - rates))) / (trials - queries)
              if trials > queries else 0.0)
    adjusted = (trials - float(np.sum(sizes ** 2)) / trials) / (queries - 1)
    spread = between + (adjusted - 1) * within
    correlation = min(1.0, max(0.0, (between - within) / spread)) if spread > 0 else 1.0
    effective = trials / (1 + (adjusted - 1) * correlation)
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    shrink = 1 + z * z / effective
    centre = (rate + z * z / (2 * effective)) / shrink
    half = z / shrink * math.sqrt(rate * (1 - rate) / effective
                                  + z * z / (4 * effective * effective))
    low = 0.0 if rate == 0.0 else max(0.0, centre - half)
    high = 1.0 if rate == 1.0 else min(1.0, centre + half)
    return low, high


def relevant_passage(qid: str, ranking: Sequence[str], qrels: Mapping[str, int],
                     docs: Any) -> str | None:
    """The docno of the query's judged passage the curve moves: highest grade ≥
    :data:`RELEVANT`, first in candidate order, then by docno among judged non-candidates."""
    judged = [d for d in ranking if qrels.get(d, 0) >= RELEVANT]
    judged += sorted(d for d, g in qrels.items()
                     if g >= RELEVANT and d not in set(ranking) and d in docs)
    judged = [d for d in judged if d in docs]
    if not judged:
        return None
    best = max(qrels[d] for d in judged)
    return next(d for d in judged if qrels[d] == best)


def position_response(ranker: Any, scorer: Any, ranking: Mapping[str, Sequence[str]],
                      queries: Mapping[str, str], qrels: Mapping[str, Mapping[str, int]],
                      docs: Any) -> dict[str, Any] | None:
    """Mean output rank (1 = top) of a relevant passage per input position 1…k (None when
    no query has a relevant passage and k − 1 other candidates)."""
    k = list_size(ranker)
    lists: list[tuple[str, tuple[str, ...]]] = []
    used = 0
    for qid in sorted(ranking):
        if qid not in queries:
            continue
        docno = relevant_passage(qid, ranking[qid], qrels.get(qid, {}), docs)
        if docno is None:
            continue
        passage = docs[docno]
        fillers = list(dict.fromkeys(docs[d] for d in ranking[qid]
                                     if d in docs and docs[d] != passage))[:k - 1]
        if len(fillers) < k - 1:
            continue
        used += 1
        lists += [(queries[qid], _placed(fillers, {p: passage})) for p in range(k)]
    if not used:
        return None
    orders = order_lists(scorer, ranker, lists)
    ranks = np.array([order.index(n % k) + 1 for n, order in enumerate(orders)],
                     dtype=float).reshape(used, k)
    return {"list_size": k, "queries": used, "relevance": f"grade >= {RELEVANT}",
            "mean_rank": [float(x) for x in ranks.mean(axis=0)]}


def listwise_analyses(rankers: Sequence[Any], scorer: Any, collection: Any,
                      ranking: Mapping[str, Sequence[str]] | None, seed: int,
                      resamples: int, level: float) -> dict[str, Any]:
    """run.json's ``listwise`` entry: per listwise ranker its list size, window and the two
    analyses (an analysis its data cannot support is left out)."""
    from abnirml.rankers.listwise import is_listwise

    pool = FillerPool.of(collection, ranking)
    out: dict[str, Any] = {}
    for ranker in rankers:
        if not is_listwise(ranker):
            continue
        entry: dict[str, Any] = {"list_size": list_size(ranker),
                                 "window": int(ranker.window_size), "step": window_step(ranker)}
        null = null_test(ranker, scorer, pool, collection.queries, seed, resamples, level)
        if null is not None:
            entry["null_test"] = null
        if ranking and collection.qrels:
            curve = position_response(ranker, scorer, ranking, collection.queries,
                                      collection.qrels, collection.docs)
            if curve is not None:
                entry["position_response"] = curve
        out[ranker.name] = entry
    return {"rankers": out, "null_trials_per_query": NULL_TRIALS} if out else {}
