"""Token ids of each unique text, kept once per tokenizer and shared by every ranker using it.

A battery scores each passage, and each of its manipulated variants, against a query, across
many probes and rankers; queries number in the dozens. Tokenizing every (query, document)
pair costs the host more than an accelerator needs to score it, yet almost nothing needs
tokenizing per pair: each text is tokenized once per tokenizer (without special tokens),
its ids kept in flat arrays, and a pair's input is joined from them
(:mod:`abnirml.rankers.support.pair_join`) — the way a search engine stores a document's terms once.

A :class:`TokenStore` is keyed by the tokenizer's fingerprint (:func:`tokenizer_fingerprint`:
its full serialised definition, so two rankers that load the same vocabulary and rules share
one store, and a changed vocabulary never reuses ids). Within a process, :func:`shared_store`
hands every ranker with that fingerprint the same store while any of them lives. Across runs,
the ids are kept on disk in ``tokens.sqlite`` beside the score cache (:class:`TokenDisk`,
owned and guarded like the spaCy parse store: :mod:`abnirml.rankers.support.side_store`), so a
second ranker with the same tokenizer, or a rerun with another head, dtype or budget,
tokenizes nothing.

Texts missing from both are tokenized in one call of the fast tokenizer's batch API
(``encode_batch_fast``: Rust, spread over every core with the GIL released), from the
background thread that prepares the device's next batches.
"""

from __future__ import annotations

import copy
import hashlib
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

STORE_VERSION = "1"        # bump when what a store keeps per text changes meaning
FILE_NAME = "tokens.sqlite"

if TYPE_CHECKING:
    from abnirml.rankers.support.side_store import BlobRows

