"""The scorer's host path: each text hashed once per process, row checks and key order made
per batch, commits on a thread of their own — the same rows, checks and keys as one row at
a time, so caches written before are still hits."""

from __future__ import annotations

import sqlite3
import struct
import threading

import numpy as np
import pytest

from abnirml.errors import ConfigError
from abnirml.evaluation.execution.score_commits import BackgroundCommits
from abnirml.evaluation.execution.scoring import Scorer
from abnirml.rankers.base import RankerHints
from abnirml.rankers.support import cache as cache_module
from abnirml.rankers.support.cache import (
    ScoreCache,
    key_order,
    row_check,
    row_checks,
    text_hash,
    text_hashes,
)

TEXTS = ["", "a", "ünïcödé", "\ud800 lone surrogate", "the same text", "the same text",
         "x" * 5000]


def test_text_hashes_are_the_cache_hashes_each_text_hashed_once(monkeypatch):
    monkeypatch.setattr(cache_module, "_hash_memo", {})
    hashed = []
    real = cache_module.hashlib.blake2b

    def counting(data=b"", **kw):
        hashed.append(data)
        return real(data, **kw)

    monkeypatch.setattr(cache_module.hashlib, "blake2b", counting)
    assert text_hashes(TEXTS) == [text_hash(t) for t in TEXTS]
    hashed.clear()
    assert text_hashes(iter(TEXTS[::-1])) == [text_hash(t) for t in TEXTS[::-1]]
    assert text_hashes([]) == []
    assert len(hashed) == len(TEXTS)          # only the comparison's own calls above
    monkeypatch.setattr(cache_module, "HASH_MEMO_LIMIT", 3)     # full: emptied, still right
    assert text_hashes([f"t{i}" for i in range(5)]) == [text_hash(f"t{i}") for i in range(5)]
    assert len(cache_module._hash_memo) == 5


def test_row_checks_match_the_one_row_check_for_every_score():
    rng = np.random.default_rng(3)
    q = [text_hash(f"q{i}") for i in range(40)]
    d = [text_hash(f"d{i}") for i in range(40)]
    scores = np.concatenate([rng.normal(size=34) * 1e3,
                             [0.0, -0.0, 1e-310, -1e308, 5e-324, 42.0]])
    for fingerprint in ("CrossEncoder[abc][output=logit,max_length=512]", "f" * 300, "é"):
        assert row_checks(fingerprint, q, d, scores) == [
            row_check(fingerprint, a, b, float(s)) for a, b, s in zip(q, d, scores, strict=True)]
    # -0.0 is stored as 0.0 by SQLite: its check is that of 0.0, as one row at a time
    assert row_checks("r", q[:1], d[:1], np.array([-0.0])) == [row_check("r", q[0], d[0], 0.0)]
    assert struct.pack("<d", -0.0 + 0.0) == struct.pack("<d", 0.0)


def test_key_order_is_the_stable_byte_order_of_the_keys():
    rng = np.random.default_rng(5)
    q = [bytes(rng.integers(0, 256, 16, dtype=np.uint8)) for _ in range(300)]
    d = [bytes(rng.integers(0, 256, 16, dtype=np.uint8)) for _ in range(300)]
    q[10:20] = [q[0]] * 10                         # shared query hashes
    d[50:53] = [d[40]] * 3
    q[50:53] = [q[40]] * 3                         # a key given four times
    q[7] = b"\x00" * 15 + b"\x01"                  # bytes that end in zeros or start so
    d[7] = b"\x01" + b"\x00" * 15
    expected = sorted(range(300), key=lambda i: (q[i], d[i]))
    assert key_order(q, d) == expected
    short = [b"ab", b"a", b"abc"]                  # not 16 bytes: the Python sort
    assert key_order(short, [b"x"] * 3) == [1, 0, 2]


def _rows(cache: ScoreCache) -> set[tuple]:
    return set(cache._conn.execute("SELECT rankers.fingerprint, qhash, dhash, score, chk FROM "
                                   "scores JOIN rankers ON rankers.id = scores.ranker"))


def test_columns_store_the_rows_one_row_at_a_time_stores(tmp_path):
    """The rows store_columns writes are those the row-at-a-time insert wrote (what caches
    made before hold), and a key given twice keeps its last score."""
    q = [text_hash(f"q{i % 4}") for i in range(30)]
    d = [text_hash(f"doc {i}") for i in range(30)]
    scores = np.linspace(-3, 3, 30)
    d[29], q[29] = d[3], q[3]               # the same key again, with another score
    with ScoreCache(tmp_path / "new.sqlite") as new:
        new.store_columns("r", q, d, scores)
        mine = _rows(new)
    conn = sqlite3.connect(tmp_path / "old.sqlite")      # as one row at a time
    conn.executescript("CREATE TABLE rankers (id INTEGER PRIMARY KEY, fingerprint TEXT); "
                       "CREATE TABLE scores (ranker INTEGER, qhash BLOB, dhash BLOB, score "
                       "REAL, chk BLOB, PRIMARY KEY (ranker, qhash, dhash));"
                       "INSERT INTO rankers VALUES (1, 'r');")
    for a, b, s in zip(q, d, scores.tolist(), strict=True):
        conn.execute("INSERT OR REPLACE INTO scores VALUES (1, ?, ?, ?, ?)",
                     (a, b, s, row_check("r", a, b, s)))
    old = set(conn.execute("SELECT 'r', qhash, dhash, score, chk FROM scores"))
    conn.close()
    assert mine == old and len(mine) == 29
    assert (("r", q[3], d[3], 3.0, row_check("r", q[3], d[3], 3.0)) in mine)
    with ScoreCache(tmp_path / "new.sqlite") as reopened:
        found = reopened.lookup("r", list(zip(q, d, strict=True)))
    assert found[(q[3], d[3])] == 3.0 and len(found) == 29


