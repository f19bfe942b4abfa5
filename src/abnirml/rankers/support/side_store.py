"""A SQLite store of derived values by (namespace, text hash), kept beside the score cache.

Such a store only saves a later run work (spaCy parses, token ids), so it is guarded like the
score cache but never stops a run: it never touches a file that is not a SQLite database or
is another program's database (checked before any write), a damaged file is moved aside to
``NAME.corrupt`` with one warning and an empty store started, and a store that cannot be used
(unwritable folder, full disk, read-only mount) costs one warning and the run goes on
without it. Concurrent runs are safe: WAL, a busy wait, rows written in one transaction,
identical values for identical keys. The file is opened on first use; one store may be
used from several threads (a ranker's background tokenizing and its main thread), one call
at a time.

Many BLOB values are read at once by :meth:`SideStore.lookup_blobs`: one statement per few
thousand keys that SQLite runs to the end by itself — the keys handed over as one blob,
the values handed back concatenated — so no Python object is made per row and the
interpreter's lock is released once per statement rather than once per row (a thread
reading stored token ids does not take turns with the threads feeding a device and
committing scores for every row it reads).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

BUSY_WAIT_S = 60.0
_CHUNK = 500
HASH_BYTES = 16       # a key's text hash (:func:`~abnirml.rankers.support.cache.text_hash`)
_BULK_KEYS = 4_096    # keys per bulk statement: bounds the values SQLite concatenates
_SQLITE_TOOBIG = 18


@dataclass(frozen=True)
class BlobRows:
    """BLOB values found for some of the keys asked for: ``positions[j]`` is the key's
    index in the request, its value ``data[starts[j]:starts[j] + lengths[j]]``. Values come
    in the order they were read — the store's key order, not the request's — so a caller
    that needs the request's order sorts by ``positions``."""

    positions: np.ndarray
    lengths: np.ndarray
    data: bytes

    @property
    def starts(self) -> np.ndarray:
        starts = np.zeros(len(self.lengths), dtype=np.int64)
        np.cumsum(self.lengths[:-1], out=starts[1:])
        return starts


NO_BLOBS = BlobRows(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), b"")


