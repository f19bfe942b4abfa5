"""Input files named by the user: checked with ``stat`` before anything opens them (a FIFO
is one error that says what it is, never a hang or a misleading "not found"), and passages
read by one contract whether they are held in memory or read from disk.

``ABNIRML_STREAM_DOCS_BYTES=0`` sends every passages file to the on-disk reader (the one
used for files over 256 MiB); each hostile file must be refused with the same located
message on both paths, and each acceptable one read to the same documents.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from abnirml.data.collection import load_collection
from abnirml.errors import InputError

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


QUERIES = b"q1\tcheap garlic\n"
QRELS = b"q1 0 d1 1\n"


@pytest.fixture(params=["in-memory", "on-disk"])
def reader(request, monkeypatch):
    if request.param == "on-disk":
        monkeypatch.setenv("ABNIRML_STREAM_DOCS_BYTES", "0")
    else:
        monkeypatch.delenv("ABNIRML_STREAM_DOCS_BYTES", raising=False)
    return request.param


def _collection(root: Path, passages: bytes, name: str = "passages.tsv") -> Path:
    root.mkdir()
    (root / "queries.tsv").write_bytes(QUERIES)
    (root / "qrels.txt").write_bytes(QRELS)
    (root / name).write_bytes(passages)
    return root


def _docs(root: Path) -> dict[str, str]:
    return dict(load_collection(str(root)).docs.items())


def _refusal(root: Path) -> str:
    with pytest.raises(InputError) as err:
        load_collection(str(root))
    return str(err.value)


@pytest.mark.parametrize(("passages", "line", "says"), [
    (b"d1\tgarlic is cheap\rd2\tplant it in autumn\r", 1, "carriage return inside a line"),
    (b"\ndocno\ttext\nd1\tgarlic is cheap\n", 2, "looks like a column header"),
    (b"\n\n  \ndoc_id\tbody\nd1\tgarlic\n", 4, "looks like a column header"),
    (b"d1\tgarlic\nd2\tcheap \xff\n", 2, "invalid UTF-8"),
    (b"d1\tgarlic\nd2\tch\x00eap\n", 2, "NUL byte"),
    (b"d1\tgarlic\nd2 no tab\n", 2, "found no tab"),
    (b"d1\tgarlic\nd1\tagain\n", 2, "duplicate document id"),
    (b"d1\tgarlic\nd2\t  \n", 2, "empty document text"),
])
def test_a_bad_passages_file_is_refused_alike(tmp_path, reader, passages, line, says):
    message = _refusal(_collection(tmp_path / "c", passages))
    assert f"passages.tsv:{line}" in message, message
    assert says in message, message


def test_a_header_with_a_blank_line_before_it_is_not_a_passage(tmp_path, reader):
    """The first *row* is where a header sits, even after blank lines."""
    message = _refusal(_collection(tmp_path / "c", b"\n\ndocno\ttext\nd1\tgarlic\n"))
    assert "column header" in message


@pytest.mark.parametrize("passages", [
    b"d1\tgarlic is cheap\nd2\tplant it in autumn\n",
    b"\xef\xbb\xbfd1\tgarlic is cheap\r\n\r\nd2\tplant it in autumn",
    b"\nd1\tgarlic is cheap\n\nd2\tplant it in autumn\n\n",
])
def test_a_good_passages_file_reads_the_same_documents(tmp_path, reader, passages):
    assert _docs(_collection(tmp_path / "c", passages)) == {
        "d1": "garlic is cheap", "d2": "plant it in autumn"}


def test_jsonl_passages_are_read_alike(tmp_path, reader):
    root = _collection(tmp_path / "c", b'\n{"docno": "d1", "text": "garlic"}\n',
                       name="passages.jsonl")
    assert _docs(root) == {"d1": "garlic"}
    bad = _collection(tmp_path / "bad", b'{"docno": "d1", "text": "garlic"}\r{"docno": "d2"}',
                      name="passages.jsonl")
    assert "carriage return" in _refusal(bad)


# --- file names that are not UTF-8 ------------------------------------------------------

DEMO = Path(__file__).resolve().parents[2] / "src" / "abnirml" / "data" / "demo"


def _undecodable(folder: Path, stem: bytes) -> Path:
    """A path whose name holds byte 0xFF (Python sees it as the lone surrogate U+DCFF)."""
    import os

    path = Path(os.fsdecode(os.fsencode(folder) + b"/" + stem))
    assert "\udcff" in str(path)
    return path


def _run_cli(tmp_path: Path, *args: str) -> Path:
    from abnirml.cli import main

    out = tmp_path / "out"
    assert main(["run", *args, "--ranker", "bm25", "--probe", "tmp:shuffle-words",
                 "--no-cache", "--quiet", "--out", str(out)]) == 0
    return out


def _readable_outputs(out: Path) -> str:
    """run.json and report.md are valid UTF-8 (strict) and name the path with an escape."""
    import json

    run_json = json.loads((out / "run.json").read_bytes().decode("utf-8"))
    (out / "report.md").read_bytes().decode("utf-8")
    return json.dumps(run_json)


def test_a_collection_folder_named_in_latin1_runs_and_is_recorded(tmp_path):
    import shutil

    folder = _undecodable(tmp_path, b"d\xffmo")
    shutil.copytree(DEMO, folder)
    text = _readable_outputs(_run_cli(tmp_path, "--collection", str(folder)))
    assert "d\\\\xffmo" in text


def test_a_stopword_file_named_in_latin1_runs(tmp_path):
    stops = _undecodable(tmp_path, b"st\xffp.txt")
    stops.write_text("the\nof\nand\n", encoding="utf-8")
    text = _readable_outputs(_run_cli(tmp_path, "--stopwords", str(stops)))
    assert "st\\\\xffp.txt" in text


def test_a_candidate_run_named_in_latin1_runs(tmp_path):
    qids = sorted({line.split()[0] for line in (DEMO / "qrels.txt").read_text().splitlines()
                   if line.strip()})
    docnos = [line.split("\t")[0]
              for line in (DEMO / "passages.tsv").read_text().splitlines()[:15]]
    run_file = _undecodable(tmp_path, b"c\xffnds.run")
    run_file.write_text("".join(f"{q} Q0 {d} {r} {20 - r} t\n" for q in qids
                                for r, d in enumerate(docnos, 1)), encoding="utf-8")
    text = _readable_outputs(_run_cli(tmp_path, "--candidates", str(run_file)))
    assert "c\\\\xffnds.run" in text


# --- line-aligned corpora ---------------------------------------------------------------

def test_a_short_first_file_is_named_against_the_file_that_goes_on(tmp_path):
    """The source file itself being short once read "dev.src has fewer lines than dev.src"."""
    from abnirml.data.transfer import corpora, keep_all
    from tests.transfer_fixtures import write_jfleg

    write_jfleg(tmp_path, "dev", ["one ."], [["One .", "Two ."], ["One .", "Two ."]])
    with pytest.raises(InputError) as err:
        list(corpora.load_jfleg(tmp_path, keep_all))
    message = str(err.value)
    assert err.value.path.endswith("dev.src") and err.value.line == 2
    assert "ends after 1 line(s) but dev.ref0 goes on" in message, message
