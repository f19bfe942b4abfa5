"""Stored token ids read back in bulk: one statement per few thousand texts, values handed
back concatenated, the same ids as reading row by row — from files this version wrote and
from files written a row at a time by earlier ones."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from abnirml.rankers.support import side_store
from abnirml.rankers.support.cache import text_hash
from abnirml.rankers.support.token_store import TokenDisk, TokenStore

TEXTS = ["", "a", "ünïcödé", "zero ids", "long " * 3000, "no tokens", "b"]
IDS = [[101], [0, 1, 2], [256, 65536, 2**31 - 1], [0, 0, 0, 0], list(range(3000)), [], [7]]


def _encode_from(table: dict[str, list[int]]):
    calls: list[list[str]] = []

    def encode(texts: list[str]) -> list[list[int]]:
        calls.append(list(texts))
        return [table[t] for t in texts]

    return encode, calls


def _statements(disk: TokenDisk) -> list[str]:
    conn = disk._store._connection()
    assert conn is not None
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    return seen


def test_ids_read_back_in_bulk_equal_the_ids_stored(tmp_path, monkeypatch):
    """Ids with zero bytes, a text of no tokens, texts past one statement's keys."""
    monkeypatch.setattr(side_store, "_BULK_KEYS", 3)
    encode, calls = _encode_from(dict(zip(TEXTS, IDS, strict=True)))
    first = TokenStore("fp", encode, TokenDisk(tmp_path / "tokens.sqlite"))
    first.view(TEXTS)
    assert calls == [TEXTS]
    disk = TokenDisk(tmp_path / "tokens.sqlite")
    again = TokenStore("fp", encode, disk)
    statements = _statements(disk)
    view = again.view([*TEXTS[::-1], "a"])
    assert calls == [TEXTS]                                   # nothing tokenized again
    assert [view.ids(i) for i in range(len(TEXTS) + 1)] == [*IDS[::-1], IDS[1]]
    assert (again.loaded, again.tokenized) == (len(TEXTS), 0)
    selects = [s for s in statements if s.startswith("WITH RECURSIVE")]
    assert len(selects) == 3                                  # 7 texts, 3 per statement


def test_a_file_written_a_row_at_a_time_is_read(tmp_path):
    """The table layout is the one earlier versions wrote, one row per text: such a file is
    read as it is (nothing migrated, nothing rewritten)."""
    path = tmp_path / "tokens.sqlite"
    TokenDisk(path).save("fp", {})                       # an empty store, made by abnirml
    conn = sqlite3.connect(path)
    for text, ids in zip(TEXTS, IDS, strict=True):
        conn.execute("INSERT INTO tokens VALUES (?, ?, ?)",
                     ("fp", text_hash(text), np.asarray(ids, dtype="<i4").tobytes()))
    conn.commit()
    conn.close()
    before = path.read_bytes()
    encode, calls = _encode_from({})
    store = TokenStore("fp", encode, TokenDisk(path))
    view = store.view(TEXTS)
    assert calls == [] and [view.ids(i) for i in range(len(TEXTS))] == IDS
    assert path.read_bytes() == before


def test_values_that_cannot_be_ids_are_tokenized_again(tmp_path):
    """A value of another type, or whose length is not a whole number of int32 ids, is left
    out as if absent (so that text is tokenized again and its row replaced)."""
    path = tmp_path / "tokens.sqlite"
    TokenDisk(path).save("fp", {"kept": np.asarray([5, 6], dtype="<i4").tobytes()})
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO tokens VALUES ('fp', ?, 'text, not ids')", (text_hash("a"),))
    conn.execute("INSERT INTO tokens VALUES ('fp', ?, x'0102')", (text_hash("b"),))
    conn.commit()
    conn.close()
    encode, calls = _encode_from({"a": [1], "b": [2]})
    store = TokenStore("fp", encode, TokenDisk(path))
    view = store.view(["a", "kept", "b"])
    assert calls == [["a", "b"]]
    assert [view.ids(i) for i in range(3)] == [[1], [5, 6], [2]]
    assert TokenStore("fp", encode, TokenDisk(path)).view(["b"]).ids(0) == [2]


