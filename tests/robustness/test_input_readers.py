"""Input files named by the user are checked with ``stat`` before anything opens them: a
FIFO is one error that says what it is, never a hang or a misleading "not found"."""

from __future__ import annotations

import os

import pytest

from .fs_snapshot import Guard


@pytest.fixture
def cli(tmp_path, capsys):
    return Guard(tmp_path, capsys)


def test_a_fifo_as_the_doct5query_file_says_it_is_a_fifo(cli, tmp_path):
    fifo = tmp_path / "expansions.jsonl"
    os.mkfifo(fifo)
    outcome = cli("run", "--probe", "tmp:add-doct5query", "--ranker", "bm25", "--no-cache",
                  "--quiet", "--option", f"tmp.doct5query_file={fifo}", "--out",
                  tmp_path / "out", subprocess_timeout=120)
    assert "expected a regular file, found a named pipe (FIFO)" in outcome.error_line()


def test_a_fifo_as_stopwords_says_it_is_a_fifo(cli, tmp_path):
    fifo = tmp_path / "stop.txt"
    os.mkfifo(fifo)
    outcome = cli("run", "--probe", "mmp:tf:length", "--ranker", "bm25", "--no-cache",
                  "--quiet", "--stopwords", fifo, "--out", tmp_path / "out",
                  subprocess_timeout=120)
    assert "expected a stopword list file, found a named pipe (FIFO)" in outcome.error_line()
