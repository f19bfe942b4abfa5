"""Where a listwise ranker's verdicts come from the position alone: two analyses per ranker.

* **Identical-document null test.** A passage and its exact copy sit at positions i < j of
  a list of the query's candidates; nothing but the position tells them apart, so an
  unbiased ranker puts either copy first half the time. The observed share of lists whose
  *earlier* copy ranks higher is reported with a query-clustered bootstrap interval (the
  run's ``--bootstrap`` and ``--ci``; the exact Clopper–Pearson bound when every list
  agrees, as for the probe scores). :data:`NULL_TRIALS` lists per query, each with its own
  passage, fillers and positions, drawn from a generator seeded by (seed, query, size).
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

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from abnirml.evaluation.listwise_probing import FillerPool, _placed, order_lists
from abnirml.rankers.listwise import list_size, window_step

#: identical-document lists per query
NULL_TRIALS = 4
#: the least grade of the passage the position-response curve moves (TREC DL: relevant)
RELEVANT = 2


def null_test(ranker: Any, scorer: Any, pool: FillerPool, queries: Mapping[str, str],
              seed: int, resamples: int, level: float) -> dict[str, Any] | None:
    """The identical-document null test of ``ranker`` (None without candidates)."""
    from abnirml.evaluation.bootstrap import clustered_ci, stable_seed, unanimous_range

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
    interval: tuple[float, float] | None = None
    if resamples > 0 and clusters >= 2:
        if rate in (0.0, 1.0):
            interval = unanimous_range(rate, clusters, level, 0.0, 1.0)
        else:
            found = clustered_ci(first, codes, resamples, level, seed, ("listwise-null-test",))
            interval = None if found is None else (float(found[0]), float(found[1]))
    return {"list_size": k, "lists": len(lists), "queries": clusters, "first_rate": rate,
            "ci_low": None if interval is None else interval[0],
            "ci_high": None if interval is None else interval[1], "ci": level}


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
