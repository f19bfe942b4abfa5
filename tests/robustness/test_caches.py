"""The score cache and other files abnirml writes in place of a name the user typed: only
regular files are created, moved or replaced, another application's database is never
changed, a full disk is not damage, a read-only cache is read. Every command runs between
two file-system snapshots (:mod:`.fs_snapshot`)."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import subprocess
from pathlib import Path

import pytest

from .fs_snapshot import Guard

RUN = ("run", "--probe", "mmp:tf:length", "--quiet")


@pytest.fixture
def cli(tmp_path, capsys):
    return Guard(tmp_path, capsys)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _device(tmp_path: Path) -> Path:
    """A character device to point at: a fresh /dev/null node as root, else /dev/null
    itself (which a user other than root cannot replace anyway)."""
    if os.geteuid() == 0:
        node = tmp_path / "null"
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        return node
    return Path("/dev/null")


def test_a_character_device_as_cache_is_one_error_and_stays_a_device(cli, tmp_path):
    device = _device(tmp_path)
    before = os.stat(device)
    line = cli(*RUN, "--cache", device, "--out", tmp_path / "out").error_line()
    assert "is a character device, not a regular file" in line
    after = os.stat(device)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


def test_a_fifo_as_cache_is_one_error_not_a_hang(cli, tmp_path):
    fifo = tmp_path / "scores.sqlite"
    os.mkfifo(fifo)
    outcome = cli(*RUN, "--cache", fifo, "--out", tmp_path / "out", subprocess_timeout=120)
    assert "is a named pipe (FIFO), not a regular file" in outcome.error_line()


@pytest.mark.parametrize("target", ["fifo", "device", "link"])
def test_export_triples_never_replaces_a_device_fifo_or_link(cli, tmp_path, target):
    if target == "fifo":
        out = tmp_path / "t.jsonl"
        os.mkfifo(out)
        expected = "is a named pipe (FIFO)"
    elif target == "device":
        out = _device(tmp_path)
        expected = "is a character device"
    else:
        real = tmp_path / "kept.jsonl"
        real.write_text(json.dumps({"query": "q", "positive": "a", "negative": "b",
                                    "probe": "axiom:tfc1"}) + "\n")
        out = tmp_path / "t.jsonl"
        out.symlink_to(real)
        expected = "is a symbolic link"
    outcome = cli("export-triples", out, "--probe", "axiom:tfc1", "--no-cache", "--quiet",
                  subprocess_timeout=120)
    assert expected in outcome.error_line()


def _other_app(path: Path, app_id: int = 0, table: str | None = "contacts") -> None:
    with sqlite3.connect(path) as conn:
        if table:
            conn.execute(f"CREATE TABLE {table} (name TEXT)")
            conn.execute(f"INSERT INTO {table} VALUES ('ada')")
        if app_id:
            conn.execute(f"PRAGMA application_id = {app_id}")
    conn.close()


@pytest.mark.parametrize("app_id, table", [(0, "contacts"), (0x12345678, None),
                                           (0x12345678, "scores")])
def test_another_applications_database_is_never_changed(cli, tmp_path, app_id, table):
    db = tmp_path / "app.db"
    _other_app(db, app_id, table)
    line = cli(*RUN, "--ranker", "bm25", "--cache", db, "--out", tmp_path / "out").error_line()
    assert "is another application's SQLite database" in line
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_an_empty_file_and_an_unmarked_abnirml_cache_are_taken_over_and_marked(cli, tmp_path):
    from abnirml.rankers.support.cache import APPLICATION_ID

    empty = tmp_path / "empty.sqlite"
    empty.touch()
    legacy = tmp_path / "legacy.sqlite"
    with sqlite3.connect(legacy) as conn:    # an abnirml cache from before the marker
        conn.executescript("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                           "CREATE TABLE rankers (id INTEGER PRIMARY KEY, fingerprint TEXT);"
                           "CREATE TABLE scores (ranker INTEGER, qhash BLOB, dhash BLOB, "
                           "score REAL, chk BLOB, PRIMARY KEY (ranker, qhash, dhash));")
    conn.close()
    for cache in (empty, legacy):
        out = tmp_path / f"out-{cache.stem}"
        assert cli(*RUN, "--ranker", "bm25", "--cache", cache, "--out", out,
                   may_change=[cache, out]).code == 0
        with sqlite3.connect(cache) as conn:
            assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
            assert conn.execute("SELECT COUNT(*) FROM scores").fetchone()[0] > 0


class _FullDisk:
    """A connection whose every write fails as SQLite fails on a full disk."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def __getattr__(self, name):
        return getattr(self._conn, name)

    def _check(self, sql: str) -> None:
        if sql.lstrip().upper().startswith(("INSERT", "UPDATE")):
            exc = sqlite3.OperationalError("database or disk is full")
            exc.sqlite_errorcode = 13              # SQLITE_FULL
            raise exc

    def execute(self, sql: str, *args):
        self._check(sql)
        return self._conn.execute(sql, *args)

    def executemany(self, sql: str, *args):
        self._check(sql)
        return self._conn.executemany(sql, *args)


