"""The score cache never touches a user's file and never reuses a stale or edited score.
Bad input as one line is in ``test_bad_input.py``; hangs, resource limits, escaping and
determinism in ``test_limits.py``."""

from __future__ import annotations

import os
import sqlite3
import warnings
from pathlib import Path

import pytest

from abnirml.errors import ConfigError, ScoringError
from abnirml.rankers.support.cache import ScoreCache, row_check, text_hash
from tests.helpers import one_error_line


def _keys(n: int) -> list[tuple[bytes, bytes]]:
    return [(text_hash(f"q{i}"), text_hash(f"d{i}")) for i in range(n)]


# --- --cache PATH is never renamed unless it is a damaged score cache -----------------------

def test_cache_naming_a_data_file_stops_and_leaves_it_alone(tiny_dir, capsys):
    passages = tiny_dir / "passages.tsv"
    before = passages.read_bytes()
    line = one_error_line(capsys, "run", "--collection", str(tiny_dir), "--probe", "mmp:tf:length",
                          "--cache", str(passages), "--out", str(tiny_dir / "out"), "--quiet")
    assert "is not a SQLite score cache" in line
    assert passages.read_bytes() == before
    assert sorted(p.name for p in tiny_dir.iterdir() if "corrupt" in p.name) == []


def test_cache_naming_a_directory_stops_and_leaves_it_alone(tmp_path, capsys):
    line = one_error_line(capsys, "run", "--probe", "mmp:tf:length", "--cache", str(tmp_path),
                          "--out", str(tmp_path / "out"), "--quiet")
    assert "is a directory" in line
    assert tmp_path.is_dir() and not list(tmp_path.parent.glob(tmp_path.name + ".corrupt*"))
    line = one_error_line(capsys, "run", "--probe", "mmp:tf:length", "--cache", ".",
                          "--out", str(tmp_path / "out"), "--quiet")
    assert "--cache .: is a directory" in line


