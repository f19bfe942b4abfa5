"""A persistent score cache in one SQLite file.

Keyed by (ranker fingerprint, hash(query text), hash(document text)), so a score is reused
whenever the same model sees the same texts — across probes, runs and collections — and a
ranker whose parameters change (a different fingerprint) never reuses stale scores.
Writes happen in one transaction per batch, so an interrupted run loses at most the batch
in flight. Nothing is pickled: the file holds only hashes, floats and per-row checksums;
a cached value that is not finite or fails its checksum is scored again, never reused.
"""

from __future__ import annotations

import errno
import hashlib
import math
import operator
import os
import sqlite3
import struct
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from abnirml.errors import ConfigError, ScoringError

#: rows per multi-row INSERT statement (:func:`insert_rows`)
INSERT_ROWS = 1_000
SCHEMA_VERSION = 2   # 2: per-row checksum column ``chk`` (version 1 caches gain it on open)
_CHUNK = 400  # rows per lookup statement (SQLite's parameter limit is 32766)
_SQLITE_MAGIC = b"SQLite format 3\x00"
#: ``PRAGMA application_id`` of an abnirml score cache ("ABNM"): a database without it is
#: taken over only when it is empty or holds exactly the tables a cache holds
APPLICATION_ID = 0x41424E4D
_CACHE_TABLES = frozenset({"meta", "rankers", "scores"})
#: every column of every table of a cache; version 1 lacks ``scores.chk`` (added on open)
_CACHE_COLUMNS = {"meta": frozenset({"key", "value"}),
                  "rankers": frozenset({"id", "fingerprint"}),
                  "scores": frozenset({"ranker", "qhash", "dhash", "score", "chk"})}
_ADDED_SINCE_1 = {"scores": frozenset({"chk"})}
_SQLITE_DAMAGED_CODES = {11, 26}     # SQLITE_CORRUPT, SQLITE_NOTADB
#: SQLITE_IOERR_SHORT_READ: the file is shorter than its own header says (cut off, or a
#: header overwritten); unlike other I/O errors it describes the file, not the disk
_SQLITE_SHORT_READ = 522
_SQLITE_FULL = 13
_SQLITE_CANTOPEN = 14


