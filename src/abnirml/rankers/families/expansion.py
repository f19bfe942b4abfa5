"""Document expansion sources and the on-disk store of what they generated.

An :class:`ExpansionSource` turns document texts into expansion texts (for doc2query: the
generated queries, joined by spaces). The ``doc2query`` ranker appends them to documents
before BM25; the DocT5Query manipulation reads one from its typed
``tmp.doct5query_source`` setting.
Generation is slow, so every expansion is stored in ``expansions.sqlite`` beside the score
cache, keyed by (generator fingerprint, hash of the document text): a document is expanded
once per generator configuration, across runs.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from abnirml.rankers.support.cache import default_cache_path, text_hash

_CHUNK = 400


@runtime_checkable
class ExpansionSource(Protocol):
    name: str
    fingerprint: str

    def expand(self, texts: Sequence[str]) -> list[str]:
        """One expansion text per input text, in order."""
        ...


def default_expansion_store_path() -> Path:
    return default_cache_path().with_name("expansions.sqlite")


class ExpansionStore:
    """Expansions by (generator fingerprint, text hash); ``path=None`` keeps them in memory."""

    def __init__(self, path: str | Path | None):
        if path is None:
            self._conn = sqlite3.connect(":memory:", isolation_level=None)
        else:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(path), timeout=60.0, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS expansions (generator TEXT NOT NULL, "
            "text_hash BLOB NOT NULL, expansion TEXT NOT NULL, "
            "PRIMARY KEY (generator, text_hash)) WITHOUT ROWID")

    def lookup(self, generator: str, texts: Sequence[str]) -> dict[str, str]:
        hashes = {text_hash(t): t for t in texts}
        keys = list(hashes)
        found: dict[str, str] = {}
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start:start + _CHUNK]
            marks = ",".join("?" for _ in chunk)
            rows = self._conn.execute(
                f"SELECT text_hash, expansion FROM expansions WHERE generator = ? "
                f"AND text_hash IN ({marks})", [generator, *chunk])
            for key, expansion in rows:
                found[hashes[bytes(key)]] = expansion
        return found

    def store(self, generator: str, items: Sequence[tuple[str, str]]) -> None:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            self._conn.executemany(
                "INSERT OR REPLACE INTO expansions VALUES (?, ?, ?)",
                [(generator, text_hash(text), expansion) for text, expansion in items])
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def count(self, generator: str) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM expansions WHERE generator = ?",
                                      (generator,)).fetchone()[0])

    def close(self) -> None:
        self._conn.close()
