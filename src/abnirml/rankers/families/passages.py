"""Passage aggregation: score long documents with rankers that only read a few hundred tokens.

Transformer rankers truncate their input (512 word pieces, or 256 for MiniLM bi-encoders),
so a news article body would be judged by its first paragraphs only. Following the passage
approach of MacAvaney et al. (2019) that ABNIRML uses for its succinctness probes, this
wrapper splits each document into overlapping windows of ``passage_length`` words (every
``passage_stride`` words), scores (query, window) with the wrapped ranker and aggregates the
window scores (``max`` — as in BERT-MaxP — ``first`` or ``mean``). Documents no longer than
one window are scored whole, unchanged.

The design keeps probes and engine untouched: aggregation is a ranker concern, it applies to
every probe the ranker scores, and the wrapper's fingerprint (window, stride, aggregate and
the inner fingerprint) keeps its scores apart from the plain ranker's in the cache.

Spec: ``maxp:<inner spec>`` with optional ``+passage_length=N``, ``+passage_stride=M`` and
``+aggregate=max|first|mean``; every other ``+key=value`` is the inner ranker's, e.g.
``maxp:bm25+k1=0.9+passage_length=100`` or ``maxp:biencoder+aggregate=mean``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from abnirml.errors import ConfigError
from abnirml.rankers.base import (
    Pair,
    QueryIdentity,
    QueryRoutedRanker,
    Ranker,
    RankerHints,
    RankerSpec,
    checked_scores,
    hints,
    is_query_routed,
)

if TYPE_CHECKING:
    from abnirml.rankers.built_in import MaxPParams

AGGREGATES = ("max", "first", "mean")
OWN_PARAMS = ("passage_length", "passage_stride", "aggregate")
DEFAULT_LENGTH = 150
DEFAULT_STRIDE = 75


def split_passages(text: str, length: int, stride: int) -> list[str]:
    """Windows of ``length`` white-space words every ``stride`` words, the last one ending at
    the document's end (so no window is a short tail)."""
    words = text.split()
    if len(words) <= length:
        return [text]
    starts = [*range(0, len(words) - length, stride), len(words) - length]
    return [" ".join(words[s:s + length]) for s in dict.fromkeys(starts)]


class PassageAggregate:
    """Wraps a ranker; see the module docstring."""

    def __init__(self, inner: Ranker, passage_length: int = DEFAULT_LENGTH,
                 passage_stride: int = DEFAULT_STRIDE, aggregate: str = "max",
                 name: str | None = None):
        if passage_length < 1 or passage_stride < 1:
            raise ConfigError("passage_length and passage_stride must be ≥ 1")
        if passage_stride > passage_length:
            raise ConfigError("passage_stride must not exceed passage_length (words would be "
                              "skipped)")
        if aggregate not in AGGREGATES:
            raise ConfigError(f"aggregate must be one of {', '.join(AGGREGATES)}, "
                              f"got {aggregate!r}")
        self.inner = inner
        self.length = passage_length
        self.stride = passage_stride
        self.aggregate = aggregate
        self.name = name or f"maxp:{inner.name}"
        self.fingerprint = (f"PassageAggregate[length={passage_length},stride={passage_stride},"
                            f"aggregate={aggregate}]({inner.fingerprint})")
        inner_hints = hints(inner)
        self.hints = RankerHints(batch_size=inner_hints.batch_size,
                                 sort_by_length=inner_hints.sort_by_length,
                                 mask_token=inner_hints.mask_token)

    def usage(self) -> dict[str, int] | None:
        """What the wrapped ranker reports it cost (a served one), for run.json."""
        from abnirml.rankers.listwise import usage

        return usage(self.inner)

    @property
    def usage_counter(self) -> object:
        return getattr(self.inner, "usage_counter", None)

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        expanded: list[Pair] = []
        owner: list[int] = []
        for i, (query, doc) in enumerate(pairs):
            windows = split_passages(doc, self.length, self.stride)
            if self.aggregate == "first":
                windows = windows[:1]
            expanded += [(query, w) for w in windows]
            owner += [i] * len(windows)
        # the inner ranker's scores obey the same rules as any ranker's (numbers, finite)
        inner_scores = checked_scores(self.inner.name, self.inner.score(expanded),
                                      len(expanded))
        index = np.asarray(owner, dtype=np.int64)
        n = len(pairs)
        if self.aggregate == "mean":
            total = np.bincount(index, weights=inner_scores, minlength=n)
            return total / np.bincount(index, minlength=n)
        out = np.full(n, -np.inf)
        np.maximum.at(out, index, inner_scores)
        return out


class RoutedPassageAggregate(PassageAggregate):
    """Passage aggregation over a ranker with per-query state (a learned ``knrm``): routes
    each pair as the wrapped ranker does, so the wrapper keeps its query-identity contract."""

    @property
    def _routed_inner(self) -> QueryRoutedRanker:
        # aggregate_passages builds this class only over a ranker that is_query_routed
        return cast(QueryRoutedRanker, self.inner)

    def route(self, identity: QueryIdentity) -> str:
        return self._routed_inner.route(identity)

    def routed(self, key: str) -> PassageAggregate:
        return PassageAggregate(self._routed_inner.routed(key),
                                self.length, self.stride, self.aggregate, name=self.name)


def aggregate_passages(inner: Ranker, passage_length: int = DEFAULT_LENGTH,
                       passage_stride: int = DEFAULT_STRIDE, aggregate: str = "max",
                       name: str | None = None) -> PassageAggregate:
    """The wrapper for ``inner``: query-routed when ``inner`` is."""
    kind = RoutedPassageAggregate if is_query_routed(inner) else PassageAggregate
    return kind(inner, passage_length, passage_stride, aggregate, name=name)


def build(spec: RankerSpec, p: MaxPParams, env: Any) -> PassageAggregate:
    """Registry factory for ``maxp:<inner spec>`` (see the module docstring)."""
    from abnirml.rankers.registry import build

    if not spec.argument:
        raise ConfigError("maxp needs the ranker to wrap, e.g. maxp:bm25 or maxp:biencoder")
    inner = build(spec.wrapped(OWN_PARAMS), env).ranker
    return aggregate_passages(inner, p.passage_length, p.passage_stride, p.aggregate,
                              name=spec.canonical)
