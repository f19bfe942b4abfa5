"""Query-level folds, and which fold's model scores a query text.

Queries are grouped by normalised text (so two qids with the same question always share a
fold) and the groups dealt round-robin in an order fixed by a hash of their text: balanced
folds that do not depend on the training seed, so every seed sees the same held-out split.

At scoring time only a text is known. A text equal to a training query — exactly, or after
lowercasing and dropping punctuation and extra spaces — is scored by the model that held its
fold out. Any other text (a query from another collection, or a manipulated query that no
longer matches) is scored by the model trained on all queries: no fold model is "clean" for
it, and the all-queries model is the best one available.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from abnirml.errors import ConfigError
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

    def to_json(self) -> list[dict[str, Any]]:
        return [{"qid": q, "text": self.texts[q], "fold": self.fold_of[q]}
                for q in sorted(self.fold_of)]

    @classmethod
    def from_json(cls, k: int, rows: list[dict[str, Any]]) -> FoldPlan:
        return cls(k, {r["qid"]: int(r["fold"]) for r in rows},
                   {r["qid"]: r["text"] for r in rows})


def model_key(fold: int | None) -> str:
    return ALL if fold is None else f"fold-{fold}"
