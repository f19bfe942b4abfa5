import sqlite3
import threading

import pytest

from abnirml.errors import ConfigError
from abnirml.rankers.support.cache import ScoreCache, row_check, text_hash


def keys(n):
    return [(text_hash(f"q{i}"), text_hash(f"d{i}")) for i in range(n)]


def test_store_and_lookup_by_fingerprint(tmp_path):
    path = tmp_path / "c.sqlite"
    with ScoreCache(path) as cache:
        cache.store("rankerA", [(q, d, float(i)) for i, (q, d) in enumerate(keys(1000))])
        found = cache.lookup("rankerA", keys(1200))
        assert len(found) == 1000
        assert found[keys(5)[4]] == 4.0
        assert cache.lookup("rankerB", keys(10)) == {}   # other fingerprints never match
    with ScoreCache(path) as cache:                      # persisted
        assert cache.count("rankerA") == 1000


def test_in_memory_cache():
    with ScoreCache(None) as cache:
        cache.store("r", [(b"q", b"d", 1.5)])
        assert cache.lookup("r", [(b"q", b"d")]) == {(b"q", b"d"): 1.5}


def test_corrupted_cache_is_moved_aside_and_rebuilt(tmp_path):
    path = tmp_path / "c.sqlite"
    with ScoreCache(path) as cache:
        cache.store("r", [(b"q", b"d", 1.0)])
    # A SQLite header followed by garbage: a damaged cache, the only thing ever moved aside.
    path.write_bytes(b"SQLite format 3\x00" + b"this is not a database" * 100)
    with pytest.warns(UserWarning, match="damaged"), ScoreCache(path) as cache:
        assert cache.count() == 0
        cache.store("r", [(b"q", b"d", 2.0)])
    assert (tmp_path / "c.sqlite.corrupt").exists()


@pytest.mark.filterwarnings("ignore:score cache")
def test_truncated_cache_is_detected(tmp_path):
    path = tmp_path / "c.sqlite"
    with ScoreCache(path) as cache:
        cache.store("r", [(text_hash(str(i)), b"d", 1.0) for i in range(5000)])
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    try:
        with ScoreCache(path) as cache:
            found = cache.lookup("r", [(text_hash(str(i)), b"d") for i in range(5000)])
            assert all(v == 1.0 for v in found.values())
    except sqlite3.DatabaseError:  # pragma: no cover - must not escape
        pytest.fail("a truncated cache must be rebuilt, not crash")


