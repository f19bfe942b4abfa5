"""Query identities of scored pairs, and scoring for rankers with per-query state.

Most rankers score a (query text, document text) pair the same whichever judged query it
came from, so the engine scores each unique text pair once. A ranker with per-query state
(:class:`~abnirml.rankers.base.QueryRoutedRanker`: cross-validated fold models) must score a
pair with what it holds for the pair's *judged query*, named by qid: a probe's varied query
text would otherwise look like an unseen query. Every pair slot therefore carries the
:class:`~abnirml.rankers.base.QueryIdentity` of its sample, and such a ranker scores the
unique (route, text pair) combinations, each route through its own cached fingerprint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from abnirml.evaluation.execution.scoring import Scorer
from abnirml.probes.base import SampleTable
from abnirml.rankers.base import Pair, QueryIdentity, QueryRoutedRanker, Ranker


class Identities:
    """Interned query identities: each (qid, original text) gets one small integer code."""

    def __init__(self, queries: Mapping[str, str]):
        self.queries = queries
        self._qid_of_text: dict[str, str] = {}
        for qid in sorted(queries):          # equal texts: the smallest qid (same fold anyway)
            self._qid_of_text.setdefault(queries[qid], qid)
        self.codes: dict[QueryIdentity, int] = {}

    def code(self, identity: QueryIdentity) -> int:
        return self.codes.setdefault(identity, len(self.codes))

    def of_qid(self, qid: str | None, text: str) -> int:
        """A sample's identity given its qid (``text``: the sample's query, used when the
        qid is not one of the collection's)."""
        if qid is not None and qid in self.queries:
            return self.code(QueryIdentity(qid, self.queries[qid]))
        return self.of_text(text)

    def of_text(self, text: str) -> int:
        """The judged query with this text, or an identity without qid."""
        return self.code(QueryIdentity(self._qid_of_text.get(text), text))

    def table_codes(self, table: SampleTable) -> np.ndarray:
        """The identity code of each sample of ``table``: its ``qids`` (or the per-sample
        ``extra["qids"]`` the query-variation tables keep), else its ``query`` text."""
        if not len(table):
            return np.zeros(0, dtype=np.int64)
        qids = table.qids
        if qids is None and len(table.extra.get("qids", ())) == len(table):
            qids = np.asarray(table.extra["qids"], dtype=object)
        if qids is not None:
            keys = [(None if q is None else str(q), int(t))
                    for q, t in zip(qids.tolist(), table.query.tolist(), strict=True)]
            memo: dict[tuple[str | None, int], int] = {}
            return np.fromiter((memo.setdefault(k, self.of_qid(k[0], table.texts[k[1]]))
                                for k in keys), dtype=np.int64, count=len(keys))
        used, inverse = np.unique(table.query, return_inverse=True)
        per_text = np.array([self.of_text(table.texts[i]) for i in used.tolist()],
                            dtype=np.int64)
        return per_text[inverse.reshape(-1)]

    def listing(self) -> list[QueryIdentity]:
        return list(self.codes)


def score_routed(scorer: Scorer, ranker: QueryRoutedRanker, pairs: Sequence[Pair],
                 pair_index: np.ndarray,
                 slot_identity: np.ndarray, identities: Sequence[QueryIdentity]
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Scores of a query-routed ranker for every slot: ``(values, index)`` with the slot's
    score at ``values[index[slot]]``. ``pair_index`` maps slots to ``pairs``; each unique
    (route, pair) is scored once, by the ranker's model for that route."""
    keys = [ranker.route(identity) for identity in identities]
    route_names = sorted(set(keys))
    route_of_identity = np.array([route_names.index(k) for k in keys], dtype=np.int64)
    slot_route = route_of_identity[slot_identity] if slot_identity.size else slot_identity
    n = max(len(pairs), 1)
    combined = slot_route * n + pair_index
    unique, index = np.unique(combined, return_inverse=True)
    values = np.empty(unique.shape[0], dtype=np.float64)
    route_of_unique = unique // n
    for r, key in enumerate(route_names):
        members = np.flatnonzero(route_of_unique == r)
        if members.size:
            chosen = (unique[members] % n).tolist()
            values[members] = scorer.score(ranker.routed(key), [pairs[i] for i in chosen])
    return values, index.reshape(-1)


def score_judged(scorer: Scorer | None, ranker: Ranker, pairs: Sequence[Pair],
                 identities: Sequence[QueryIdentity]) -> np.ndarray:
    """Scores of ``pairs`` whose judged queries are known (``identities``, one per pair):
    through the cache when ``scorer`` is given, each unique pair once, and by each pair's
    route for a ranker with per-query state. Re-ranking and masking use it."""
    from abnirml.rankers.base import checked_scores, is_query_routed

    def plain(target: Ranker, items: list[Pair]) -> np.ndarray:
        if not items:
            return np.zeros(0)
        if scorer is not None:
            return scorer.score(target, items)
        return checked_scores(target.name, target.score(items), len(items))

    routing = ranker if is_query_routed(ranker) else None
    keys = [(routing.route(identity) if routing is not None else "", pair)
            for identity, pair in zip(identities, pairs, strict=True)]
    unique = list(dict.fromkeys(keys))
    position = {key: i for i, key in enumerate(unique)}
    values = np.empty(len(unique), dtype=np.float64)
    by_route: dict[str, list[int]] = {}
    for i, (route, _) in enumerate(unique):
        by_route.setdefault(route, []).append(i)
    for route, members in by_route.items():
        target = routing.routed(route) if routing is not None else ranker
        values[members] = plain(target, [unique[i][1] for i in members])
    return values[[position[key] for key in keys]] if keys else np.zeros(0)