Encode = Callable[[list[str]], list[list[int]]]


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """A digest of everything that decides a text's ids: the wrapper's class and the fast
    tokenizer's whole serialised definition (vocabulary, normaliser, pre-tokeniser, model,
    added tokens), with its mutable truncation and padding state left out."""
    backend = plain_backend(tokenizer)
    h = hashlib.blake2b(digest_size=16)
    h.update(f"v{STORE_VERSION}|{type(tokenizer).__name__}|".encode())
    h.update(backend.to_str().encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def plain_backend(tokenizer: Any) -> Any:
    """A private copy of ``tokenizer``'s Rust tokenizer with truncation and padding off (the
    shared one carries whatever settings its last caller left on it)."""
    backend = copy.deepcopy(tokenizer.backend_tokenizer)
    backend.no_truncation()
    backend.no_padding()
    return backend


def backend_encoder(tokenizer: Any) -> Encode:
    """``texts → ids`` without special tokens, through a private copy of the fast tokenizer."""
    backend = plain_backend(tokenizer)

    def encode(texts: list[str]) -> list[list[int]]:
        return [e.ids for e in backend.encode_batch_fast(texts, add_special_tokens=False)]

    return encode


@dataclass(frozen=True)
class TokenView:
    """Rows of a store as it was when they were looked up: ``rows[i]`` is the store row of
    the i-th text asked for; its ids are ``flat[offsets[r]:offsets[r] + lengths[r]]``
    (``flat`` is int32).
    Arrays grow by reallocation, so a view stays valid while the store grows."""

    rows: np.ndarray
    flat: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray

    def ids(self, i: int) -> list[int]:
        r = int(self.rows[i])
        start = int(self.offsets[r])
        ids: list[int] = self.flat[start:start + int(self.lengths[r])].tolist()
        return ids


class TokenStore:
    """Ids of every text seen with one tokenizer, in flat int64 arrays; thread-safe.

    ``encode`` tokenizes a list of texts (no special tokens); ``disk`` keeps ids between
    runs (None: this process only).
    """

    def __init__(self, fingerprint: str, encode: Encode, disk: TokenDisk | None = None):
        self.fingerprint = fingerprint
        self.encode = encode
        self.disk = disk
        self.index: dict[str, int] = {}
        # int32, as kept on disk: half the memory and copies of int64 (vocabularies are far
        # below 2³¹); batches are widened to int64 when they are gathered
        self._flat = np.zeros(1 << 16, dtype=np.int32)
        self._offsets = np.zeros(1 << 10, dtype=np.int64)
        self._lengths = np.zeros(1 << 10, dtype=np.int64)
        self._used = 0                     # ids stored
        self._lock = threading.Lock()
        self.tokenized = 0                 # texts this store tokenized itself
        self.loaded = 0                    # texts read back from disk

    def __len__(self) -> int:
        return len(self.index)

    def view(self, texts: Sequence[str]) -> TokenView:
        """The rows of ``texts`` (in order, repeats allowed), adding the texts not yet
        stored: read back from disk, else tokenized in one batch call."""
        index = self.index
        missing = [t for t in dict.fromkeys(texts) if t not in index]
        if missing:
            self._add(missing)
        rows = np.fromiter(map(index.__getitem__, texts), dtype=np.int64, count=len(texts))
        with self._lock:
            count = len(index)
            return TokenView(rows, self._flat, self._offsets[:count], self._lengths[:count])

    def _add(self, texts: list[str]) -> None:
        """Store ``texts`` (none stored yet, each once): their ids read back from disk in
        bulk (:meth:`TokenDisk.lookup_ids`), the rest tokenized in one call and saved."""
        found = (self.disk.lookup_ids(self.fingerprint, texts) if self.disk is not None
                 else None)
        if found is None or not len(found.positions):
            fresh, known = texts, []
        else:      # the stored texts in the order their ids were read
            known = list(map(texts.__getitem__, found.positions.tolist()))
            if len(known) == len(texts):
                fresh = []
            else:
                stored = np.zeros(len(texts), dtype=bool)
                stored[found.positions] = True
                fresh = [t for t, s in zip(texts, stored.tolist(), strict=True) if not s]
        made = self.encode(fresh) if fresh else []
        if len(made) != len(fresh):
            raise RuntimeError(f"tokenizer returned {len(made)} rows for {len(fresh)} texts")
        made_lengths = np.fromiter(map(len, made), dtype=np.int64, count=len(made))
        made_ids = np.fromiter(chain.from_iterable(made), dtype="<i4",
                               count=int(made_lengths.sum()))
        if found is not None and len(known):
            lengths = np.concatenate([found.lengths // 4, made_lengths])
            ids = np.concatenate([np.frombuffer(found.data, dtype="<i4"), made_ids])
        else:
            lengths, ids = made_lengths, made_ids
        with self._lock:
            kept = self._extend(known + fresh, lengths, ids)
            # texts another thread stored meanwhile count once, for that thread
            self.loaded += int(kept[:len(known)].sum()) if kept is not None else len(known)
            self.tokenized += int(kept[len(known):].sum()) if kept is not None else len(fresh)
        if self.disk is not None and fresh:
            self.disk.save_ids(self.fingerprint, fresh, made_lengths, made_ids)

    def _extend(self, texts: list[str], lengths: np.ndarray, ids: np.ndarray
                ) -> np.ndarray | None:
        """Append ``texts`` with their ids (``lengths[i]`` ids each, one after another in
        ``ids``) in one copy, skipping any another thread stored meanwhile; which of
        ``texts`` were appended (None: all of them)."""
        index = self.index
        keep = None
        if not index.keys().isdisjoint(texts):       # another thread's meanwhile
            keep = np.fromiter((t not in index for t in texts), dtype=bool, count=len(texts))
            ids = ids[np.repeat(keep, lengths)]
            texts = [t for t, k in zip(texts, keep.tolist(), strict=True) if k]
            lengths = lengths[keep]
        count = len(texts)
        if not count:
            return keep
        row = len(index)
        if row + count > len(self._offsets):
            self._offsets = _grown(self._offsets, row + count)
            self._lengths = _grown(self._lengths, row + count)
        if self._used + len(ids) > len(self._flat):
            self._flat = _grown(self._flat, self._used + len(ids))
        self._flat[self._used:self._used + len(ids)] = ids
        offsets = self._offsets[row:row + count]
        offsets[0:1] = self._used
        np.cumsum(lengths[:-1], out=offsets[1:])
        offsets[1:] += self._used
        self._lengths[row:row + count] = lengths
        self._used += len(ids)
        index.update(zip(texts, range(row, row + count), strict=True))
        return keep


def _blob(ids: Sequence[int]) -> bytes:
    """Token ids as the disk keeps them: little-endian int32."""
    return np.asarray(ids, dtype="<i4").tobytes()


def _grown(array: np.ndarray, needed: int) -> np.ndarray:
    """A copy of ``array`` with room for at least ``needed`` items (doubling); the room
    past the copy is left unset (nothing reads past what the store has filled)."""
    size = max(needed, 2 * len(array))
    out = np.empty(size, dtype=array.dtype)
    out[:len(array)] = array
    return out


_stores: weakref.WeakValueDictionary[str, TokenStore] = weakref.WeakValueDictionary()
_stores_lock = threading.Lock()


def shared_store(tokenizer: Any, disk_path: Path | None = None) -> TokenStore:
    """The process's store for ``tokenizer``'s fingerprint (one per fingerprint while a
    ranker holds it), attached to ``tokens.sqlite`` at ``disk_path`` when given."""
    fingerprint = tokenizer_fingerprint(tokenizer)
    with _stores_lock:
        store = _stores.get(fingerprint)
        if store is None:
            store = TokenStore(fingerprint, backend_encoder(tokenizer))
            _stores[fingerprint] = store
        if store.disk is None and disk_path is not None:
            store.disk = TokenDisk(disk_path)
        return store


def default_path(score_cache: Path) -> Path:
    """The token store's file beside a score cache file."""
    return score_cache.parent / FILE_NAME


class TokenDisk:
    """Ids by (tokenizer fingerprint, text hash) in ``tokens.sqlite``: a SQLite side store
    with the parse store's ownership rules (never another program's file, a damaged one set
    aside, an unusable one only costs time)."""

    def __init__(self, path: Path):
        from abnirml.rankers.support.side_store import SideStore

        self._store = SideStore(path, table="tokens", label="token store",
                                fallback="tokenizing without a store", value_type="BLOB")

    def lookup_ids(self, fingerprint: str, texts: Sequence[str]) -> BlobRows:
        """The stored ids of ``texts`` (each given once): which of them were found
        (``positions``, ascending), their lengths in bytes and their ids as kept,
        little-endian int32, one after another — read in bulk, no object per text. A value
        that cannot be ids is left out, so that text is tokenized again."""
        from abnirml.rankers.support.cache import text_hashes

        return self._store.lookup_blobs(fingerprint, text_hashes(list(texts)), multiple_of=4)

    def lookup(self, fingerprint: str, texts: Sequence[str]) -> dict[str, bytes]:
        """The stored ids of ``texts`` as kept (little-endian int32 bytes), by text."""
        unique = list(dict.fromkeys(texts))
        found = self.lookup_ids(fingerprint, unique)
        return {unique[p]: found.data[s:s + n] for p, s, n in
                zip(found.positions.tolist(), found.starts.tolist(), found.lengths.tolist(),
                    strict=True)}

    def save(self, fingerprint: str, blobs: dict[str, bytes]) -> None:
        """Store texts' ids, each as :func:`_blob` writes them."""
        self._store.save_raw(fingerprint, blobs)

    def save_ids(self, fingerprint: str, texts: Sequence[str], lengths: np.ndarray,
                 ids: np.ndarray) -> None:
        """Store ``texts``' ids given flat (``lengths[i]`` ids each, in order)."""
        data = np.ascontiguousarray(ids, dtype="<i4").tobytes()
        ends = (4 * np.cumsum(lengths)).tolist()
        starts = [0, *ends[:-1]]
        self.save(fingerprint, {t: data[a:b] for t, a, b in zip(texts, starts, ends,
                                                                 strict=True)})

    def close(self) -> None:
        self._store.close()