def test_concurrent_writers_do_not_corrupt(tmp_path):
    path = tmp_path / "c.sqlite"
    ScoreCache(path).close()

    def writer(tag):
        with ScoreCache(path) as cache:
            for batch in range(20):
                cache.store(tag, [(text_hash(f"{tag}/{batch}/{i}"), b"d", float(i))
                                  for i in range(50)])

    threads = [threading.Thread(target=writer, args=(f"w{t}",)) for t in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with ScoreCache(path) as cache:
        assert cache.count() == 3 * 20 * 50


@pytest.mark.slow
def test_two_runs_sharing_a_cache_concurrently(tmp_path):
    import os
    import subprocess
    import sys

    cache = tmp_path / "shared.sqlite"
    env = {**os.environ, "ABNIRML_CACHE": str(cache)}
    commands = [[sys.executable, "-m", "abnirml", "run", "--ranker", "bm25", "--ranker", "ql",
                 "--probe", "mmp:*", "--probe", "tmp:shuffle-*", "--batch-size", "16",
                 "--quiet", "--no-effectiveness", "--out", str(tmp_path / f"out{i}")]
                for i in range(2)]
    procs = [subprocess.Popen(c, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for c in commands]
    outputs = [p.communicate(timeout=300) for p in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    first = (tmp_path / "out0" / "results.jsonl").read_bytes()
    assert first == (tmp_path / "out1" / "results.jsonl").read_bytes()
    conn = sqlite3.connect(cache)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


def test_a_locked_cache_is_waited_for_never_moved_aside(tmp_path, monkeypatch):
    # SQLite answers "database is locked" at once when two processes would deadlock opening
    # a fresh cache; that is contention, and the cache must stay where it is
    from abnirml.rankers.support import cache as cache_module
    path = tmp_path / "shared.sqlite"
    with ScoreCache(path) as cache:
        cache.store("bm25", [(b"q", b"d", 1.5)])
    real = ScoreCache._connect_checked
    calls = {"n": 0}

    def locked_twice(self):
        calls["n"] += 1
        if calls["n"] <= 2:
            raise sqlite3.OperationalError("database is locked")
        return real(self)

    monkeypatch.setattr(ScoreCache, "_connect_checked", locked_twice)
    with ScoreCache(path) as cache:
        assert cache.lookup("bm25", [(b"q", b"d")]) == {(b"q", b"d"): 1.5}
    assert calls["n"] == 3
    assert not list(tmp_path.glob("*.corrupt*"))

    def always_locked(self):
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(ScoreCache, "_connect_checked", always_locked)
    monkeypatch.setattr(cache_module, "BUSY_WAIT_S", 0.2)
    with pytest.raises(ConfigError, match="locked"):
        ScoreCache(path)
    assert path.exists() and not list(tmp_path.glob("*.corrupt*"))


def test_a_ranker_with_nothing_cached_is_stored_as_the_looked_up_path_stores_it(tmp_path):
    """With nothing cached for a ranker the scorer neither hashes nor looks up every pair up
    front (each batch's texts are hashed for its commit): the cache gets the same rows, the
    ranker is registered as a lookup registers it, and a rerun reuses every score."""
    import numpy as np

    from abnirml.evaluation.execution.scoring import Scorer
    from abnirml.rankers.base import RankerHints

    class Summing:
        name = fingerprint = "summing"
        hints = RankerHints(batch_size=8, sort_by_length=True, own_batches=True)

        def score(self, pairs):
            return np.array([len(q) * 1000.0 + sum(map(ord, d)) for q, d in pairs])

    pairs = [(f"q{i % 3}", f"document {i} " + "x" * (i % 7)) for i in range(50)]
    extra = (text_hash("another"), text_hash("text"), -1.0)
    rows, looked_up = {}, {}
    for warm in (False, True):
        with ScoreCache(tmp_path / f"{warm}.sqlite") as cache:
            if warm:      # one unrelated score: the scorer must look every pair up
                cache.store("summing", [extra])
            calls = []
            lookup = cache.lookup
            cache.lookup = lambda fp, keys, lookup=lookup, calls=calls: (  # type: ignore
                calls.append(len(keys)) or lookup(fp, keys))
            scorer = Scorer(cache, progress=False)
            scores = scorer.score(Summing(), pairs)
            assert scorer.scored == 50 and scores.tolist() == Summing().score(pairs).tolist()
            looked_up[warm] = list(calls)
            rows[warm] = set(cache._conn.execute(
                "SELECT rankers.fingerprint, qhash, dhash, score, chk FROM scores "
                "JOIN rankers ON rankers.id = scores.ranker").fetchall())
            again = Scorer(cache, progress=False)
            assert again.score(Summing(), pairs).tolist() == scores.tolist()
            assert (again.scored, again.reused) == (0, 50)
    assert looked_up == {False: [], True: [50]}
    rows[True].discard(("summing", *extra[:2], -1.0, row_check("summing", *extra)))
    assert len(rows[False]) == 50 and rows[False] == rows[True]
    with ScoreCache(tmp_path / "empty.sqlite") as cache:     # registered, as lookup does
        assert not cache.holds_any("summing")
        assert cache._conn.execute("SELECT fingerprint FROM rankers").fetchall() == [
            ("summing",)]
        cache.store("summing", [extra])
        assert cache.holds_any("summing")
