"""A persistent score cache in one SQLite file.

Keyed by (ranker fingerprint, hash(query text), hash(document text)), so a score is reused
whenever the same model sees the same texts — across probes, runs and collections — and a
ranker whose parameters change (a different fingerprint) never reuses stale scores.
Writes happen in one transaction per batch, so an interrupted run loses at most the batch
in flight. Nothing is pickled: the file holds only hashes and floats.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import warnings
from collections.abc import Sequence
from pathlib import Path

SCHEMA_VERSION = 1
_CHUNK = 400  # rows per lookup statement (SQLite's parameter limit is 32766)


def text_hash(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def default_cache_path() -> Path:
    """``$ABNIRML_CACHE`` if set, else ``$XDG_CACHE_HOME/abnirml/scores.sqlite``."""
    explicit = os.environ.get("ABNIRML_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "abnirml" / "scores.sqlite"


class ScoreCache:
    """Scores by (fingerprint, query hash, document hash). ``path=None`` keeps them in memory."""

    def __init__(self, path: str | Path | None):
        self.path = None if path is None else Path(path)
        self._conn = self._open()
        self._ranker_ids: dict[str, int] = {}

    def _open(self) -> sqlite3.Connection:
        if self.path is None:
            conn = sqlite3.connect(":memory:")
            self._create(conn)
            return conn
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = self._connect_checked()
        except sqlite3.DatabaseError as exc:
            broken = self.path.with_name(self.path.name + ".corrupt")
            warnings.warn(f"score cache {self.path} is unreadable ({exc}); moved it to "
                          f"{broken.name} and starting an empty cache", stacklevel=2)
            for suffix in ("", "-wal", "-shm"):
                side = Path(str(self.path) + suffix)
                if side.exists():
                    os.replace(side, Path(str(broken) + suffix))
            conn = self._connect_checked()
        return conn

    def _connect_checked(self) -> sqlite3.Connection:
        assert self.path is not None
        conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
        try:
            conn.execute("PRAGMA busy_timeout = 60000")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            status = conn.execute("PRAGMA quick_check").fetchone()
            if status is None or status[0] != "ok":
                raise sqlite3.DatabaseError(f"integrity check failed: {status}")
            self._create(conn)
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    @staticmethod
    def _create(conn: sqlite3.Connection) -> None:
        conn.executescript(
            """
            CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS rankers (
                id INTEGER PRIMARY KEY, fingerprint TEXT UNIQUE NOT NULL);
            CREATE TABLE IF NOT EXISTS scores (
                ranker INTEGER NOT NULL, qhash BLOB NOT NULL, dhash BLOB NOT NULL,
                score REAL NOT NULL, PRIMARY KEY (ranker, qhash, dhash)) WITHOUT ROWID;
            """
        )
        conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))

    def _ranker_id(self, fingerprint: str) -> int:
        rid = self._ranker_ids.get(fingerprint)
        if rid is None:
            self._conn.execute("INSERT OR IGNORE INTO rankers (fingerprint) VALUES (?)",
                               (fingerprint,))
            row = self._conn.execute("SELECT id FROM rankers WHERE fingerprint = ?",
                                     (fingerprint,)).fetchone()
            rid = self._ranker_ids[fingerprint] = int(row[0])
        return rid

    def lookup(self, fingerprint: str, keys: Sequence[tuple[bytes, bytes]]
               ) -> dict[tuple[bytes, bytes], float]:
        """The cached scores among ``keys`` (missing keys are absent from the result)."""
        rid = self._ranker_id(fingerprint)
        found: dict[tuple[bytes, bytes], float] = {}
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start:start + _CHUNK]
            values = ",".join("(?,?)" for _ in chunk)
            params: list[object] = [rid]
            for qh, dh in chunk:
                params.extend((qh, dh))
            rows = self._conn.execute(
                f"SELECT qhash, dhash, score FROM scores WHERE ranker = ? AND (qhash, dhash) "
                f"IN (VALUES {values})", params)
            for qh, dh, score in rows:
                found[(bytes(qh), bytes(dh))] = float(score)
        return found

    def store(self, fingerprint: str, items: Sequence[tuple[bytes, bytes, float]]) -> None:
        """Store one batch atomically."""
        rid = self._ranker_id(fingerprint)
        with self._transaction():
            self._conn.executemany(
                "INSERT OR REPLACE INTO scores VALUES (?, ?, ?, ?)",
                [(rid, qh, dh, float(s)) for qh, dh, s in items])

    def count(self, fingerprint: str | None = None) -> int:
        if fingerprint is None:
            return int(self._conn.execute("SELECT COUNT(*) FROM scores").fetchone()[0])
        rid = self._ranker_id(fingerprint)
        return int(self._conn.execute("SELECT COUNT(*) FROM scores WHERE ranker = ?",
                                      (rid,)).fetchone()[0])

    def has_scores(self, fingerprint: str) -> bool:
        """Whether anything is cached for ``fingerprint`` (one indexed row, not a count)."""
        row = self._conn.execute("SELECT id FROM rankers WHERE fingerprint = ?",
                                 (fingerprint,)).fetchone()
        if row is None:
            return False
        return self._conn.execute("SELECT 1 FROM scores WHERE ranker = ? LIMIT 1",
                                  (row[0],)).fetchone() is not None

    def _transaction(self) -> _Transaction:
        return _Transaction(self._conn)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> ScoreCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Transaction:
    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def __enter__(self) -> None:
        if self.conn.isolation_level is None:
            self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if self.conn.isolation_level is None:
            self.conn.execute("ROLLBACK" if exc_type else "COMMIT")
        else:
            (self.conn.rollback if exc_type else self.conn.commit)()