def text_hash(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


#: text → :func:`text_hash`, shared by the score cache's keys and the side stores' (token
#: ids, parses), so a text a run both looks up in ``tokens.sqlite`` and scores is hashed
#: once; emptied whole when it reaches :data:`HASH_MEMO_LIMIT` texts, which bounds what it
#: keeps alive after a run
_hash_memo: dict[str, bytes] = {}
HASH_MEMO_LIMIT = 1 << 18


def text_hashes(texts: Iterable[str]) -> list[bytes]:
    """:func:`text_hash` of each of ``texts``, in order, each distinct text hashed once per
    process (while the memo holds it): one pass over a list, not a call per text."""
    memo = _hash_memo
    texts = texts if isinstance(texts, list) else list(texts)
    new = [t for t in dict.fromkeys(texts) if t not in memo]
    if new:
        if len(memo) + len(new) > HASH_MEMO_LIMIT:
            memo.clear()
        blake2b = hashlib.blake2b
        memo.update(zip(new, [blake2b(t.encode("utf-8", "surrogatepass"), digest_size=16)
                              .digest() for t in new], strict=True))
    try:
        return list(map(memo.__getitem__, texts))
    except KeyError:      # another thread emptied the memo meanwhile
        return [memo.get(t) or text_hash(t) for t in texts]


def row_check(fingerprint: str, qhash: bytes, dhash: bytes, score: float) -> bytes:
    """A short digest binding a score to its ranker and texts.

    Not a security measure (there is no secret): it catches a value edited by hand or by a
    tool, a row copied under another ranker, and bit rot, so such a score is rescored
    instead of silently reused.
    """
    h = hashlib.blake2b(digest_size=8)
    h.update(fingerprint.encode("utf-8", "surrogatepass"))
    h.update(b"\x00")
    h.update(bytes(qhash))
    h.update(bytes(dhash))
    # + 0.0 turns -0.0 into 0.0: SQLite stores a REAL -0.0 as 0, so the sign would not survive
    h.update(struct.pack("<d", float(score) + 0.0))
    return h.digest()


def row_checks(fingerprint: str, qhashes: Sequence[bytes], dhashes: Sequence[bytes],
               scores: np.ndarray) -> list[bytes]:
    """:func:`row_check` of many rows of one ranker: the fingerprint's part of the digest is
    computed once and copied per row, and the scores are packed in one call."""
    start = hashlib.blake2b(digest_size=8)
    start.update(fingerprint.encode("utf-8", "surrogatepass"))
    start.update(b"\x00")
    packed = (np.asarray(scores, dtype=np.float64) + 0.0).astype("<f8").tobytes()
    checks = []
    for i, (qh, dh) in enumerate(zip(qhashes, dhashes, strict=True)):
        h = start.copy()
        h.update(qh)
        h.update(dh)
        h.update(packed[8 * i:8 * i + 8])
        checks.append(h.digest())
    return checks


def key_order(qhashes: Sequence[bytes], dhashes: Sequence[bytes]) -> list[int]:
    """Row positions in (query hash, document hash) order, ties in their given order."""
    order: list[int] = byte_order(qhashes, dhashes).tolist()
    return order


def byte_order(*columns: Sequence[bytes]) -> np.ndarray:
    """Row positions in the byte order of the rows' keys, compared column by column, ties in
    their given order: one NumPy sort of the keys' 64-bit words (read big-endian, so they
    order as the bytes do) when every key is 16 bytes long, a Python sort otherwise."""
    n = len(columns[0]) if columns else 0
    if n and all({len(h) for h in column} == {16} for column in columns):
        words = [np.frombuffer(b"".join(column), dtype=">u8").reshape(n, 2)
                 for column in columns]
        # lexsort's last key is its first: the first column's first word
        ordered: np.ndarray = np.lexsort([w[:, j] for w in reversed(words) for j in (1, 0)])
        return ordered
    return np.array(sorted(range(n), key=lambda i: tuple(bytes(c[i]) for c in columns)),
                    dtype=np.int64)


def insert_rows(conn: sqlite3.Connection, head: str, template: str,
                columns: Sequence[Sequence[Any]]) -> None:
    """Insert rows given as ``columns`` (one sequence per ``?`` of ``template``, rows in
    order) with statements of :data:`INSERT_ROWS` rows each: ``head`` followed by
    ``template`` once per row. Python's ``executemany`` hands SQLite one row at a time and
    takes the interpreter's lock back after each; here SQLite inserts a statement's rows by
    itself, so threads feeding a device run meanwhile. Rows go in in order, so a key given
    twice keeps its last values, as with one statement per row."""
    count = len(columns[0]) if columns else 0
    width = template.count("?")
    try:
        limit = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    except (AttributeError, sqlite3.Error):     # Python < 3.11: SQLite's oldest default
        limit = 999
    per = max(1, min(INSERT_ROWS, limit // max(width, 1)))
    for start in range(0, count, per):
        part = [column[start:start + per] for column in columns]
        rows = len(part[0])
        conn.execute(head + ",".join([template] * rows),
                     list(chain.from_iterable(zip(*part, strict=True))))


def default_cache_path() -> Path:
    """``$ABNIRML_CACHE`` if set, else ``$XDG_CACHE_HOME/abnirml/scores.sqlite``."""
    from abnirml.files.derived_values import default_cache_path as located

    return located()


def free_sibling(path: Path, suffix: str) -> Path:
    """``path`` + ``suffix``, or + ``suffix-1``, ``-2``…: the first name nothing uses."""
    candidate = path.with_name(path.name + suffix)
    n = 0
    while any(Path(str(candidate) + side).exists() or Path(str(candidate) + side).is_symlink()
              for side in ("", "-wal", "-shm")):
        n += 1
        candidate = path.with_name(f"{path.name}{suffix}-{n}")
    return candidate


def set_database_aside(path: Path) -> Path:
    """Move a damaged SQLite file and its ``-wal``/``-shm`` sides to the first free
    ``.corrupt`` name (never overwriting anything); the new name of the main file."""
    broken = free_sibling(path, ".corrupt")
    for suffix in ("", "-wal", "-shm"):
        side = Path(str(path) + suffix)
        if side.exists():
            _move_without_overwriting(side, Path(str(broken) + suffix))
    return broken


def is_sqlite_or_empty(path: Path) -> bool:
    """Whether ``path`` starts with SQLite's header or is empty (a file SQLite may take
    over); raises OSError when it cannot be read."""
    with path.open("rb") as handle:
        head = handle.read(len(_SQLITE_MAGIC))
    return not head or head == _SQLITE_MAGIC


BUSY_WAIT_S = 60.0
"""How long opening a cache waits for other processes that hold it locked."""

_SQLITE_BUSY_CODES = {5, 6}   # SQLITE_BUSY, SQLITE_LOCKED


def connect_while_busy(connect: Callable[[], sqlite3.Connection],
                       wait_s: float | None = None) -> sqlite3.Connection:
    """``connect()``, retried with growing pauses for up to ``wait_s`` (default
    :data:`BUSY_WAIT_S`, read at call time) while the file is busy.

    Shared by the score cache and the parse store: "database is locked" while opening is
    another process's lock (SQLite answers it at once when two processes both need a write
    lock on a fresh file), never damage, so the caller must not move the file aside for it.
    """
    deadline = time.monotonic() + (BUSY_WAIT_S if wait_s is None else wait_s)
    delay = 0.05
    while True:
        try:
            return connect()
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or time.monotonic() + delay > deadline:
                raise
            time.sleep(delay)
            delay = min(2 * delay, 1.0)


def _is_damaged(exc: BaseException) -> bool:
    """Whether ``exc`` says the file's content is broken (the only reason a cache is ever
    moved aside): not a full disk, a read-only mount, a permission or a lock."""
    code: int | None = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _SQLITE_DAMAGED_CODES or code == _SQLITE_SHORT_READ
    message = str(exc).lower()
    return any(m in message for m in ("malformed", "not a database", "integrity check failed"))


def _is_full(exc: BaseException) -> bool:
    code: int | None = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF == _SQLITE_FULL
    return "disk is full" in str(exc).lower()


def _no_space_left(path: Path | None) -> bool:
    """Whether the file system holding ``path`` has (almost) no free space: SQLite reports
    a full disk met while growing its ``-shm``/``-wal`` files as a plain I/O error."""
    if path is None:
        return False
    try:
        info = os.statvfs(path.absolute().parent)
    except OSError:
        return False
    return info.f_bavail * info.f_frsize < (1 << 16)


def storage_error(path: Path | None, exc: BaseException) -> ConfigError:
    """One line for a cache that cannot be written although nothing is wrong with it."""
    if _is_full(exc) or _no_space_left(path):
        return ConfigError(f"--cache {path}: the disk is full ({exc}); the score cache is left "
                           "as it was; free some space, or give another --cache or --no-cache")
    return ConfigError(f"--cache {path}: cannot use the score cache ({exc}); it is left as "
                       "it was")


def foreign_database(conn: sqlite3.Connection, tables_of_ours: frozenset[str],
                     key_table: str) -> str:
    """'' when ``conn``'s database is abnirml's to use — marked with :data:`APPLICATION_ID`,
    empty, or unmarked but holding only ``tables_of_ours`` including ``key_table`` (written
    before the mark existed) — else what it holds, for the one-line refusal. Reads only."""
    app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
    if app_id == APPLICATION_ID:
        return ""
    tables = {row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")}
    if app_id == 0 and (not tables or (key_table in tables and tables <= tables_of_ours)):
        return ""
    shown = ", ".join(sorted(tables)[:3]) + (" …" if len(tables) > 3 else "")
    return f"application id {app_id:#x}, tables: {shown or 'none'}"


def _is_busy(exc: BaseException) -> bool:
    """Whether ``exc`` says another connection holds the database (not that it is damaged)."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    code: int | None = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _SQLITE_BUSY_CODES
    message = str(exc).lower()
    return "locked" in message or "busy" in message


class ScoreCache:
    """Scores by (fingerprint, query hash, document hash). ``path=None`` keeps them in memory.

    What happens to ``path`` is deliberately narrow, because it is a name the user typed:

    * missing → a new cache is created (its folder too);
    * a SQLite score cache → used; if it is damaged, and only then, it is moved aside to
      ``NAME.corrupt`` (or ``NAME.corrupt-1``… — an existing file is never overwritten);
    * readable but not writable → used read-only: lookups work, new scores are kept in
      memory for this run, and one warning says so;
    * a directory, a file that is not SQLite, or anything the permissions forbid →
      :class:`~abnirml.errors.ConfigError` (one line, exit 2), touching nothing.
    """

    def __init__(self, path: str | Path | None):
        self.path = None if path is None else Path(path)
        self.read_only = False
        self._overlay: ScoreCache | None = None   # new scores of a read-only cache
        self._identity: tuple[int, int] | None = None
        self._gone_warned = False
        self.rejected = 0    # cached rows refused (not finite, or failing their checksum)
        self._checked_columns = True
        self._conn = self._open()
        # one statement at a time: the scorer commits from a background thread
        self._lock = threading.RLock()
        self._ranker_ids: dict[str, int] = {}
        self._fingerprints: dict[int, str] = {}

    def _open(self) -> sqlite3.Connection:
        if self.path is None:
            conn = sqlite3.connect(":memory:", check_same_thread=False)
            self._create(conn)
            return conn
        self._check_path()
        try:
            conn = self._connect_waiting()
        except sqlite3.DatabaseError as exc:
            if _is_busy(exc):
                raise ConfigError(f"--cache {self.path}: another process kept the score cache "
                                  f"locked for {BUSY_WAIT_S:.0f} s ({exc}); try again, or give "
                                  "another --cache") from None
            if not _is_damaged(exc):
                raise storage_error(self.path, exc) from None
            if self.read_only:
                raise ConfigError(f"--cache {self.path}: the score cache is damaged ({exc}) "
                                  "and read-only, so it cannot be moved aside; give another "
                                  "--cache or --no-cache") from None
            if self.path.is_symlink():
                raise ConfigError(f"--cache {self.path}: the score cache is damaged ({exc}) "
                                  "and is a symbolic link, which abnirml does not move; give "
                                  "another --cache or --no-cache") from None
            broken = set_database_aside(self.path)
            warnings.warn(f"score cache {self.path} is damaged ({exc}); moved it to "
                          f"{broken.name} and starting an empty cache", stacklevel=2)
            conn = self._connect_checked()
        self._identity = self._stat_identity()
        return conn

    def _connect_waiting(self) -> sqlite3.Connection:
        """Connect, waiting while another process holds the file busy.

        SQLite's busy timeout does not cover every case: two processes opening a fresh cache
        at once can both need a write lock (creating tables, switching to WAL), and SQLite
        then answers "database is locked" at once rather than risk a deadlock. That is
        contention, not damage, so it must never send the cache to ``.corrupt``.
        """
        return connect_while_busy(self._connect_checked)

    def _check_path(self) -> None:
        """Refuse, with one line, every ``path`` that is not (or cannot become) a cache."""
        assert self.path is not None
        path = self.path
        where = f"--cache {path}"
        if path.is_symlink() and not path.exists():
            raise ConfigError(f"{where}: is a symbolic link to a missing file "
                              f"({os.readlink(path)}); refusing to follow or move it (give "
                              "another --cache, or mend the link)")
        if path.is_dir():
            raise ConfigError(f"{where}: is a directory; expected a score cache file")
        from abnirml.files.ownership import refuse_special_file

        for side in ("", "-wal", "-shm"):     # a FIFO is never opened: it would block
            refuse_special_file(Path(str(path) + side), f"{where}{side and ' (' + side + ')'}")
        if path.exists():
            try:
                sqlite_file = is_sqlite_or_empty(path)
            except OSError as exc:
                raise ConfigError(f"{where}: cannot read it ({exc.strerror})") from None
            if not sqlite_file:
                raise ConfigError(f"{where}: is not a SQLite score cache; refusing to use or "
                                  "move it (name a new file, or delete it yourself)")
            folder_writable = os.access(path.parent, os.W_OK | os.X_OK)
            if not os.access(path, os.W_OK) or not folder_writable:
                self.read_only = True
                warnings.warn(f"score cache {path} is read-only; using its scores, keeping new "
                              "ones in memory for this run only", stacklevel=3)
            return
        parent = path.parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise ConfigError(f"{where}: {_in_the_way(parent)}") from None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise ConfigError(f"{where}: {_in_the_way(parent)}") from None
            raise ConfigError(f"{where}: cannot create its folder ({exc.strerror})") from None
        if not parent.is_dir():
            raise ConfigError(f"{where}: {parent} is not a folder")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise ConfigError(f"{where}: cannot create the cache, folder {parent} is not "
                              "writable (give another --cache or --no-cache)")

    def _connect_read_only(self) -> sqlite3.Connection:
        """A read-only connection; on a read-only mount, where SQLite cannot create the
        ``-shm`` file a WAL database needs, an immutable one (nothing else can write there)."""
        assert self.path is not None
        uri = self.path.resolve().as_uri()
        try:
            conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=60.0,
                                   isolation_level=None, check_same_thread=False)
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.OperationalError as exc:
            if _is_busy(exc) or _is_damaged(exc):
                raise
        return sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, timeout=60.0,
                               isolation_level=None, check_same_thread=False)

    def _check_owner(self, conn: sqlite3.Connection) -> bool:
        """Refuse, before anything is written, a database that is not an abnirml cache:
        another application's data must never gain our tables or be switched to WAL.
        Returns whether the file still needs our application id."""
        foreign = foreign_database(conn, _CACHE_TABLES, "scores")
        if foreign:
            raise ConfigError(f"--cache {self.path}: is another application's SQLite database "
                              f"({foreign}), not an abnirml score cache; refusing to use or "
                              "change it (give another --cache)")
        return int(conn.execute("PRAGMA application_id").fetchone()[0]) != APPLICATION_ID

    def _connect_checked(self) -> sqlite3.Connection:
        assert self.path is not None
        if self.read_only:
            conn = self._connect_read_only()
        else:
            conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None,
                                   check_same_thread=False)
        try:
            conn.execute("PRAGMA busy_timeout = 60000")
            needs_id = self._check_owner(conn)
            status = conn.execute("PRAGMA quick_check").fetchone()
            if status is None or status[0] != "ok":
                raise sqlite3.DatabaseError(f"integrity check failed: {status}")
            self._check_schema(conn, marked=not needs_id)   # before anything is written
            if not self.read_only:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
            if self.read_only:
                self._checked_columns = self._has_check_column(conn)
                self._overlay = ScoreCache(None)
            else:
                self._create(conn)
                if needs_id:
                    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                self._checked_columns = True
        except BaseException:
            conn.close()
            raise
        return conn

    def _check_schema(self, conn: sqlite3.Connection, marked: bool) -> None:
        """Refuse, touching nothing, a cache whose tables or columns are not the ones this
        version knows, or that says it comes from a newer schema: that is not damage (SQLite
        found none), so it is never moved aside, and never used as if it were ours to read.
        An empty database becomes a cache; an unmarked one (written before the mark
        existed) may lack tables, which are created."""
        tables = {row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")}
        if not tables:
            return
        where = f"--cache {self.path}"
        unknown = sorted(tables - _CACHE_TABLES)
        missing = sorted(_CACHE_TABLES - tables) if marked else []
        if unknown or missing:
            what = _mismatch("table", unknown, missing)
            raise ConfigError(f"{where}: the score cache has {what} (a cache holds the tables "
                              "meta, rankers and scores); refusing to use or change it (give "
                              "another --cache, or move this one away)")
        for table in sorted(tables):
            columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
            expected = _CACHE_COLUMNS[table]
            strange = sorted(columns - expected)
            lacking = sorted(expected - columns - _ADDED_SINCE_1.get(table, frozenset()))
            if strange or lacking:
                what = _mismatch("column", strange, lacking)
                raise ConfigError(f"{where}: the score cache's table {table} has {what}; "
                                  "refusing to use or change it (give another --cache, or "
                                  "move this one away)")
        if "meta" in tables:
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            version = None if row is None else str(row[0])
            if version is not None and (not version.isdigit() or
                                        int(version) > SCHEMA_VERSION):
                raise ConfigError(f"{where}: the score cache says it has schema version "
                                  f"{version[:20]!r}, and this abnirml knows versions up to "
                                  f"{SCHEMA_VERSION} (a newer abnirml wrote it?); refusing to "
                                  "use or change it (give another --cache, or upgrade)")

    @staticmethod
    def _has_check_column(conn: sqlite3.Connection) -> bool:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(scores)")}
        if "score" not in columns:
            raise sqlite3.DatabaseError("no scores table")
        return "chk" in columns

    @classmethod
    def _create(cls, conn: sqlite3.Connection) -> None:
        conn.executescript(
            """
            CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS rankers (
                id INTEGER PRIMARY KEY, fingerprint TEXT UNIQUE NOT NULL);
            CREATE TABLE IF NOT EXISTS scores (
                ranker INTEGER NOT NULL, qhash BLOB NOT NULL, dhash BLOB NOT NULL,
                score REAL NOT NULL, chk BLOB, PRIMARY KEY (ranker, qhash, dhash)) WITHOUT ROWID;
            """
        )
        if not cls._has_check_column(conn):
            cls._migrate_add_checks(conn)
        conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))

    @staticmethod
    def _migrate_add_checks(conn: sqlite3.Connection) -> None:
        """Version 1 → 2: add the checksum column and sign every existing row once."""
        conn.create_function("abnirml_row_check", 4, row_check, deterministic=True)
        conn.execute("BEGIN IMMEDIATE")
        try:
            if "chk" not in {row[1] for row in conn.execute("PRAGMA table_info(scores)")}:
                conn.execute("ALTER TABLE scores ADD COLUMN chk BLOB")
                conn.execute(
                    "UPDATE scores SET chk = abnirml_row_check((SELECT fingerprint FROM rankers "
                    "WHERE rankers.id = scores.ranker), qhash, dhash, score)")
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)",
                             (str(SCHEMA_VERSION),))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _stat_identity(self) -> tuple[int, int] | None:
        try:
            info = os.stat(self.path) if self.path is not None else None
        except OSError:
            return None
        return None if info is None else (info.st_dev, info.st_ino)

    def _ranker_id(self, fingerprint: str) -> int:
        rid = self._ranker_ids.get(fingerprint)
        if rid is not None:
            return rid
        with self._lock:
            return self._new_ranker_id(fingerprint)

    def _new_ranker_id(self, fingerprint: str) -> int:
        rid = self._ranker_ids.get(fingerprint)
        if rid is None:
            if not self.read_only:
                try:
                    self._conn.execute("INSERT OR IGNORE INTO rankers (fingerprint) "
                                       "VALUES (?)", (fingerprint,))
                except sqlite3.OperationalError as exc:     # a full disk: one line
                    raise storage_error(self.path, exc) from None
            row = self._conn.execute("SELECT id FROM rankers WHERE fingerprint = ?",
                                     (fingerprint,)).fetchone()
            rid = self._ranker_ids[fingerprint] = -1 if row is None else int(row[0])
        return rid

    def lookup(self, fingerprint: str, keys: Sequence[tuple[bytes, bytes]]
               ) -> dict[tuple[bytes, bytes], float]:
        """The trusted cached scores among ``keys`` (missing keys are absent from the result).

        A row whose value is not finite or does not match its checksum is left out (so it is
        scored again and replaced) and counted in :attr:`rejected`.
        """
        rid = self._ranker_id(fingerprint)
        found: dict[tuple[bytes, bytes], float] = {}
        rejected = 0
        check = self._checked_columns
        column = "chk" if check else "NULL"
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start:start + _CHUNK]
            values = ",".join("(?,?)" for _ in chunk)
            params: list[object] = [rid]
            for qh, dh in chunk:
                params.extend((qh, dh))
            with self._lock:
                rows = self._conn.execute(
                    f"SELECT qhash, dhash, score, {column} FROM scores WHERE ranker = ? AND "
                    f"(qhash, dhash) IN (VALUES {values})", params).fetchall()
            for qh, dh, score, chk in rows:
                value = float(score) if isinstance(score, (int, float)) else math.nan
                if not math.isfinite(value) or (
                        check and (chk is None
                                   or bytes(chk) != row_check(fingerprint, qh, dh, value))):
                    rejected += 1
                    continue
                found[(bytes(qh), bytes(dh))] = value
        if rejected:
            self.rejected += rejected
            warnings.warn(f"score cache {self.path}: {rejected} cached score(s) for this ranker "
                          "were not finite or did not match their checksum (edited or "
                          "damaged); scoring those pairs again", stacklevel=2)
        if self._overlay is not None:
            missing = [k for k in keys if k not in found]
            if missing:
                found.update(self._overlay.lookup(fingerprint, missing))
        return found

    def store(self, fingerprint: str, items: Sequence[tuple[bytes, bytes, float]]) -> None:
        """Store one batch atomically (finite scores only)."""
        scores = np.fromiter((float(s) for _, _, s in items), dtype=np.float64,
                             count=len(items))
        self.store_columns(fingerprint, [bytes(q) for q, _, _ in items],
                           [bytes(d) for _, d, _ in items], scores)

    def store_columns(self, fingerprint: str, qhashes: Sequence[bytes],
                      dhashes: Sequence[bytes], scores: np.ndarray) -> None:
        """Store one batch atomically (finite scores only), given as columns: the query
        and document hashes and the scores of each row. The rows' checks are made per
        ranker (:func:`row_checks`) and the rows are inserted in key order."""
        scores = np.asarray(scores, dtype=np.float64)
        if len(qhashes) != len(scores) or len(dhashes) != len(scores):
            raise ValueError(f"{len(qhashes)} query and {len(dhashes)} document hashes for "
                             f"{len(scores)} scores")
        bad = int(np.count_nonzero(~np.isfinite(scores)))
        if bad:
            raise ScoringError(f"refusing to cache {bad} non-finite score(s) for "
                               f"{fingerprint}")
        if self._overlay is not None:
            self._overlay.store_columns(fingerprint, qhashes, dhashes, scores)
            return
        self._warn_if_removed()
        try:
            rid = self._ranker_id(fingerprint)
            checks = row_checks(fingerprint, qhashes, dhashes, scores)
            # in key order, the inserts walk the table's B-tree instead of jumping around it
            # (stable: a key given twice keeps its last score, as unsorted)
            order = key_order(qhashes, dhashes)
            columns = [qhashes, dhashes, scores.tolist(), checks]
            if len(order) > 1:
                pick = operator.itemgetter(*order)
                columns = [pick(column) for column in columns]
            with self._lock, self._transaction():
                insert_rows(self._conn, "INSERT OR REPLACE INTO scores VALUES ",
                            f"({int(rid)}, ?, ?, ?, ?)", columns)
        except sqlite3.OperationalError as exc:
            # a full disk (or a mount turned read-only) is not damage: the batch is rolled
            # back, every earlier batch stays, and the run stops with one line
            raise storage_error(self.path, exc) from None

    def _warn_if_removed(self) -> None:
        """Say once when the cache file was deleted or replaced while this run used it."""
        if self.path is None or self._gone_warned:
            return
        if self._stat_identity() != self._identity:
            self._gone_warned = True
            warnings.warn(f"score cache {self.path} was deleted or replaced during the run; "
                          "this run's scores will not be kept there (rerun to rebuild it)",
                          stacklevel=3)

    def holds_any(self, fingerprint: str) -> bool:
        """Whether any score is cached for ``fingerprint`` (in the file, or in a read-only
        cache's overlay for this run), registering the fingerprint as :meth:`lookup` does:
        a scorer that finds nothing skips hashing and looking up every pair up front."""
        rid = self._ranker_id(fingerprint)
        if self._overlay is not None and self._overlay.holds_any(fingerprint):
            return True
        return self._conn.execute("SELECT 1 FROM scores WHERE ranker = ? LIMIT 1",
                                  (rid,)).fetchone() is not None

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
        self._warn_if_removed()
        self._conn.close()
        if self._overlay is not None:
            self._overlay.close()

    def __enter__(self) -> ScoreCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _move_without_overwriting(source: Path, target: Path) -> None:
    """Rename ``source`` to ``target`` unless ``target`` exists (a hard link fails then)."""
    try:
        os.link(source, target)
    except FileExistsError:
        raise ConfigError(f"cannot move {source} aside: {target} appeared meanwhile") from None
    except OSError:   # file systems without hard links: check, then rename
        if target.exists():
            raise ConfigError(f"cannot move {source} aside: {target} exists") from None
        os.replace(source, target)
        return
    os.unlink(source)


def _in_the_way(folder: Path) -> str:
    """What stops ``folder`` from being made, in words: the nearest ancestor that exists as
    a name — a file, or a symbolic link that loops or points to nothing."""
    from abnirml.files.ownership import kind_of

    for candidate in (folder, *folder.parents):
        if not os.path.lexists(candidate):
            continue
        if candidate.is_symlink():
            try:
                os.stat(candidate)
            except OSError as exc:
                how = "loops" if exc.errno == errno.ELOOP else "points to nothing"
                return (f"{candidate} is a symbolic link that {how} "
                        f"({os.readlink(candidate)}), not a folder")
            if candidate.is_dir():
                continue         # a link to a folder: the loop is further down
        kind = kind_of(candidate)
        return f"{candidate} is {'a file' if kind == 'regular file' else 'a ' + str(kind)}, " \
            "not a folder"
    return f"{folder} cannot be made"


class _Transaction:
    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def __enter__(self) -> None:
        if self.conn.isolation_level is None:
            self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if self.conn.isolation_level is None:
            if exc_type is None:
                self.conn.execute("COMMIT")
            elif self.conn.in_transaction:   # SQLite may have rolled back already (disk full)
                self.conn.execute("ROLLBACK")
        else:
            (self.conn.rollback if exc_type else self.conn.commit)()


def _mismatch(kind: str, unknown: list[str], missing: list[str]) -> str:
    """``unknown table(s) a, b; no table c``: what a refused cache's tables or one table's
    columns hold that this version does not know, and what they lack."""
    parts = [f"unknown {kind}(s) {', '.join(unknown)}"] if unknown else []
    if missing:
        parts.append(f"no {kind} {', '.join(missing)}")
    return "; ".join(parts)