def test_values_too_large_for_one_statement_are_read_row_by_row(tmp_path):
    """Past SQLite's limit on one value's size the concatenated read cannot serve; those
    texts are read a row at a time instead, with the same result."""
    encode, _ = _encode_from(dict(zip(TEXTS, IDS, strict=True)))
    TokenStore("fp", encode, TokenDisk(tmp_path / "tokens.sqlite")).view(TEXTS)
    disk = TokenDisk(tmp_path / "tokens.sqlite")
    conn = disk._store._connection()
    assert conn is not None
    # room for the largest value (12,000 bytes) but not for all of them (12,048) at once
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 12_010)
    statements = _statements(disk)
    encode, calls = _encode_from({})
    view = TokenStore("fp", encode, disk).view(TEXTS)
    assert calls == [] and [view.ids(i) for i in range(len(TEXTS))] == IDS
    assert any(s.startswith("SELECT thash, value") for s in statements)     # row by row


@pytest.mark.parametrize("namespace", ["fp", "other"])
def test_bulk_lookup_returns_each_found_key_once_with_its_position(tmp_path, namespace):
    store = side_store.SideStore(tmp_path / "s.sqlite", table="tokens", label="token store",
                                 fallback="without", value_type="BLOB")
    values = {f"t{i}": bytes([i % 3]) * (4 * i) for i in range(20)}
    store.save_raw("fp", values)
    asked = [text_hash(f"t{i}") for i in (19, 3, 4, 0, 25, 7)]
    found = store.lookup_blobs(namespace, asked, multiple_of=4)
    if namespace == "other":
        assert len(found.positions) == 0 and found.data == b""
        return
    assert sorted(found.positions.tolist()) == [0, 1, 2, 3, 5]       # t25 was never stored
    pieces = {int(p): found.data[s:s + n] for p, s, n in zip(
        found.positions.tolist(), found.starts.tolist(), found.lengths.tolist(), strict=True)}
    assert pieces == {0: values["t19"], 1: values["t3"], 2: values["t4"], 3: values["t0"],
                      5: values["t7"]}
    # read in the table's key order (one stretch of the B-tree), not the request's
    keys = [asked[p] for p in found.positions.tolist()]
    assert keys == sorted(keys)


def test_bulk_lookup_over_several_statements_maps_every_value_to_its_key(tmp_path,
                                                                         monkeypatch):
    monkeypatch.setattr(side_store, "_BULK_KEYS", 7)
    store = side_store.SideStore(tmp_path / "s.sqlite", table="tokens", label="token store",
                                 fallback="without", value_type="BLOB")
    values = {f"t{i}": i.to_bytes(4, "little") * (1 + i % 5) for i in range(60)}
    store.save_raw("fp", {t: v for t, v in values.items() if t != "t13"})
    asked_texts = [f"t{i}" for i in range(59, -1, -1)]
    found = store.lookup_blobs("fp", [text_hash(t) for t in asked_texts], multiple_of=4)
    got = {asked_texts[p]: found.data[s:s + n] for p, s, n in zip(
        found.positions.tolist(), found.starts.tolist(), found.lengths.tolist(), strict=True)}
    assert got == {t: v for t, v in values.items() if t != "t13"}


def test_texts_two_threads_tokenize_at_once_are_stored_and_counted_once():
    """Two chunks prepared at the same time may share texts (a query): both threads
    tokenize it, one copy is kept, and it counts once."""
    import threading

    inside = threading.Barrier(2, timeout=10)
    table = {f"t{i}": [i, i + 1] for i in range(10)}

    def encode(texts: list[str]) -> list[list[int]]:
        inside.wait()                       # both threads tokenize before either stores
        return [table[t] for t in texts]

    store = TokenStore("fp", encode)
    first, second = ["t0", "t1", "t2", "t3"], ["t2", "t3", "t4"]
    views = {}
    threads = [threading.Thread(target=lambda k=k, texts=texts: views.__setitem__(
        k, store.view(texts))) for k, texts in (("a", first), ("b", second))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert len(store) == 5 and store.tokenized == 5 and store.loaded == 0
    assert [views["a"].ids(i) for i in range(4)] == [table[t] for t in first]
    assert [views["b"].ids(i) for i in range(3)] == [table[t] for t in second]