def test_a_full_disk_is_one_line_and_leaves_the_cache_as_it_was(cli, tmp_path, monkeypatch):
    from abnirml.rankers.support.cache import ScoreCache

    cache = tmp_path / "scores.sqlite"
    assert cli(*RUN, "--ranker", "bm25", "--cache", cache, "--out", tmp_path / "a",
               may_change=[cache, tmp_path / "a"]).code == 0
    before = _sha(cache)
    connect = ScoreCache._connect_checked
    monkeypatch.setattr(ScoreCache, "_connect_checked",
                        lambda self: _FullDisk(connect(self)))
    # ql has nothing cached: its first write meets the full disk
    line = cli(*RUN, "--ranker", "ql", "--cache", cache, "--out", tmp_path / "b",
               may_change=[f"{cache.name}-wal", f"{cache.name}-shm"]).error_line()
    assert "the disk is full" in line and "left as it was" in line
    assert _sha(cache) == before
    assert not list(tmp_path.glob("*.corrupt*"))


def _mount_tmpfs(folder: Path, size: str = "4m") -> bool:
    if os.geteuid() != 0:
        return False
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True)
    return done.returncode == 0


def _unmount(folder: Path) -> None:
    """Lazily: a file the in-process command left open (SQLite keeps a handle until the
    connection is collected) would make a plain unmount fail with "target is busy"."""
    subprocess.run(["umount", "-l", str(folder)], check=True)


def test_a_really_full_disk_is_one_line_and_leaves_the_cache_as_it_was(cli, tmp_path):
    disk = tmp_path / "disk"
    if not _mount_tmpfs(disk):
        pytest.skip("needs root and mount(8) to make a small tmpfs")
    try:
        cache = disk / "scores.sqlite"
        assert cli(*RUN, "--ranker", "bm25", "--cache", cache, "--out", tmp_path / "a",
                   may_change=[cache, tmp_path / "a"]).code == 0
        before = _sha(cache)
        with (disk / "filler").open("wb") as filler:
            try:
                while True:
                    filler.write(b"\0" * (1 << 16))
                    filler.flush()
            except OSError:
                pass
        outcome = cli(*RUN, "--ranker", "ql", "--cache", cache, "--out", tmp_path / "b",
                      may_change=[f"disk/{cache.name}", "disk/filler"])
        assert "the disk is full" in outcome.error_line()
        assert _sha(cache) == before and not list(disk.glob("*.corrupt*"))
    finally:
        _unmount(disk)


def test_a_healthy_cache_on_a_read_only_mount_is_used_read_only(cli, tmp_path):
    disk = tmp_path / "disk"
    cache = disk / "scores.sqlite"
    mounted = _mount_tmpfs(disk)
    if not mounted and os.geteuid() == 0:
        pytest.skip("as root only a read-only mount makes a folder read-only; mount failed")
    if not mounted:
        disk.mkdir()
    try:
        assert cli(*RUN, "--ranker", "bm25", "--cache", cache, "--out", tmp_path / "a",
                   may_change=[cache, tmp_path / "a"]).code == 0
        if mounted:
            subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        else:
            cache.chmod(0o444)
            disk.chmod(0o555)
        outcome = cli(*RUN, "--ranker", "bm25", "--cache", cache, "--out", tmp_path / "b",
                      may_change=[tmp_path / "b"])
        assert outcome.code == 0, outcome.err
        assert "is read-only; using its scores" in outcome.err
        assert "0 computed, 185 cached" in outcome.out
    finally:
        if mounted:
            _unmount(disk)
        else:
            disk.chmod(0o755)


@pytest.mark.parametrize("kind", ["fifo", "other-app"])
def test_the_parse_store_beside_the_cache_leaves_a_fifo_or_another_database_alone(tmp_path,
                                                                                  kind):
    from abnirml.probes.parse_cache import ParseCache

    from .fs_snapshot import snapshot

    path = tmp_path / "parses.sqlite"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        _other_app(path)
    before = snapshot(tmp_path)
    with pytest.warns(UserWarning, match="parsing without a store"):
        got = ParseCache(path).get_or_build("k", ["a"], lambda texts: [1] * len(texts),
                                            lambda v: v, lambda v: v)
    assert got == {"a": 1}
    assert snapshot(tmp_path) == before


def _edited_cache(path: Path, statement: str) -> None:
    """A healthy score cache (made by a run) that ``statement`` gave a schema of another
    version: nothing in it is damaged, SQLite's integrity check passes."""
    conn = sqlite3.connect(path)
    conn.executescript(statement)
    conn.close()
    for side in ("-wal", "-shm"):
        Path(str(path) + side).unlink(missing_ok=True)


@pytest.mark.parametrize("statement, expected", [
    ("CREATE TABLE notes (text TEXT);", "unknown table(s) notes"),
    ("DROP TABLE meta;", "no table meta"),
    ("CREATE TABLE notes (text TEXT); DROP TABLE meta;", "unknown table(s) notes; no table meta"),
    ("ALTER TABLE rankers ADD COLUMN origin TEXT;", "table rankers has unknown column(s) origin"),
    ("ALTER TABLE scores DROP COLUMN chk; ALTER TABLE scores ADD COLUMN checksum BLOB;",
     "table scores has unknown column(s) checksum"),
    ("UPDATE meta SET value = '3' WHERE key = 'schema';",
     "schema version '3', and this abnirml knows versions up to 2"),
])
def test_a_healthy_cache_of_another_schema_is_refused_untouched(cli, tmp_path, statement,
                                                                 expected):
    cache, out = tmp_path / "scores.sqlite", tmp_path / "out"
    assert cli(*RUN, "--cache", cache, "--out", out, may_change=[cache, out]).code == 0
    _edited_cache(cache, statement)
    before = _sha(cache)
    line = cli(*RUN, "--cache", cache, "--out", out).error_line()     # changes nothing
    assert expected in line and "refusing to use or change it" in line
    assert _sha(cache) == before and not list(tmp_path.glob("*.corrupt*"))
