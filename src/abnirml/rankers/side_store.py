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
"""

from __future__ import annotations

import os
import sqlite3
import threading
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

BUSY_WAIT_S = 60.0
_CHUNK = 500


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

    def save_raw(self, namespace: str, values: Mapping[str, Any]) -> None:
        """Store ``text → value`` under ``namespace`` in one transaction."""
        with self._lock:
            self._save_raw(namespace, values)

    def _lookup_raw(self, namespace: str, texts: Sequence[str]) -> dict[str, Any]:
        conn = self._connection()
        if conn is None or not texts:
            return {}
        from abnirml.rankers.cache import text_hashes

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
        from abnirml.rankers.cache import text_hashes

        rows = list(zip([namespace] * len(values), text_hashes(list(values)), values.values(),
                        strict=True))
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(f"INSERT OR REPLACE INTO {self.table} VALUES (?, ?, ?)", rows)
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
            from abnirml.rankers.cache import _is_damaged

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
        from abnirml.rankers.cache import connect_while_busy

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
            from abnirml.rankers.cache import APPLICATION_ID, foreign_database

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
        from abnirml.rankers.cache import set_database_aside

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


class _Foreign(Exception):
    """The store's file is a SQLite database of another application (what it holds)."""


def _is_sqlite(path: Path) -> bool:
    from abnirml.rankers.cache import is_sqlite_or_empty

    try:
        return is_sqlite_or_empty(path)
    except OSError:
        return False


def _is_busy(exc: BaseException) -> bool:
    from abnirml.rankers.cache import _is_busy as busy

    return busy(exc)
