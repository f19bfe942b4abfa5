"""Query-level folds, and which fold's model scores a query text.

Queries are grouped by normalised text (so two qids with the same question always share a
fold) and the groups dealt round-robin in an order fixed by a hash of their text: balanced
folds that do not depend on the training seed, so every seed sees the same held-out split.

A scored pair is routed by the identity of its judged query (:class:`QueryIdentity`: the
qid and that query's original text), not by the text being scored: a probe that varies the
query (shuffles, drops or respells words) is scored by the same fold model as its original,
the one that never saw that query's judgments. A qid of the training plan whose original
text matches the plan's is routed to its fold; otherwise the original text decides — equal
to a training query, exactly or after lowercasing and dropping punctuation and extra spaces,
it goes to that query's fold, and any other query (one of another collection) goes to the
model trained on all queries, for which it is unseen anyway.

Callers that score bare texts without an identity get the same text rule on the text itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from abnirml.errors import ConfigError
from abnirml.rankers.base import QueryIdentity
from abnirml.text.tokenize import terms

ALL = "all"


def normalise_query(text: str) -> str:
    return " ".join(terms(text))


@dataclass(frozen=True)
class FoldPlan:
    k: int
    fold_of: Mapping[str, int]        # qid → fold
    texts: Mapping[str, str]          # qid → query text
    _by_text: dict[str, int] = field(default_factory=dict, repr=False, compare=False)
    _by_normalised: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        for qid, fold in self.fold_of.items():
            self._by_text.setdefault(self.texts[qid], fold)
            self._by_normalised.setdefault(normalise_query(self.texts[qid]), fold)

    @classmethod
    def build(cls, queries: Mapping[str, str], k: int) -> FoldPlan:
        if k < 2:
            raise ConfigError(f"cross-validation needs at least 2 folds, got {k}")
        groups: dict[str, list[str]] = {}
        for qid in sorted(queries):
            groups.setdefault(normalise_query(queries[qid]), []).append(qid)
        if len(groups) < k:
            raise ConfigError(f"{k}-fold cross-validation needs at least {k} distinct judged "
                              f"queries, the collection has {len(groups)}")
        order = sorted(groups, key=lambda t: hashlib.blake2b(t.encode(), digest_size=8).digest())
        fold_of = {qid: i % k for i, text in enumerate(order) for qid in groups[text]}
        return cls(k, fold_of, {q: queries[q] for q in fold_of})

    def training_qids(self, fold: int | None) -> list[str]:
        """The queries a model is trained on: all but ``fold``'s (all for ``None``)."""
        return sorted(q for q, f in self.fold_of.items() if f != fold)

    def route(self, query_text: str) -> int | None:
        """The held-out fold whose model scores ``query_text``; None → the all-queries model."""
        fold = self._by_text.get(query_text)
        if fold is None:
            fold = self._by_normalised.get(normalise_query(query_text))
        return fold

    def route_query(self, identity: QueryIdentity) -> int | None:
        """The held-out fold whose model scores pairs of the judged query ``identity``,
        whatever text a probe scores in its place; None → the all-queries model."""
        qid = identity.qid
        fold = self.fold_of.get(qid) if qid is not None else None
        if qid is not None and fold is not None and (
                self.texts[qid] == identity.text
                or normalise_query(self.texts[qid]) == normalise_query(identity.text)):
            return fold
        return self.route(identity.text)

    def to_json(self) -> list[dict[str, Any]]:
        return [{"qid": q, "text": self.texts[q], "fold": self.fold_of[q]}
                for q in sorted(self.fold_of)]

    @classmethod
    def from_json(cls, k: int, rows: list[dict[str, Any]]) -> FoldPlan:
        return cls(k, {r["qid"]: int(r["fold"]) for r in rows},
                   {r["qid"]: r["text"] for r in rows})


def model_key(fold: int | None) -> str:
    return ALL if fold is None else f"fold-{fold}"