class _Slow:
    """Scores each pair by its document's length; raises Ctrl-C at batch ``fail_at``."""

    name = fingerprint = "slow"
    hints = RankerHints(batch_size=4, sort_by_length=False, own_batches=True)

    def __init__(self, fail_at: int | None = None):
        self.batches = 0
        self.fail_at = fail_at

    def score(self, pairs):
        self.batches += 1
        if self.batches == self.fail_at:
            raise KeyboardInterrupt
        return np.array([float(len(d)) for _, d in pairs])


PAIRS = [(f"q{i % 2}", "d" * (i + 1)) for i in range(18)]


def test_commits_run_off_the_scoring_thread_in_order(tmp_path):
    threads = []
    with ScoreCache(tmp_path / "c.sqlite") as cache:
        store = cache.store_columns

        def noting(*args):
            threads.append(threading.current_thread().name)
            return store(*args)

        cache.store_columns = noting                       # type: ignore[method-assign]
        scores = Scorer(cache, progress=False).score(_Slow(), PAIRS)
        assert scores.tolist() == [float(i + 1) for i in range(18)]
        assert cache.count() == 18
        assert threads == ["abnirml-commit"] * 5            # 4 + 4 + 4 + 4 + 2 pairs
        again = Scorer(cache, progress=False)
        assert again.score(_Slow(), PAIRS).tolist() == scores.tolist()
        assert again.reused == 18


def test_an_interrupted_scoring_still_commits_every_batch_scored(tmp_path):
    with ScoreCache(tmp_path / "c.sqlite") as cache:
        with pytest.raises(KeyboardInterrupt):
            Scorer(cache, progress=False).score(_Slow(fail_at=4), PAIRS)
        assert cache.count() == 12                  # three whole batches, nothing else


def test_a_failed_commit_stops_scoring_with_its_error_and_writes_nothing_after(tmp_path):
    with ScoreCache(tmp_path / "c.sqlite") as cache:
        store = cache.store_columns
        calls = []

        def full_after_two(*args):
            calls.append(1)
            if len(calls) > 2:
                raise ConfigError("--cache c.sqlite: the disk is full")
            return store(*args)

        cache.store_columns = full_after_two                 # type: ignore[method-assign]
        ranker = _Slow()
        with pytest.raises(ConfigError, match="the disk is full"):
            Scorer(cache, progress=False).score(ranker, PAIRS)
        assert cache.count() == 8
        assert len(calls) == 3           # nothing tried after the failed commit


def test_background_commits_wait_for_every_batch_handed_over(tmp_path):
    with ScoreCache(tmp_path / "c.sqlite") as cache:
        commits = BackgroundCommits(cache, "r", depth=1)
        for start in range(0, 18, 6):
            part = PAIRS[start:start + 6]
            commits.put(part, np.arange(start, start + 6, dtype=np.float64))
        commits.finish()
        assert commits.committed == 18 and cache.count("r") == 18
        commits.finish()                 # nothing handed over since: nothing to wait for


def test_a_batch_is_inserted_by_few_statements_of_many_rows(tmp_path, monkeypatch):
    """SQLite inserts a statement's rows by itself (the interpreter's lock released once per
    statement, not once per row as ``executemany`` takes it back): 30 rows in statements of
    7 are 5 statements, and the rows are those one statement per row writes — a key given
    twice across two statements keeps its last score."""
    monkeypatch.setattr(cache_module, "INSERT_ROWS", 7)
    q = [text_hash(f"q{i % 3}") for i in range(30)]
    d = [text_hash(f"doc {i}") for i in range(30)]
    scores = np.linspace(-2, 5, 30)
    q[25], d[25] = q[1], d[1]           # ordered by key: next to row 1, another statement
    with ScoreCache(tmp_path / "c.sqlite") as cache:
        statements: list[str] = []
        cache._conn.set_trace_callback(statements.append)
        cache.store_columns("r", q, d, scores)
        cache._conn.set_trace_callback(None)
        inserts = [s for s in statements if s.startswith("INSERT OR REPLACE INTO scores")]
        assert len(inserts) == 5
        rows = _rows(cache)
    expected = {("r", a, b, s, row_check("r", a, b, s))
                for a, b, s in zip(q, d, scores.tolist(), strict=True) if (a, b) != (q[1], d[1])}
    expected.add(("r", q[1], d[1], float(scores[25]), row_check("r", q[1], d[1],
                                                                 float(scores[25]))))
    assert rows == expected and len(rows) == 29


def test_statements_fit_an_old_sqlite_limit_on_bound_values(tmp_path, monkeypatch):
    """Where SQLite allows only 999 values per statement (builds before 3.32), a statement
    takes at most 999 // 4 rows."""
    q = [text_hash(f"q{i}") for i in range(600)]
    d = [text_hash("doc")] * 600
    with ScoreCache(tmp_path / "c.sqlite") as cache:
        cache._conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
        statements: list[str] = []
        cache._conn.set_trace_callback(statements.append)
        cache.store_columns("r", q, d, np.arange(600, dtype=np.float64))
        cache._conn.set_trace_callback(None)
        assert len([s for s in statements if "INTO scores" in s]) == 3    # 249 + 249 + 102
        assert cache.count("r") == 600
