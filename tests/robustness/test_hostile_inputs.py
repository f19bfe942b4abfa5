"""The hostile-input audit: inputs that once gave a traceback, an error naming an internal
file, silently wrong data or an overwritten user file. Each case: one located line, exit 2,
and every input file byte-for-byte as it was."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from abnirml.cli import main, parse_grade_bands
from abnirml.errors import ConfigError, InputError
from abnirml.registry import scoped_registrations
from abnirml.text.stopwords import load_stopwords
from tests.helpers import one_error_line


def digests(root: Path) -> dict[str, str]:
    """Every file under ``root`` (links not followed) → its SHA-1: 'no input was touched'."""
    return {str(p): hashlib.sha1(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


def run_error(capsys, collection: Path, *extra: str, out: Path | None = None) -> str:
    return one_error_line(capsys, "run", "--collection", str(collection), "--probe",
                          "mmp:tf:length", "--ranker", "bm25", "--out",
                          str(out or collection.parent / "out"), "--quiet", "--no-cache",
                          *extra)


# --- collection files ----------------------------------------------------------------------

def _nul_in_query_id(root: Path) -> None:
    (root / "queries.tsv").write_bytes(b"q\x001\tapple pie\nq2\triver bank\n")


def _nul_in_passage(root: Path) -> None:
    (root / "passages.tsv").write_bytes((root / "passages.tsv").read_bytes()
                                        .replace(b"a pie", b"a p\x00ie"))


def _passages_header_only(root: Path) -> None:
    (root / "passages.tsv").write_text("docno\ttext\n", encoding="utf-8")


def _passages_header_first(root: Path) -> None:
    (root / "passages.tsv").write_text("DocNo\tText\n" + (root / "passages.tsv").read_text())


def _queries_header_first(root: Path) -> None:
    (root / "queries.tsv").write_text("qid\tquery\n" + (root / "queries.tsv").read_text())


def _passages_other_ids(root: Path) -> None:
    (root / "passages.tsv").write_text("D1\tapple pie\nD2\ta pie\n", encoding="utf-8")


def _queries_is_directory(root: Path) -> None:
    (root / "queries.tsv").unlink()
    (root / "queries.tsv").mkdir()


def _qrels_dangling_link(root: Path) -> None:
    (root / "qrels.txt").unlink()
    (root / "qrels.txt").symlink_to(root / "moved-away.txt")


@pytest.mark.parametrize("damage, expected", [
    # a NUL in an id made it 'q\x001', and the error then blamed qrels.txt for 'q1'
    (_nul_in_query_id, "queries.tsv:1: NUL byte at column 2"),
    # a NUL inside a text was kept silently
    (_nul_in_passage, "passages.tsv:2: NUL byte at column 7"),
    # a header line was read as a passage called 'docno' (changing N and every BM25 score),
    # and alone it left no judged document with text: the run then failed on its own staging
    # file (.abnirml-staging-out-…/reranked/bm25.run: the run is empty)
    (_passages_header_only, "passages.tsv:1: the first line looks like a column header "
                            "('docno', 'text')"),
    (_passages_header_first, "passages.tsv:1: the first line looks like a column header"),
    (_queries_header_first, "queries.tsv:1: the first line looks like a column header "
                            "('qid', 'query')"),
    # no judged document had text, as above
    (_passages_other_ids, "qrels.txt: none of the 4 judged document ids (e.g. 'd1') is in "
                          "passages.tsv"),
    # both said 'missing required file', with the file right there
    (_queries_is_directory, "queries.tsv: expected a file, found a directory"),
    (_qrels_dangling_link, "qrels.txt: is a symbolic link to a missing file"),
], ids=["nul-in-id", "nul-in-text", "passages-header-only", "passages-header-first",
        "queries-header-first", "passages-other-ids", "queries-directory",
        "qrels-dangling-link"])
def test_damaged_collection_files_are_located(tiny_dir, capsys, damage: Callable[[Path], None],
                                             expected):
    damage(tiny_dir)
    before = digests(tiny_dir)
    line = run_error(capsys, tiny_dir)
    assert expected in line
    assert ".abnirml-staging" not in line
    assert digests(tiny_dir) == before


def test_passages_read_from_disk_refuse_a_nul_too(tiny_dir, capsys, monkeypatch):
    monkeypatch.setenv("ABNIRML_STREAM_DOCS_BYTES", "0")
    _nul_in_passage(tiny_dir)
    assert "passages.tsv:2: NUL byte at column 7" in run_error(capsys, tiny_dir)


def test_passages_read_from_disk_refuse_a_header_too(tiny_dir, capsys, monkeypatch):
    monkeypatch.setenv("ABNIRML_STREAM_DOCS_BYTES", "0")
    _passages_header_first(tiny_dir)
    assert "passages.tsv:1: the first line looks like a column header" in run_error(capsys,
                                                                                    tiny_dir)


def test_a_passage_whose_id_is_a_column_name_is_still_data(tiny_dir):
    from abnirml.data.trec import read_id_text_tsv

    path = tiny_dir / "passages.tsv"
    path.write_text("id\tthe id card was lost\ntext\ttext\n", encoding="utf-8")
    assert read_id_text_tsv(path, "document") == {"id": "the id card was lost", "text": "text"}


@pytest.mark.parametrize("value", ["abc", "1e9", "256MiB"])
def test_stream_threshold_that_is_not_a_number_is_one_line(tiny_dir, capsys, monkeypatch,
                                                           value):
    monkeypatch.setenv("ABNIRML_STREAM_DOCS_BYTES", value)   # was int(): a ValueError traceback
    line = run_error(capsys, tiny_dir)
    assert f"ABNIRML_STREAM_DOCS_BYTES={value!r} is not a whole number of bytes" in line


# --- candidate runs ------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["runs", "file"])
def test_candidate_run_naming_no_passage_is_one_line(tiny_dir, tmp_path, capsys, where):
    text = "q1 Q0 X1 1 2.0 t\nq1 Q0 X2 2 1.0 t\nq2 Q0 X3 1 3.0 t\n"
    if where == "runs":
        (tiny_dir / "runs").mkdir()
        (tiny_dir / "runs" / "bm25.run").write_text(text, encoding="utf-8")
        extra: tuple[str, ...] = ()
    else:
        (tmp_path / "cand.run").write_text(text, encoding="utf-8")
        extra = ("--candidates", str(tmp_path / "cand.run"))
    line = run_error(capsys, tiny_dir, *extra)
    assert "none of the candidate documents of run" in line and "(3 looked up)" in line
    assert ".abnirml-staging" not in line
    if where == "file":
        assert f"{tmp_path / 'cand.run'}: " in line


# --- stopword lists ------------------------------------------------------------------------

@pytest.mark.parametrize("content, expected", [
    (b"", "holds no words"),                                   # was: silently stop nothing
    (b"# only a comment\n\n", "holds no words"),
    (b"the of\nand\n", ":1: expected one word per line, found 2"),   # was: 'the of' kept
    (b"the\x00\nof\n", ":1: NUL byte at column 4"),                # was: 'the\x00' kept
    (b"the\ncaf\xe9\n", ":2: invalid UTF-8 byte at column 4"),     # was: no line number
    (b"the\rof\rand\r", ":1: carriage return inside a line"),   # was: "found 3" words
], ids=["empty", "comments-only", "two-words", "nul", "latin-1", "cr-only"])
def test_bad_stopword_files_are_located(tmp_path, capsys, tiny_dir, content, expected):
    path = tmp_path / "stops.txt"
    path.write_bytes(content)
    with pytest.raises(InputError) as info:
        load_stopwords(str(path))
    assert expected in str(info.value) and str(path) in str(info.value)
    assert expected in run_error(capsys, tiny_dir, "--stopwords", str(path))
    assert path.read_bytes() == content


def test_stopword_file_with_bom_keeps_its_first_word(tmp_path):
    path = tmp_path / "stops.txt"
    path.write_bytes(b"\xef\xbb\xbfthe\r\nof\r\n")    # was: '\ufeffthe', which stops nothing
    assert load_stopwords(str(path)) == frozenset({"the", "of"})


def test_stopword_directory_is_named_as_such(tmp_path):
    with pytest.raises(InputError, match="expected a stopword list file, found a directory"):
        load_stopwords(str(tmp_path))


# --- option values -------------------------------------------------------------------------

def test_grade_band_named_twice_is_refused():
    with pytest.raises(ConfigError, match="band name 'a' is given twice"):
        parse_grade_bands("a=0-1,a=2-3")


@pytest.mark.parametrize("text, bands", [
    ("spam=-2--1,rest=0-3", (("spam", -2, -1), ("rest", 0, 3))),   # was: not NAME=LOW-HIGH
    ("low=-1-0", (("low", -1, 0),)),
    ("non-relevant=0-1,relevant=2-3", (("non-relevant", 0, 1), ("relevant", 2, 3))),
])
def test_grade_bands_read_negative_grades(text, bands):
    assert parse_grade_bands(text) == bands


@pytest.mark.parametrize("text", ["a=1-", "a=-", "a=--1", "a=1-x", "a=0-1-2"])
def test_malformed_grade_bands_stay_refused(text):
    with pytest.raises(ConfigError, match="is not NAME=LOW-HIGH"):
        parse_grade_bands(text)


# --- output targets ------------------------------------------------------------------------

def test_out_as_dangling_link_is_one_line(tiny_dir, tmp_path, capsys):
    link = tmp_path / "out-link"
    link.symlink_to(tmp_path / "gone")     # was: '.abnirml-staging-…: Not a directory'
    line = run_error(capsys, tiny_dir, out=link)
    assert "is a symbolic link to a missing folder" in line
    assert link.is_symlink() and not (tmp_path / "gone").exists()


def test_out_under_a_file_names_the_file(tiny_dir, tmp_path, capsys):
    blocker = tmp_path / "notes.txt"
    blocker.write_text("mine", encoding="utf-8")
    line = run_error(capsys, tiny_dir, out=blocker / "sub")    # was: 'notes.txt: File exists'
    assert f"{blocker} is a file, not a folder" in line
    assert blocker.read_text(encoding="utf-8") == "mine"


def _triples(tiny_dir: Path, out: Path) -> list[str]:
    return ["export-triples", str(out), "--probe", "mmp:tf:length", "--collection",
            str(tiny_dir), "--quiet", "--no-cache"]


@pytest.mark.parametrize("target", ["user-notes", "collection-file"])
def test_export_triples_never_overwrites_a_users_file(tiny_dir, tmp_path, capsys, target):
    out = tmp_path / "notes.jsonl" if target == "user-notes" else tiny_dir / "queries.tsv"
    if target == "user-notes":
        out.write_text('{"my": "own data"}\n', encoding="utf-8")
    before = digests(tmp_path)
    line = one_error_line(capsys, *_triples(tiny_dir, out))   # was: replaced, exit 0
    assert f"{out}: exists and is not a triples file written by export-triples" in line
    assert digests(tmp_path) == before


def test_export_triples_replaces_its_own_earlier_output(tmp_path, capsys):
    out = tmp_path / "triples.jsonl"
    args = ["export-triples", str(out), "--probe", "mmp:relevance:length", "--quiet",
            "--no-cache"]
    assert main(args) == 0
    first = out.read_text(encoding="utf-8")
    assert first and all({"query", "positive", "negative", "probe"} <= json.loads(line).keys()
                         for line in first.splitlines())
    out.write_text("", encoding="utf-8")        # an empty file may be replaced as well
    assert main(args) == 0
    assert out.read_text(encoding="utf-8") == first
    capsys.readouterr()


@pytest.mark.parametrize("kind, expected", [
    ("directory", "is a directory; expected the name of a .jsonl file"),
    ("under-file", "is a file, not a folder"),
    ("dangling-link", "is a symbolic link to a missing file"),
])
def test_export_triples_bad_targets_are_one_line(tiny_dir, tmp_path, capsys, kind, expected):
    if kind == "directory":
        out = tmp_path / "folder"
        out.mkdir()
    elif kind == "under-file":
        (tmp_path / "blocker").write_text("mine", encoding="utf-8")
        out = tmp_path / "blocker" / "t.jsonl"
    else:
        out = tmp_path / "link.jsonl"
        out.symlink_to(tmp_path / "gone.jsonl")
    before = digests(tmp_path)
    assert expected in one_error_line(capsys, *_triples(tiny_dir, out))
    assert digests(tmp_path) == before
    assert not list(tmp_path.glob(".*.jsonl.*"))   # no temporary file left behind


# --- score cache ---------------------------------------------------------------------------

def test_cache_as_dangling_link_is_refused_untouched(tiny_dir, tmp_path, capsys):
    link = tmp_path / "scores.sqlite"
    link.symlink_to(tmp_path / "elsewhere" / "scores.sqlite")
    # was: the link moved to scores.sqlite.corrupt, then a sqlite3.OperationalError traceback
    line = one_error_line(capsys, "run", "--collection", str(tiny_dir), "--probe",
                          "mmp:tf:length", "--ranker", "bm25", "--out", str(tmp_path / "out"),
                          "--quiet", "--cache", str(link))
    assert "is a symbolic link to a missing file" in line
    assert link.is_symlink() and os.readlink(link) == str(tmp_path / "elsewhere" / "scores.sqlite")
    assert not list(tmp_path.glob("scores.sqlite.corrupt*"))


# --- compare --out -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    assert main(["run", "--collection", "demo", "--ranker", "bm25", "--ranker", "ql",
                 "--probe", "mmp:relevance:*", "--out", str(root / "run"), "--quiet",
                 "--no-cache"]) == 0
    return root / "run"


def _compare(run: Path, out: Path) -> list[str]:
    return ["compare", str(run), "--a", "bm25", "--b", "ql", "--out", str(out)]


@pytest.mark.parametrize("name", ["compare.md", "compare.csv"])
def test_compare_out_never_overwrites_a_users_file(two_runs, tmp_path, capsys, name):
    (tmp_path / name).write_text("my own notes\n", encoding="utf-8")
    before = digests(tmp_path)
    line = one_error_line(capsys, *_compare(two_runs, tmp_path))   # was: replaced, exit 0
    assert f"{name} was edited or not written by abnirml" in line
    assert digests(tmp_path) == before


def test_compare_out_replaces_its_own_files_and_names_a_blocking_file(two_runs, tmp_path,
                                                                      capsys):
    out = tmp_path / "cmp"
    assert main(_compare(two_runs, out)) == 0
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    assert sorted(first) == [".abnirml-manifest.json", "compare.csv", "compare.md"]
    assert main(_compare(two_runs, out)) == 0
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first
    capsys.readouterr()
    blocker = tmp_path / "notes.txt"
    blocker.write_text("mine", encoding="utf-8")
    assert "is a file, not a directory" in one_error_line(capsys, *_compare(two_runs, blocker))
    assert blocker.read_text(encoding="utf-8") == "mine"


# --- --pairs files -------------------------------------------------------------------------

@pytest.mark.parametrize("name, content, expected", [
    # a header alone ran an empty probe and exited 0
    ("header.tsv", "doc1\tdoc2\n", "header.tsv: no pairs (the file holds a header or blank "
                                   "lines only)"),
    ("blank.jsonl", "\n\n", "blank.jsonl: no pairs"),
    # two pairs under one id were both kept, sharing the id that seeds their query choice
    ("dup.tsv", "id\tdoc1\tdoc2\n7\ta b\tc d\n7\te f\tg h\n",
     "dup.tsv:3: duplicate pair id '7' (first on line 2)"),
    ("dup.jsonl", '{"id": 7, "doc1": "a", "doc2": "b"}\n{"id": "7", "doc1": "c", "doc2": "d"}\n',
     "dup.jsonl:2: duplicate pair id '7' (first on line 1)"),
    ("nul.tsv", "doc1\tdoc2\na\x00b\tc d\n", "nul.tsv:2: NUL byte at column 2"),
])
def test_bad_pairs_files_are_located(tiny_dir, tmp_path, capsys, name, content, expected):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    probe = f"dtp:hostile-{name.replace('.', '-')}"
    with scoped_registrations():   # later 'all' runs must not see the --pairs probe
        line = run_error(capsys, tiny_dir, "--pairs", str(path), "--name", probe, "--probe",
                         probe)
    assert expected in line
    assert path.read_text(encoding="utf-8") == content


def test_pairs_directory_is_named_as_such(tiny_dir, tmp_path, capsys):
    line = run_error(capsys, tiny_dir, "--pairs", str(tmp_path))
    assert f"{tmp_path}: expected a pairs file, found a directory" in line


def test_aligned_transfer_files_refuse_a_nul(tmp_path):
    from abnirml.data.pairs import read_aligned

    (tmp_path / "a.txt").write_bytes(b"one\ntw\x00o\n")
    (tmp_path / "b.txt").write_bytes(b"uno\ndos\n")
    with pytest.raises(InputError, match=r"a.txt:2: NUL byte at column 3"):
        list(read_aligned([tmp_path / "a.txt", tmp_path / "b.txt"]))


# --- rank-origin --out and masking --out ---------------------------------------------------

@pytest.mark.parametrize("name", ["rank_origin.csv", "rank_origin.html", "rank_origin_all.png"])
def test_rank_origin_out_never_overwrites_a_users_file(two_runs, tmp_path, capsys, name):
    reranked = two_runs / "reranked"
    (tmp_path / name).write_text("my own notes\n", encoding="utf-8")
    before = digests(tmp_path)
    line = one_error_line(capsys, "rank-origin", str(reranked / "candidates.run"),
                          str(reranked / "bm25.run"), "--out", str(tmp_path))   # was: replaced
    assert f"holds a {name} that abnirml did not write" in line
    assert digests(tmp_path) == before


def test_rank_origin_never_writes_over_its_own_input(two_runs, tmp_path, capsys):
    reference = tmp_path / "reranked.run"       # the reference run lives where --out points
    reference.write_bytes((two_runs / "reranked" / "candidates.run").read_bytes())
    before = digests(tmp_path)
    line = one_error_line(capsys, "rank-origin", str(reference), "--rerank", "bm25",
                          "--out", str(tmp_path), "--no-cache", "--quiet")
    assert "writing reranked.run would replace an input of this command" in line
    assert digests(tmp_path) == before


def test_rank_origin_replaces_its_own_files(two_runs, tmp_path, capsys):
    reranked = two_runs / "reranked"
    args = ["rank-origin", str(reranked / "candidates.run"), str(reranked / "bm25.run"),
            "--out", str(tmp_path / "ro")]
    assert main(args) == 0
    first = digests(tmp_path)
    assert main(args) == 0
    assert digests(tmp_path) == first
    capsys.readouterr()


@pytest.mark.parametrize("name", ["masking.md", "masking.csv"])
def test_masking_out_never_overwrites_a_users_file(tiny_dir, tmp_path, capsys, name):
    out = tmp_path / "m"
    out.mkdir()
    (out / name).write_text("my own notes\n", encoding="utf-8")
    line = one_error_line(capsys, "masking", "--collection", str(tiny_dir), "--out", str(out),
                          "--no-cache", "--quiet")                              # was: replaced
    assert f"holds a {name} that abnirml did not write" in line
    assert (out / name).read_text(encoding="utf-8") == "my own notes\n"
    assert main(["masking", "--collection", str(tiny_dir), "--out", str(tmp_path / "m2"),
                 "--no-cache", "--quiet"]) == 0
    assert main(["masking", "--collection", str(tiny_dir), "--out", str(tmp_path / "m2"),
                 "--no-cache", "--quiet"]) == 0      # its own files are replaced
    capsys.readouterr()