class SideStore:
    """Raw values by (namespace, text hash) in table ``table`` of ``path`` (None: nothing
    is kept). ``label`` names the store in warnings ("parse store"); ``fallback`` says
    what the run does without it ("parsing without a store"); ``value_type`` is the value
    column's SQL type."""

    def __init__(self, path: str | Path | None, table: str, label: str, fallback: str,
                 value_type: str = "TEXT"):
        self.path = None if path is None else Path(path)
        self.table = table
        self.label = label
        self.fallback = fallback
        self.value_type = value_type
        self._conn: sqlite3.Connection | None = None
        self._disabled = self.path is None
        self._read_only = False
        self._lock = threading.RLock()

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def lookup_raw(self, namespace: str, texts: Sequence[str]) -> dict[str, Any]:
        """``text → stored value`` for the texts stored under ``namespace``."""
        with self._lock:
            return self._lookup_raw(namespace, texts)

    def lookup_blobs(self, namespace: str, hashes: Sequence[bytes],
                     multiple_of: int = 1) -> BlobRows:
        """The BLOB values stored under ``namespace`` for the 16-byte text ``hashes`` (each
        given once), concatenated; a value that is not a BLOB, or whose length is not a
        multiple of ``multiple_of``, is left out as if absent."""
        from abnirml.rankers.support.cache import byte_order

        with self._lock:
            conn = self._connection()
            if conn is None or not len(hashes):
                return NO_BLOBS
            parts = []
            # keys in the table's order: each statement walks one stretch of the B-tree
            # rather than jumping across the file (a third less time on 56,000 token rows)
            order = byte_order(hashes)
            hashes = [hashes[i] for i in order.tolist()]
            try:
                for start in range(0, len(hashes), _BULK_KEYS):
                    keys = hashes[start:start + _BULK_KEYS]
                    found = _bulk_blobs(conn, self.table, namespace, keys, multiple_of)
                    if found is None:     # values too large for one statement, say
                        found = _blobs_by_row(conn, self.table, namespace, keys, multiple_of)
                    parts.append(BlobRows(order[found.positions + start], found.lengths,
                                          found.data))
            except sqlite3.DatabaseError as exc:
                self._give_up(exc)
                return NO_BLOBS
        if len(parts) == 1:
            return parts[0]
        return BlobRows(np.concatenate([p.positions for p in parts]),
                        np.concatenate([p.lengths for p in parts]),
                        b"".join(p.data for p in parts))

    def save_raw(self, namespace: str, values: Mapping[str, Any]) -> None:
        """Store ``text → value`` under ``namespace`` in one transaction."""
        with self._lock:
            self._save_raw(namespace, values)

    def _lookup_raw(self, namespace: str, texts: Sequence[str]) -> dict[str, Any]:
        conn = self._connection()
        if conn is None or not texts:
            return {}
        from abnirml.rankers.support.cache import text_hashes

        texts = list(texts)
        by_hash = dict(zip(text_hashes(texts), texts, strict=True))
        hashes = sorted(by_hash)    # each statement reads one stretch of the table's B-tree
        found: dict[str, Any] = {}
        try:
            for start in range(0, len(hashes), _CHUNK):
                chunk = hashes[start:start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(f"SELECT thash, value FROM {self.table} WHERE "
                                    f"namespace = ? AND thash IN ({marks})",
                                    [namespace, *chunk]).fetchall()
                get = by_hash.get
                for thash, value in rows:     # a BLOB comes back as bytes
                    text = get(thash if type(thash) is bytes else bytes(thash))
                    if text is not None:
                        found[text] = value
        except sqlite3.DatabaseError as exc:
            self._give_up(exc)
            return {}
        return found

    def _save_raw(self, namespace: str, values: Mapping[str, Any]) -> None:
        conn = self._connection()
        if conn is None or self._read_only or not values:
            return
        from abnirml.rankers.support.cache import insert_rows, text_hashes

        columns: list[Sequence[Any]] = [[namespace] * len(values), text_hashes(list(values)),
                                        list(values.values())]
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                insert_rows(conn, f"INSERT OR REPLACE INTO {self.table} VALUES ", "(?, ?, ?)",
                            columns)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as exc:
            self._give_up(exc)

    # ------------------------------------------------------------------ storage

    def _connection(self) -> sqlite3.Connection | None:
        if self._disabled:
            return None
        if self._conn is None:
            try:
                self._conn = self._open()
            except OSError:
                self._disabled = True
        return self._conn

    def _leave(self, message: str) -> None:
        warnings.warn(f"{self.label} {self.path} {message} {self.fallback}", stacklevel=5)
        self._disabled = True

    def _open(self) -> sqlite3.Connection | None:
        assert self.path is not None
        path = self.path
        from abnirml.files.ownership import kind_of

        if kind_of(path) not in (None, "regular file"):   # a FIFO is never opened
            self._leave(f"is a {kind_of(path)}, not a regular file; leaving it alone and")
            return None
        if path.exists() and not _is_sqlite(path):
            self._leave("is not a SQLite file; leaving it alone and")
            return None
        if path.exists() and not os.access(path, os.W_OK):
            self._read_only = True
        elif not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            if not os.access(path.parent, os.W_OK | os.X_OK):
                self._disabled = True
                return None
        try:
            return self._connect_waiting()
        except _Foreign as exc:
            self._leave(f"is another application's SQLite database ({exc}); leaving it "
                        "alone and")
            return None
        except sqlite3.DatabaseError as exc:
            from abnirml.rankers.support.cache import _is_damaged

            if _is_busy(exc) or self._read_only or not _is_damaged(exc):
                if not _is_busy(exc):      # a full disk, a read-only mount: not damage
                    self._leave(f"cannot be used ({exc}); leaving it as it is and")
                self._disabled = True
                return None
            if path.is_symlink():
                self._leave(f"is damaged ({exc}) and a symbolic link, which abnirml does "
                            "not move;")
                return None
            self._set_aside(exc)
            return self._connect_waiting()

    def _connect_waiting(self) -> sqlite3.Connection:
        from abnirml.rankers.support.cache import connect_while_busy

        return connect_while_busy(self._connect, BUSY_WAIT_S)

    def _connect(self) -> sqlite3.Connection:
        assert self.path is not None
        if self._read_only:
            conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True,
                                   timeout=BUSY_WAIT_S, isolation_level=None,
                                   check_same_thread=False)
        else:
            conn = sqlite3.connect(self.path, timeout=BUSY_WAIT_S, isolation_level=None,
                                   check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_WAIT_S * 1000)}")
            from abnirml.rankers.support.cache import APPLICATION_ID, foreign_database

            foreign = foreign_database(conn, frozenset({self.table}), self.table)
            if foreign:       # another application's database: never gains our table
                raise _Foreign(foreign)
            if not self._read_only:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.execute(f"CREATE TABLE IF NOT EXISTS {self.table} (namespace TEXT NOT "
                             f"NULL, thash BLOB NOT NULL, value {self.value_type} NOT NULL, "
                             "PRIMARY KEY (namespace, thash)) WITHOUT ROWID")
                if int(conn.execute("PRAGMA application_id").fetchone()[0]) != APPLICATION_ID:
                    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"SELECT namespace, thash, value FROM {self.table} LIMIT 1").fetchall()
        except BaseException:
            conn.close()
            raise
        return conn

    def _set_aside(self, exc: BaseException) -> None:
        from abnirml.rankers.support.cache import set_database_aside

        assert self.path is not None
        broken = set_database_aside(self.path)
        warnings.warn(f"{self.label} {self.path} is damaged ({exc}); moved it to "
                      f"{broken.name} and starting an empty one", stacklevel=6)

    def _give_up(self, exc: BaseException) -> None:
        """A store that fails mid-run is damaged or gone: this run goes on without it, the
        next one sets the file aside when it cannot open it."""
        if not _is_busy(exc):
            warnings.warn(f"{self.label} {self.path} failed ({exc}); {self.fallback} for "
                          "the rest of this run", stacklevel=5)
        self.close()
        self._disabled = True


