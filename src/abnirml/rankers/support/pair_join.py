"""A (query, document) pair's model input joined from stored ids, at memory speed.

The tokenizer's own pair encoding is ``prefix + A + middle + B + suffix`` — e.g. BERT's
``[CLS] q [SEP] d [SEP]`` with ``token_type_ids`` 0 then 1, T5's ``q </s> d </s>`` — with the
two texts tokenized independently and cut by the truncation strategy. :class:`PairTemplate`
reads that layout from the tokenizer's post-processor once and reproduces the encoding from
the texts' stored ids (:mod:`abnirml.rankers.support.token_store`): lengths first (from the store,
before any batch is built), then rows sorted and packed into token budgets from those
lengths (:func:`~abnirml.rankers.support.device_batching.packed_batches`), then each padded batch
filled by NumPy gathers over flat arrays (:meth:`JoinedPairs.padded`) — no per-pair Python
objects on the way.

Truncation follows the tokenizer's Rust implementation exactly: ``longest_first`` keeps the
shorter text whole when the longer one can absorb the cut (cutting the longer to the rest),
else cuts both to half of the room (the second text getting an odd token);
``only_second`` cuts the document alone. The result is bit-identical to
``tokenizer(q, d, truncation=…, max_length=…)`` — a test compares every pair of the DL19
battery for each shipped tokenizer family. A tokenizer whose pair encoding is not such a join
(fields that interact: a prompt filled with both texts, as monoT5 and the causal LMs read)
has no template (:meth:`PairTemplate.from_tokenizer` returns None) and keeps tokenizing
pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from abnirml.rankers.support.device_batching import TokenColumns
from abnirml.rankers.support.token_store import TokenStore, TokenView

STRATEGIES = ("longest_first", "only_second")


@dataclass(frozen=True)
class PairTemplate:
    """The special tokens around and between the two texts, and their type ids."""

    prefix: tuple[int, ...]
    middle: tuple[int, ...]
    suffix: tuple[int, ...]
    prefix_types: tuple[int, ...]
    middle_types: tuple[int, ...]
    suffix_types: tuple[int, ...]
    first_type: int
    second_type: int
    keys: tuple[str, ...]            # what the tokenizer returns: input_ids, token_type_ids, …

    @property
    def added(self) -> int:
        return len(self.prefix) + len(self.middle) + len(self.suffix)

    @classmethod
    def from_tokenizer(cls, tokenizer: Any) -> PairTemplate | None:
        """The layout of ``tokenizer``'s pair encoding, or None when it is not a join of the
        two texts' own ids (no fast tokenizer, no pair template, specials inside a text)."""
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None:
            return None
        from abnirml.rankers.support.token_store import plain_backend

        backend = plain_backend(tokenizer)
        first = backend.encode("query", add_special_tokens=False)
        second = backend.encode("document text", add_special_tokens=False)
        if not first.ids or not second.ids:
            return None
        merged = backend.encode("query", "document text", add_special_tokens=True)
        ids, types, sequences = merged.ids, merged.type_ids, merged.sequence_ids
        spans = _segments(sequences)
        if spans is None:
            return None
        (a0, a1), (b0, b1) = spans
        if ids[a0:a1] != first.ids or ids[b0:b1] != second.ids:
            return None
        first_types, second_types = set(types[a0:a1]), set(types[b0:b1])
        if len(first_types) != 1 or len(second_types) != 1:
            return None
        keys = tuple(k for k in ("input_ids", "token_type_ids", "attention_mask")
                     if k in tokenizer("query", "document text"))
        return cls(tuple(ids[:a0]), tuple(ids[a1:b0]), tuple(ids[b1:]),
                   tuple(types[:a0]), tuple(types[a1:b0]), tuple(types[b1:]),
                   first_types.pop(), second_types.pop(), keys)

    def truncated(self, a: np.ndarray, b: np.ndarray, max_length: int,
                  strategy: str = "longest_first") -> tuple[np.ndarray, np.ndarray]:
        """The kept lengths of texts of ``a`` and ``b`` tokens in pairs of at most
        ``max_length`` tokens, as the tokenizer cuts them (vectorised)."""
        if strategy not in STRATEGIES:
            raise ValueError(f"truncation strategy must be one of {STRATEGIES}")
        room = max_length - self.added
        if room < 0:
            raise ValueError(f"max_length {max_length} leaves no room beside "
                             f"{self.added} special tokens")
        over = a + b > room
        if strategy == "only_second":
            cut = a + b - room
            if np.any(over & (b <= cut)):
                raise ValueError("only_second: a document is too short to absorb the cut")
            return a.copy(), np.where(over, b - cut, b)
        short = np.minimum(a, b)
        keep_long = np.where(short > room, short, np.maximum(short, room - short))
        both = short + keep_long > room
        keep_short = np.where(both, room // 2, short)
        keep_long = np.where(both, room // 2 + room % 2, keep_long)
        swapped = a > b
        ka = np.where(over, np.where(swapped, keep_long, keep_short), a)
        kb = np.where(over, np.where(swapped, keep_short, keep_long), b)
        return np.minimum(ka, a), np.minimum(kb, b)


@dataclass(frozen=True)
class SingleTemplate:
    """The special tokens around one text (``[CLS] x [SEP]``, ``x </s>``): the layout
    rankers that encode queries and documents apart (SPLADE) join from stored ids."""

    prefix: tuple[int, ...]
    suffix: tuple[int, ...]

    @classmethod
    def from_tokenizer(cls, tokenizer: Any) -> SingleTemplate | None:
        """The layout of ``tokenizer``'s single-text encoding, or None when it is not the
        text's own ids between fixed special tokens."""
        if getattr(tokenizer, "backend_tokenizer", None) is None:
            return None
        from abnirml.rankers.support.token_store import plain_backend

        backend = plain_backend(tokenizer)
        alone = backend.encode("document text", add_special_tokens=False).ids
        merged = backend.encode("document text", add_special_tokens=True)
        runs = [i for i, s in enumerate(merged.sequence_ids) if s is not None]
        if not alone or not runs or runs != list(range(runs[0], runs[-1] + 1)):
            return None
        start, end = runs[0], runs[-1] + 1
        if merged.ids[start:end] != alone:
            return None
        return cls(tuple(merged.ids[:start]), tuple(merged.ids[end:]))

    def columns(self, store: TokenStore, texts: Sequence[str], max_length: int
                ) -> TokenColumns:
        """``texts`` encoded as ``tokenizer(texts, truncation=True, max_length=…)`` encodes
        them (ids and attention mask), as :class:`~abnirml.rankers.support.device_batching.
        TokenColumns`, from the store's ids (looked up, or added)."""
        view = store.view(texts)
        p, s = len(self.prefix), len(self.suffix)
        keep = np.minimum(view.lengths[view.rows], max(max_length - p - s, 0))
        lengths = keep + p + s
        width = int(lengths.max()) if len(lengths) else 0
        column = np.arange(width, dtype=np.int64)[None, :]
        source = view.offsets[view.rows][:, None] + column - p
        np.clip(source, 0, max(len(view.flat) - 1, 0), out=source)
        ids = view.flat[source].astype(np.int64)
        line = np.arange(len(lengths))
        for j in range(p):
            ids[:, j] = self.prefix[j]
        for j in range(s):
            ids[line, p + keep + j] = self.suffix[j]
        mask = column < lengths[:, None]
        flat = ids[mask]
        return TokenColumns({"input_ids": flat, "attention_mask": np.ones_like(flat)}, lengths)


def _segments(sequences: Sequence[int | None]) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """The spans of text 0 and text 1 in a merged encoding laid out as
    ``specials, text 0, specials, text 1, specials``; None for any other layout."""
    runs: list[tuple[int | None, int, int]] = []
    for i, s in enumerate(sequences):
        if runs and runs[-1][0] == s:
            runs[-1] = (s, runs[-1][1], i + 1)
        else:
            runs.append((s, i, i + 1))
    texts = [(s, start, end) for s, start, end in runs if s is not None]
    if [s for s, _, _ in texts] != [0, 1]:
        return None
    return (texts[0][1], texts[0][2]), (texts[1][1], texts[1][2])


class JoinedPairs:
    """One chunk of pairs as stored ids: kept lengths known before any batch is built.

    ``view_a``/``view_b`` hold the rows of each pair's query and document;
    :meth:`padded` fills a batch of rows.
    """

    def __init__(self, template: PairTemplate, view_a: TokenView, view_b: TokenView,
                 max_length: int, strategy: str = "longest_first"):
        self.template = template
        self.flat = view_b.flat       # looked up last: it holds every row of view_a too
        self.start_a = view_a.offsets[view_a.rows]
        self.start_b = view_b.offsets[view_b.rows]
        self.keep_a, self.keep_b = template.truncated(
            view_a.lengths[view_a.rows], view_b.lengths[view_b.rows], max_length, strategy)
        self.lengths = self.keep_a + self.keep_b + template.added

    @classmethod
    def of(cls, store: TokenStore, template: PairTemplate, pairs: Sequence[tuple[str, str]],
           max_length: int, strategy: str = "longest_first") -> JoinedPairs:
        """Look up (adding what is missing) both texts of every pair in ``store``."""
        queries, documents = zip(*pairs, strict=True) if len(pairs) else ((), ())
        view_a = store.view(queries)
        view_b = store.view(documents)     # the later view holds every row of the earlier
        return cls(template, view_a, view_b, max_length, strategy)

    def __len__(self) -> int:
        return len(self.lengths)

    def padded(self, rows: np.ndarray, pad_id: int) -> dict[str, np.ndarray]:
        """Rows ``rows`` as the tokenizer encodes them, right-padded to their longest:
        ``[len(rows), width]`` int64 per key (padding: ``pad_id`` for ids, 0 elsewhere)."""
        t = self.template
        rows = np.asarray(rows, dtype=np.int64)
        n = len(rows)
        lengths = self.lengths[rows]
        width = int(lengths.max()) if n else 0
        column = np.arange(width, dtype=np.int64)[None, :]
        p, m = len(t.prefix), len(t.middle)
        keep_a = self.keep_a[rows][:, None]
        end_a = p + keep_a                                   # first column after text A
        start_b = end_a + m
        end_b = start_b + self.keep_b[rows][:, None]
        in_a = column < end_a
        source = np.where(in_a, self.start_a[rows][:, None] + (column - p),
                          self.start_b[rows][:, None] + (column - start_b))
        np.clip(source, 0, len(self.flat) - 1, out=source)
        ids = self.flat[source]
        types = np.where(in_a, t.first_type, t.second_type).astype(np.int64)
        line = np.arange(n)
        for j in range(p):
            ids[:, j] = t.prefix[j]
            types[:, j] = t.prefix_types[j]
        for j in range(m):
            ids[line, end_a[:, 0] + j] = t.middle[j]
            types[line, end_a[:, 0] + j] = t.middle_types[j]
        for j in range(len(t.suffix)):
            ids[line, end_b[:, 0] + j] = t.suffix[j]
            types[line, end_b[:, 0] + j] = t.suffix_types[j]
        mask = column < lengths[:, None]
        out = {"input_ids": np.where(mask, ids, np.int64(pad_id))}    # int64, padded
        if "token_type_ids" in t.keys:
            np.multiply(types, mask, out=types)
            out["token_type_ids"] = types
        if "attention_mask" in t.keys:
            out["attention_mask"] = mask.astype(np.int64)
        return out

    def ids(self, i: int) -> list[int]:
        """Pair ``i``'s ids, as one list (for tests and digests)."""
        t = self.template
        a0, b0 = int(self.start_a[i]), int(self.start_b[i])
        return [*t.prefix, *self.flat[a0:a0 + int(self.keep_a[i])].tolist(), *t.middle,
                *self.flat[b0:b0 + int(self.keep_b[i])].tolist(), *t.suffix]
