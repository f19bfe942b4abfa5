"""Turning text pairs into transfer samples: the shared half of every dataset-transfer probe.

Query construction, discard accounting (identical, duplicate, capped) and the seeded,
order-independent choices live here so that both the corpus probes (:mod:`.transfer`) and the
NQ factuality probes (:mod:`.factuality`) use them without importing each other.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from abnirml.data.pairs import DataNotFound, TextPair
from abnirml.data.transfer import Keep, Source
from abnirml.probes.base import ProbeContext
from abnirml.probes.transfer.queries import (
    FeatureStore,
    chunk_query,
    given_query,
    texts_needing_parse,
)
from abnirml.samples import Sample, Skip
from abnirml.settings import setting

#: what a source yields (text pairs and skips, or a probe's own records)
ItemT = TypeVar("ItemT")


@dataclass(frozen=True)
class TransferOptions:
    data: str | None = setting(None, help="the folder holding the transfer corpora")
    online: bool = setting(False, help="download corpora from the Hugging Face hub when absent")
    max_pairs: int | None = setting(None, minimum=0, help="keep at most N pairs per probe (seeded)")
    sample_rate: float | None = setting(None, above=0.0, maximum=1.0,
                                        help="fraction of pairs kept by sub-sampling probes")


NO_DATA = "no-data"
IDENTICAL = "identical"
DUPLICATE = "duplicate"
CAPPED = "capped"
NEWS_SAMPLE_RATE = 0.1


def transfer_items(context: ProbeContext, source: Source[ItemT], keep: Keep | None = None
                   ) -> Iterator[ItemT]:
    """``source``'s pairs (a :class:`~abnirml.data.transfer.Source`), located by the run's
    typed ``dtp.data``/``dtp.online`` settings."""
    settings = context.family_options("dtp", TransferOptions)
    if keep is None:
        return source.items(data=settings.data, online=settings.online)
    return source.items(data=settings.data, online=settings.online, keep=keep)


def feature_store(context: ProbeContext) -> FeatureStore:
    """The run's shared parse cache (one spaCy parse per distinct text)."""
    return context.memo("dtp:features", lambda: FeatureStore(context.analyzer.stopword_set,
                                                                  cache=context.parse_cache))


def hash_fraction(key: str) -> float:
    """A fixed pseudo-random number in [0, 1) per key: the deterministic sub-sample is the
    keys below the rate, the same for every seed (as in the paper's 10 % news sample)."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def _seeded_rank(seed: int, key: str) -> bytes:
    return hashlib.blake2b(f"{seed}\x00cap\x00{key}".encode(), digest_size=8).digest()


def _normalised(text: str) -> str:
    return " ".join(text.split())


def transfer_samples(items: Iterable[TextPair | Skip], context: ProbeContext,
                     symmetric: bool = False, group: str | None = None
                     ) -> Iterator[Sample | Skip]:
    """Turn a source's pairs (and its own discards) into samples; see the module docstring."""
    pairs: list[TextPair] = []
    seen: set[tuple[str, str]] = set()
    for item in items:
        item_group = item.meta.get("group", "") if isinstance(item, Skip) else item.group
        if group is not None and item_group != group:
            continue
        if isinstance(item, Skip):
            yield item
            continue
        first, second = _normalised(item.doc1), _normalised(item.doc2)
        if first == second:
            yield Skip(IDENTICAL, {"key": item.key})
            continue
        signature = tuple(sorted((first, second))) if symmetric else (first, second)
        if signature in seen:
            yield Skip(DUPLICATE, {"key": item.key})
            continue
        seen.add(signature)  # type: ignore[arg-type]
        pairs.append(item)

    limit = context.family_options("dtp", TransferOptions).max_pairs
    if limit is not None and len(pairs) > limit:
        chosen = set(sorted(range(len(pairs)),
                            key=lambda i: _seeded_rank(context.seed, pairs[i].key))[:limit])
        for i in range(len(pairs)):
            if i not in chosen:
                yield Skip(CAPPED)
        pairs = [p for i, p in enumerate(pairs) if i in chosen]

    store = feature_store(context)
    full, light = texts_needing_parse([(p.query, p.doc1, p.doc2) for p in pairs])
    store.ensure(full, chunks=True)
    store.ensure(light, chunks=False)
    for pair in pairs:
        if pair.query is None:
            choice = chunk_query(store, pair.doc1, pair.doc2, context.seed, pair.key)
        else:
            choice = given_query(store, pair.query, pair.doc1, pair.doc2)
        if choice.skip is not None:
            yield Skip(choice.skip, {"key": pair.key, "query": choice.query})
            continue
        meta: dict[str, Any] = {"key": pair.key, "query_source": choice.source}
        if pair.group:
            meta["group"] = pair.group
        meta.update(pair.meta)
        yield Sample(str(choice.query), pair.doc1, pair.doc2, meta)


def load_items(load: Callable[[], Iterable[Any]]) -> tuple[list[Any] | None, Skip | None]:
    try:
        return list(load()), None
    except DataNotFound as exc:
        return None, Skip(NO_DATA, {"where": exc.where})
