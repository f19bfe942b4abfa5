"""A persistent store of what the probes read from spaCy parses, beside the score cache.

A fully cached rerun scores nothing, yet used to parse every judged document and transfer
text again with spaCy (and import it): the largest share of a warm ``make demo``. This store
keeps, per text, the plain values a probe extracted from its parse (JSON, never pickled) in
``parses.sqlite`` next to the score cache, so a rerun reads them back instead.

Keys: a *namespace* — this store's format version, the pipeline's identity (package and
version, spaCy's version: :func:`abnirml.text.nlp.pipeline_identity`), and the probe's own
kind of extraction (which components ran, which stopwords decided "content") — and the
text's hash. A changed model, spaCy, extraction or stopword list therefore never reuses an
old entry; it simply parses again. Concurrent runs are safe (SQLite WAL, a busy wait, rows
written in one transaction, identical values for identical keys). A damaged file is moved
aside to ``parses.sqlite.corrupt`` with one warning and the run parses as if the store were
empty; a row that does not decode is parsed again and replaced. The store never touches a
file that is not a SQLite database, and a folder it cannot write only costs the next run
the parses.
"""

from __future__ import annotations

import json
import os
import sqlite3
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

STORE_VERSION = "1"    # bump when what is stored for a namespace changes shape
FILE_NAME = "parses.sqlite"
BUSY_WAIT_S = 60.0
_CHUNK = 500