_BULK_SQL = (
    "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < ?2) "
    "SELECT group_concat(printf('%08x%08x', k.i, length(t.value)), ''), "
    "CAST(group_concat(t.value, x'') AS BLOB) "
    "FROM k CROSS JOIN {table} AS t ON t.namespace = ?3 AND t.thash = substr(?1, {size} * k.i "
    "+ 1, {size}) WHERE typeof(t.value) = 'blob' AND length(t.value) % ?4 = 0")


def _bulk_blobs(conn: sqlite3.Connection, table: str, namespace: str,
                hashes: Sequence[bytes], multiple_of: int) -> BlobRows | None:
    """One statement for every key of ``hashes``: the keys go in as one blob, which SQLite
    cuts into its 16-byte keys and looks up in key order (``k`` the outer loop); what comes
    back is one hex string of (position, length) pairs and one blob of the values. None
    when that cannot serve (values over SQLite's string limit, a key of another length, a
    result that does not add up): the caller reads those keys row by row."""
    if any(len(h) != HASH_BYTES for h in hashes):
        return None
    sql = _BULK_SQL.format(table=table, size=HASH_BYTES)
    try:
        listing, data = conn.execute(sql, (b"".join(hashes), len(hashes), namespace,
                                           multiple_of)).fetchone()
    except sqlite3.DataError:
        return None
    except sqlite3.OperationalError as exc:
        if getattr(exc, "sqlite_errorcode", None) == _SQLITE_TOOBIG or "too big" in str(exc):
            return None
        raise
    if listing is None:
        return NO_BLOBS
    pairs = np.frombuffer(bytes.fromhex(listing), dtype=">u4").reshape(-1, 2).astype(np.int64)
    data = data or b""
    positions, lengths = pairs[:, 0], pairs[:, 1]
    if int(lengths.sum()) != len(data) or np.any(positions >= len(hashes)) or (
            len(positions) > 1 and np.any(positions[1:] <= positions[:-1])):
        return None
    return BlobRows(np.ascontiguousarray(positions), np.ascontiguousarray(lengths), data)


def _blobs_by_row(conn: sqlite3.Connection, table: str, namespace: str,
                  hashes: Sequence[bytes], multiple_of: int) -> BlobRows:
    """:func:`_bulk_blobs`'s result read a row at a time (the general path)."""
    where = {bytes(h): i for i, h in enumerate(hashes)}
    found: dict[int, bytes] = {}
    keys = list(where)
    for start in range(0, len(keys), _CHUNK):
        chunk = keys[start:start + _CHUNK]
        marks = ",".join("?" * len(chunk))
        for thash, value in conn.execute(f"SELECT thash, value FROM {table} WHERE "
                                         f"namespace = ? AND thash IN ({marks})",
                                         [namespace, *chunk]):
            position = where.get(thash if type(thash) is bytes else bytes(thash))
            if (position is not None and isinstance(value, bytes)
                    and len(value) % multiple_of == 0):
                found[position] = value
    if not found:
        return NO_BLOBS
    positions = np.array(sorted(found), dtype=np.int64)
    values = [found[p] for p in positions.tolist()]
    lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    return BlobRows(positions, lengths, b"".join(values))


class _Foreign(Exception):
    """The store's file is a SQLite database of another application (what it holds)."""


def _is_sqlite(path: Path) -> bool:
    from abnirml.rankers.support.cache import is_sqlite_or_empty

    try:
        return is_sqlite_or_empty(path)
    except OSError:
        return False


def _is_busy(exc: BaseException) -> bool:
    from abnirml.rankers.support.cache import _is_busy as busy

    return busy(exc)