def test_cache_under_a_file_is_one_line(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    line = one_error_line(capsys, "run", "--probe", "mmp:tf:length", "--cache",
                          str(tmp_path / "afile" / "c.sqlite"), "--out", str(tmp_path / "o"),
                          "--quiet")
    assert "is a file, not a folder" in line or "is not a folder" in line


def test_cache_in_an_unwritable_folder_is_one_line(tmp_path, monkeypatch):
    import abnirml.rankers.support.cache as cache_module

    folder = tmp_path / "locked"
    folder.mkdir()
    real_access = os.access
    monkeypatch.setattr(cache_module.os, "access",
                        lambda p, mode: False if Path(p) == folder else real_access(p, mode))
    with pytest.raises(ConfigError, match=r"folder .*locked is not writable"):
        ScoreCache(folder / "c.sqlite")
    assert list(folder.iterdir()) == []


def test_unreadable_cache_is_refused_not_moved(tmp_path, monkeypatch):
    path = tmp_path / "c.sqlite"
    ScoreCache(path).close()
    real_open = Path.open

    def deny(self, *args, **kwargs):
        if self == path:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", deny)
    with pytest.raises(ConfigError, match="cannot read it"):
        ScoreCache(path)
    monkeypatch.undo()
    assert path.exists() and not list(tmp_path.glob("*.corrupt*"))


def test_read_only_cache_is_used_read_only(tmp_path, monkeypatch):
    import abnirml.rankers.support.cache as cache_module

    path = tmp_path / "c.sqlite"
    with ScoreCache(path) as cache:
        cache.store("r", [(q, d, float(i)) for i, (q, d) in enumerate(_keys(10))])
    before = path.read_bytes()
    real_access = os.access
    monkeypatch.setattr(cache_module.os, "access",
                        lambda p, mode: False if mode & os.W_OK else real_access(p, mode))
    with pytest.warns(UserWarning, match="read-only") as caught, ScoreCache(path) as cache:
        assert cache.read_only
        assert cache.lookup("r", _keys(12))[_keys(10)[3]] == 3.0
        cache.store("r", [(*_keys(12)[11], 7.5)])                 # kept in memory
        assert cache.lookup("r", _keys(12))[_keys(12)[11]] == 7.5
    assert len([w for w in caught if "read-only" in str(w.message)]) == 1
    assert path.read_bytes() == before
    assert not list(tmp_path.glob("*.corrupt*"))


def test_second_move_aside_never_overwrites_the_first(tmp_path):
    path = tmp_path / "c.sqlite"
    damaged = b"SQLite format 3\x00" + b"garbage" * 200
    names = []
    for round_ in range(3):
        path.write_bytes(damaged + bytes([round_]))
        with pytest.warns(UserWarning, match="damaged"), ScoreCache(path):
            pass
        names.append(sorted(p.name for p in tmp_path.glob("c.sqlite.corrupt*")
                            if not p.name.endswith(("-wal", "-shm"))))
    assert names[-1] == ["c.sqlite.corrupt", "c.sqlite.corrupt-1", "c.sqlite.corrupt-2"]
    assert (tmp_path / "c.sqlite.corrupt").read_bytes() == damaged + b"\x00"
    assert (tmp_path / "c.sqlite.corrupt-2").read_bytes() == damaged + b"\x02"


# --- cached values are trusted only when finite and matching their checksum ---------------

def test_edited_and_non_finite_cached_values_are_rescored(tmp_path):
    path = tmp_path / "c.sqlite"
    with ScoreCache(path) as cache:
        cache.store("r", [(q, d, float(i + 1)) for i, (q, d) in enumerate(_keys(4))])
    conn = sqlite3.connect(path)
    conn.execute("UPDATE scores SET score = -score WHERE qhash = ?", (_keys(4)[0][0],))
    conn.execute("UPDATE scores SET score = 9e999 WHERE qhash = ?", (_keys(4)[1][0],))
    conn.commit()
    conn.close()
    with pytest.warns(UserWarning, match="2 cached score"), ScoreCache(path) as cache:
        found = cache.lookup("r", _keys(4))
        assert found == {_keys(4)[2]: 3.0, _keys(4)[3]: 4.0}
        assert cache.rejected == 2
    with ScoreCache(path) as cache, pytest.raises(ScoringError, match="non-finite"):
        cache.store("r", [(*_keys(1)[0], float("inf"))])


def test_negative_zero_survives_the_cache_without_a_checksum_warning(tmp_path):
    """SQLite stores -0.0 as 0 (WMD of identical texts is -0.0): still a valid cached score."""
    path = tmp_path / "c.sqlite"
    with ScoreCache(path) as cache:
        cache.store("r", [(*_keys(1)[0], -0.0)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with ScoreCache(path) as cache:
            assert cache.lookup("r", _keys(1)) == {_keys(1)[0]: 0.0}
            assert cache.rejected == 0


def test_version_1_cache_gains_checksums_transparently(tmp_path):
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE rankers (id INTEGER PRIMARY KEY, fingerprint TEXT UNIQUE NOT NULL);
        CREATE TABLE scores (ranker INTEGER NOT NULL, qhash BLOB NOT NULL, dhash BLOB NOT NULL,
            score REAL NOT NULL, PRIMARY KEY (ranker, qhash, dhash)) WITHOUT ROWID;
        INSERT INTO meta VALUES ('schema', '1');
        INSERT INTO rankers VALUES (1, 'r');
    """)
    conn.executemany("INSERT INTO scores VALUES (1, ?, ?, ?)",
                     [(q, d, float(i)) for i, (q, d) in enumerate(_keys(5))])
    conn.commit()
    conn.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")        # no rejection warning: old rows are trusted
        with ScoreCache(path) as cache:
            assert cache.lookup("r", _keys(5)) == {k: float(i) for i, k in enumerate(_keys(5))}
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT qhash, dhash, score, chk FROM scores").fetchall()
    assert all(bytes(chk) == row_check("r", q, d, s) for q, d, s, chk in rows)
    assert conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()[0] == "2"


def test_cache_deleted_mid_run_is_warned(tmp_path):
    path = tmp_path / "c.sqlite"
    with (pytest.warns(UserWarning, match="deleted or replaced during the run"),
          ScoreCache(path) as cache):
        cache.store("r", [(*_keys(1)[0], 1.0)])
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
        cache.store("r", [(*_keys(2)[1], 2.0)])


# --- fingerprints name file contents, not paths -------------------------------------------

def test_editing_a_stopword_file_changes_the_fingerprint(tmp_path):
    from abnirml.rankers.registry import RankerEnv, build_ranker
    from abnirml.text.analyzer import Analyzer
    from tests.helpers import make_collection

    words = tmp_path / "stop.txt"
    words.write_text("the\na\n")
    collection = make_collection({"q": "the apple"}, {"d": "a red apple"}, {"q": {"d": 1}})

    def fingerprint() -> str:
        env = RankerEnv(collection=collection, analyzer=Analyzer.from_option(str(words)))
        return build_ranker("bm25", env).fingerprint

    first = fingerprint()
    assert fingerprint() == first
    words.write_text("the\na\nred\n")
    assert fingerprint() != first