class ParseCache:
    """Extracted parse values by (namespace, text hash); ``path=None`` stores nothing.

    The file is opened on first use, so a run without spaCy probes never creates it.
    """

    def __init__(self, path: str | Path | None):
        self.path = None if path is None else Path(path)
        self._conn: sqlite3.Connection | None = None
        self._disabled = self.path is None
        self._read_only = False

    # ------------------------------------------------------------------ public

    def get_or_build(self, kind: str, texts: Sequence[str],
                     build: Callable[[list[str]], Sequence[Any]],
                     encode: Callable[[Any], Any], decode: Callable[[Any], Any]) -> dict[str, Any]:
        """``text → value`` for every distinct text, in order: stored values decoded, the
        rest from ``build``
        (called once, with the missing texts in order) and stored encoded. ``kind`` names
        the extraction; None from :func:`namespace` (no spaCy pipeline) bypasses the store."""
        unique = list(dict.fromkeys(texts))
        namespace = self.namespace(kind)
        found = self._lookup(namespace, unique) if namespace is not None else {}
        values: dict[str, Any] = {}
        for text, raw in found.items():
            try:
                values[text] = decode(raw)
            except ValueError:
                continue                     # a damaged row: parsed again and replaced
        missing = [t for t in unique if t not in values]
        if missing:
            built = list(build(missing))
            if len(built) != len(missing):
                raise RuntimeError(f"parse builder returned {len(built)} values for "
                                   f"{len(missing)} texts")
            values.update(zip(missing, built, strict=True))
            # the pipeline build() loaded names the entries (it can differ from the one
            # expected when an installed package failed to load)
            namespace = self.namespace(kind)
            if namespace is not None:
                self._save(namespace, {t: encode(v) for t, v in zip(missing, built,
                                                                     strict=True)})
        return {text: values[text] for text in unique}

    @staticmethod
    def namespace(kind: str) -> str | None:
        from abnirml.text.nlp import pipeline_identity

        identity = pipeline_identity()
        return None if identity is None else f"v{STORE_VERSION}|{identity}|{kind}"

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

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

    def _open(self) -> sqlite3.Connection | None:
        assert self.path is not None
        path = self.path
        from abnirml.files.ownership import kind_of

        if kind_of(path) not in (None, "regular file"):   # a FIFO is never opened
            warnings.warn(f"parse store {path} is a {kind_of(path)}, not a regular file; "
                          "leaving it alone and parsing without a store", stacklevel=4)
            self._disabled = True
            return None
        if path.exists() and not _is_sqlite(path):
            warnings.warn(f"parse store {path} is not a SQLite file; leaving it alone and "
                          "parsing without a store", stacklevel=4)
            self._disabled = True
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
            warnings.warn(f"parse store {path} is another application's SQLite database "
                          f"({exc}); leaving it alone and parsing without a store",
                          stacklevel=4)
            self._disabled = True
            return None
        except sqlite3.DatabaseError as exc:
            from abnirml.rankers.cache import _is_damaged

            if _is_busy(exc) or self._read_only or not _is_damaged(exc):
                if not _is_busy(exc):      # a full disk, a read-only mount: not damage
                    warnings.warn(f"parse store {path} cannot be used ({exc}); leaving it "
                                  "as it is and parsing without a store", stacklevel=4)
                self._disabled = True
                return None
            if path.is_symlink():
                warnings.warn(f"parse store {path} is damaged ({exc}) and a symbolic link, "
                              "which abnirml does not move; parsing without a store",
                              stacklevel=4)
                self._disabled = True
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
                                   timeout=BUSY_WAIT_S, isolation_level=None)
        else:
            conn = sqlite3.connect(self.path, timeout=BUSY_WAIT_S, isolation_level=None)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_WAIT_S * 1000)}")
            from abnirml.rankers.cache import APPLICATION_ID, foreign_database

            foreign = foreign_database(conn, frozenset({"parses"}), "parses")
            if foreign:       # another application's database: never gains our table
                raise _Foreign(foreign)
            if not self._read_only:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.execute("CREATE TABLE IF NOT EXISTS parses (namespace TEXT NOT NULL, "
                             "thash BLOB NOT NULL, value TEXT NOT NULL, "
                             "PRIMARY KEY (namespace, thash)) WITHOUT ROWID")
                if int(conn.execute("PRAGMA application_id").fetchone()[0]) != APPLICATION_ID:
                    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute("SELECT namespace, thash, value FROM parses LIMIT 1").fetchall()
        except BaseException:
            conn.close()
            raise
        return conn

    def _set_aside(self, exc: BaseException) -> None:
        from abnirml.rankers.cache import set_database_aside

        assert self.path is not None
        broken = set_database_aside(self.path)
        warnings.warn(f"parse store {self.path} is damaged ({exc}); moved it to {broken.name} "
                      "and starting an empty one", stacklevel=5)

    def _lookup(self, namespace: str, texts: Sequence[str]) -> dict[str, Any]:
        conn = self._connection()
        if conn is None or not texts:
            return {}
        from abnirml.rankers.cache import text_hash

        by_hash = {text_hash(t): t for t in texts}
        hashes = list(by_hash)
        found: dict[str, Any] = {}
        try:
            for start in range(0, len(hashes), _CHUNK):
                chunk = hashes[start:start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(f"SELECT thash, value FROM parses WHERE namespace = ? AND "
                                    f"thash IN ({marks})", [namespace, *chunk])
                for thash, value in rows:
                    text = by_hash.get(bytes(thash))
                    if text is None:
                        continue
                    try:
                        found[text] = json.loads(value)
                    except (TypeError, ValueError):
                        continue
        except sqlite3.DatabaseError as exc:
            self._give_up(exc)
            return {}
        return found

    def _save(self, namespace: str, encoded: Mapping[str, Any]) -> None:
        conn = self._connection()
        if conn is None or self._read_only or not encoded:
            return
        from abnirml.rankers.cache import text_hash

        rows = []
        for t, v in encoded.items():
            try:   # strict JSON: a value holding NaN is parsed again, never stored
                text = json.dumps(v, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            except ValueError:
                continue
            rows.append((namespace, text_hash(t), text))
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany("INSERT OR REPLACE INTO parses VALUES (?, ?, ?)", rows)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as exc:
            self._give_up(exc)

    def _give_up(self, exc: BaseException) -> None:
        """A store that fails mid-run is damaged or gone: this run parses without it, the
        next one sets the file aside when it cannot open it."""
        if not _is_busy(exc):
            warnings.warn(f"parse store {self.path} failed ({exc}); parsing without it for "
                          "the rest of this run", stacklevel=4)
        self.close()
        self._disabled = True


class _Foreign(Exception):
    """The store's file is a SQLite database of another application (what it holds)."""


def stopwords_key(stopwords: frozenset[str]) -> str:
    """A short digest of a stopword list, for extraction kinds that decide "content" by it
    (another list must never reuse their stored values)."""
    import hashlib

    return hashlib.blake2b("\n".join(sorted(stopwords)).encode(), digest_size=8).hexdigest()


def store_or_memory(cache: ParseCache | None) -> ParseCache:
    """``cache``, or a store that keeps nothing when a probe runs without one."""
    return cache if cache is not None else ParseCache(None)


def default_path(score_cache: Path) -> Path:
    """The store's file beside a score cache file (a ``--cache`` that names no file, such as
    ``.``, is refused by the score cache before any probe opens this store)."""
    return score_cache.parent / FILE_NAME


def _is_sqlite(path: Path) -> bool:
    from abnirml.rankers.cache import is_sqlite_or_empty

    try:
        return is_sqlite_or_empty(path)
    except OSError:
        return False


def _is_busy(exc: BaseException) -> bool:
    from abnirml.rankers.cache import _is_busy as busy

    return busy(exc)
