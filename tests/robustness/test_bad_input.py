"""Every bad input is one clear line and exit 2 — no traceback, no
silent mis-parse. One case per bullet of the issue."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from abnirml.cli import main
from abnirml.errors import ConfigError, InputError
from abnirml.strict_numbers import strict_float, strict_int
from tests.helpers import one_error_line, write_collection_dir


def run_line(capsys, tiny_dir: Path, *extra: str) -> str:
    return one_error_line(capsys, "run", "--collection", str(tiny_dir), "--probe",
                          "mmp:tf:length", "--ranker", "bm25", "--out", str(tiny_dir / "out"),
                          "--quiet", *extra)


# --- one shared strict number reader -------------------------------------------------------

@pytest.mark.parametrize("text", ["1_0", "３", "1_000", " 5", "0x10", "", "+", "1e", "٣"])
def test_python_style_numbers_are_refused(text):
    with pytest.raises(ValueError):
        strict_int(text)
    with pytest.raises(ValueError):
        strict_float(text)


def test_plain_numbers_are_read_and_non_finite_only_when_asked():
    assert strict_int("-12") == -12 and strict_float("2.5e-3") == 0.0025
    assert strict_float(".5") == 0.5 and strict_float("-3") == -3.0
    for text in ("nan", "inf", "-Infinity", "1e999"):
        with pytest.raises(ValueError):
            strict_float(text)
    assert strict_float("-inf", finite=False) == float("-inf")
    with pytest.raises(ValueError, match="more than 30 digits"):
        strict_int("9" * 5000)


@pytest.mark.parametrize("args, expected", [
    (("--delta", "1_0"), "'1_0' is not a number"),
    (("--delta", "nan"), "'nan' is not a number"),
    (("--mmp-tolerance", "abc"), "--mmp-tolerance: 'abc' is not a number"),
    (("--mmp-tolerance", "nan"), "--mmp-tolerance: 'nan' is not a number"),
    (("--mmp-tolerance", "lenght=2"), "unknown control 'lenght' (did you mean length"),
    (("--mmp-tolerance", "-1"), "must be ≥ 0"),
    (("--grade-bands", "a=1-0"), "invalid band 'a=1-0'"),
    (("--grade-bands", "all=0-3"), "invalid band 'all=0-3'"),
    (("--grade-bands", "=0-1"), "invalid band '=0-1'"),
    (("--grade-bands", "a=x-y"), "'a=x-y' is not NAME=LOW-HIGH"),
    (("--grade-bands", "a=0-1,"), "'' is not NAME=LOW-HIGH"),
    (("--grade-bands", "a=0-１"), "is not NAME=LOW-HIGH"),
    (("--examples", "-1"), "--examples must be ≥ 0, got -1"),
    (("--ranker", "bm25+k1=-1"), "k1=-1 must be >= 0"),
    (("--ranker", "bm25+b=2"), "b=2 must be in [0, 1]"),
    (("--ranker", "bm25+b=-0.5"), "b=-0.5 must be in [0, 1]"),
    (("--ranker", "bm25+k3=-8"), "k3=-8 must be >= 0"),
    (("--ranker", "tfidf+b=5"), "b=5 must be in [0, 1]"),
    (("--ranker", "bm25+k1=1_0"), "'1_0' is not a number"),
    (("--ranker", "bm25:arg"), "bm25 takes no ':' argument"),
    (("--ranker", "bm25+k1=1+k1=2"), "parameter 'k1' is given twice"),
])
def test_bad_options_are_one_line(tiny_dir, capsys, args, expected):
    assert expected in run_line(capsys, tiny_dir, *args)


def test_masking_rel_level_out_of_range(tiny_dir, capsys):
    line = one_error_line(capsys, "masking", "--collection", str(tiny_dir), "--rel-level", "-5",
                          "--out", str(tiny_dir / "out"), "--quiet")
    assert "--rel-level must be ≥ 1" in line


# --- malformed data files ------------------------------------------------------------------

@pytest.mark.parametrize("name, content, expected", [
    ("qrels.txt", "q1 0 d1 99999999999999999999999\n", "9999 is out of range"),
    ("qrels.txt", "q1 0 d1 1_0\n", "qrels.txt:1: grade '1_0' is not an integer"),
    ("qrels.txt", "q1 0 d1 ３\n", "qrels.txt:1: grade '３' is not an integer"),
    ("qrels.txt", "", "qrels.txt: no judgments"),
    ("qrels.txt", "\n  \n", "qrels.txt: no judgments"),
    ("passages.tsv", "", "passages.tsv: no document lines"),
    ("passages.tsv", "d1\tapple pie\rd2\ta pie\rd3\triver\r", "passages.tsv:1: carriage return"),
])
def test_bad_data_files_are_located(tiny_dir, capsys, name, content, expected):
    (tiny_dir / name).write_text(content, encoding="utf-8", newline="")
    assert expected in run_line(capsys, tiny_dir)


def _jsonl_collection(tiny_dir: Path, line: str) -> None:
    (tiny_dir / "passages.tsv").unlink()
    good = "".join(json.dumps({"docno": d, "text": t}) + "\n" for d, t in
                   [("d1", "apple pie"), ("d2", "a pie"), ("d3", "river bank"), ("d4", "bank")])
    (tiny_dir / "passages.jsonl").write_text(good + line + "\n", encoding="utf-8")


@pytest.mark.parametrize("line, expected", [
    ('{"docno": ' + "7" * 5000 + ', "text": "x"}', "passages.jsonl:5: invalid JSON"),
    ('{"docno": "d9", "text": ' + "[" * 100_000 + "]" * 100_000 + "}",
     "passages.jsonl:5: JSON nested too deeply"),
    ('{"docno": "d9", "text": "bad \\ud800 text"}', "passages.jsonl:5: JSON text holds a lone"),
    ('{"docno": true, "text": "x"}', "document id must be a string or an integer, found true"),
    ('{"docno": 1234.0, "text": "x"}', "found 1234.0"),
    ('{"docno": ["a"], "text": "x"}', 'found ["a"]'),
])
def test_jsonl_passages_are_checked(tiny_dir, capsys, line, expected):
    _jsonl_collection(tiny_dir, line)
    assert expected in run_line(capsys, tiny_dir)


def test_integer_jsonl_docnos_still_work(tmp_path):
    from abnirml.data.trec import read_id_text_jsonl

    path = tmp_path / "p.jsonl"
    path.write_text('{"docno": 17, "text": "x"}\n')
    assert read_id_text_jsonl(path, "document", ("docno",)) == {"17": "x"}


@pytest.mark.parametrize(("suffix", "text", "expected"), [
    ("tsv", "d1\tone\nd2\ttwo\nd1\tthree\n", "p.tsv:3: duplicate document id 'd1'"),
    ("jsonl", '{"docno": "d1", "text": "one"}\n{"docno": "d1", "text": "two"}\n',
     "p.jsonl:2: duplicate document id 'd1'"),
    ("tsv", "\n  \n", "p.tsv: no document lines (the file is empty or blank)"),
    ("jsonl", "\n", "p.jsonl: no document records (the file is empty or blank)"),
])
def test_id_text_files_refuse_repeated_ids_and_empty_files(tmp_path, suffix, text, expected):
    """A repeated id would silently replace a text; an empty file would be an empty
    collection. Both readers say so with the file and line."""
    from abnirml.data.trec import read_id_text_jsonl, read_id_text_tsv

    path = tmp_path / f"p.{suffix}"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        if suffix == "tsv":
            read_id_text_tsv(path, "document")
        else:
            read_id_text_jsonl(path, "document", ("docno",))
    assert expected in str(caught.value)


def test_pairs_file_booleans_are_not_texts(tmp_path):
    from abnirml.data.pairs import read_pairs_file

    path = tmp_path / "p.jsonl"
    path.write_text('{"doc1": true, "doc2": "x"}\n')
    with pytest.raises(InputError, match=r"p.jsonl:1: field 'doc1' must be a string"):
        list(read_pairs_file(path))


def test_passages_on_disk_keep_the_first_document_after_a_bom(tmp_path, monkeypatch):
    from abnirml.data.collection import load_collection

    root = write_collection_dir(tmp_path / "c", {"q1": "apple"}, {"d1": "apple pie",
                                                                 "d2": "pear"},
                                {"q1": {"d1": 1}})
    (root / "passages.tsv").write_bytes(b"\xef\xbb\xbfd1\tapple pie\nd2\tpear\n")
    monkeypatch.setenv("ABNIRML_STREAM_DOCS_BYTES", "1")
    docs = load_collection(str(root)).docs
    assert type(docs).__name__ == "PassagesOnDisk"
    assert "d1" in docs and docs["d1"] == "apple pie" and len(docs) == 2


def test_empty_candidate_run_is_refused(tiny_dir, capsys):
    (tiny_dir / "runs").mkdir()
    (tiny_dir / "runs" / "bm25.run").write_text("\n")
    assert "bm25.run: the run is empty" in run_line(capsys, tiny_dir)


def test_grades_outside_every_band_are_warned_and_counted(tiny_dir, capsys):
    code = main(["run", "--collection", str(tiny_dir), "--probe", "mmp:tf:length", "--ranker",
                 "bm25", "--grade-bands", "low=0-1", "--out", str(tiny_dir / "out"), "--quiet",
                 "--delta", "0.1"])
    err = capsys.readouterr().err
    assert code == 0
    assert "2 judgment(s) fall outside every grade band (grade 2 × 1, grade 3 × 1)" in err


# --- unreadable or misplaced files and outputs ---------------------------------------------

def test_unreadable_input_file_is_one_line(tiny_dir, capsys, monkeypatch):
    qrels = tiny_dir / "qrels.txt"
    real_open = Path.open

    def deny(self, *args, **kwargs):
        if self == qrels:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", deny)
    assert "qrels.txt: cannot read the file (Permission denied)" in run_line(capsys, tiny_dir)


def test_out_naming_a_file_is_one_line(tiny_dir, capsys):
    (tiny_dir / "taken").write_text("mine")
    line = one_error_line(capsys, "run", "--collection", str(tiny_dir), "--probe",
                          "mmp:tf:length", "--ranker", "bm25", "--delta", "0.1",
                          "--out", str(tiny_dir / "taken"), "--quiet")
    assert "taken" in line
    assert (tiny_dir / "taken").read_text() == "mine"


@pytest.fixture()
def finished_run(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    assert main(["run", "--probe", "mmp:tf:length", "--ranker", "bm25", "--out", str(out),
                 "--quiet", "--no-effectiveness"]) == 0
    return out


def test_report_on_malformed_outputs_is_one_line(finished_run, capsys):
    out = finished_run
    (out / "run.json").write_text("{not json")
    assert "run.json:1: invalid JSON" in one_error_line(capsys, "report", str(out))
    (out / "run.json").write_text("[]")
    assert "run.json: expected a JSON object" in one_error_line(capsys, "report", str(out))
    (out / "run.json").unlink()
    lines = (out / "results.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    record["score"] = "high"
    (out / "results.jsonl").write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    assert "results.jsonl:1: field 'score' must be a number" in one_error_line(
        capsys, "report", str(out))


def test_truncated_score_file_is_one_line(finished_run, capsys):
    from abnirml.evaluation.execution.score_file import load_scores

    npz = finished_run / "scores.npz"
    npz.write_bytes(npz.read_bytes()[: npz.stat().st_size // 2])
    with pytest.raises(InputError, match="unreadable score file"):
        load_scores(npz)
    line = one_error_line(capsys, "compare", str(finished_run), str(finished_run))
    assert "scores.npz" in line


def test_spec_parsing_is_strict_from_python_too():
    from abnirml.rankers.base import RankerSpec

    with pytest.raises(ConfigError, match="given twice"):
        RankerSpec.parse("bm25+b=0.1+b=0.2")


def test_report_refuses_a_run_json_folder_and_an_empty_results_file(finished_run, capsys):
    out = finished_run
    earlier_report = (out / "report.md").read_text()
    (out / "run.json").unlink()
    (out / "run.json").mkdir()
    assert "run.json: is a folder" in one_error_line(capsys, "report", str(out))
    (out / "run.json").rmdir()
    (out / "results.jsonl").write_text("")
    assert "results.jsonl: holds no result records" in one_error_line(
        capsys, "report", str(out))
    assert (out / "report.md").read_text() == earlier_report   # left as it was


def test_one_liners_name_what_is_really_wrong(tmp_path, capsys):
    """A symbolic-link loop above --cache, a FIFO as --out and queries BM25 cannot match
    (all stopwords, no run file) each say what they are."""
    loop = tmp_path / "loop"
    loop.symlink_to("loop")
    line = one_error_line(capsys, "run", "--probe", "mmp:tf:length", "--quiet", "--cache",
                          str(loop / "scores.sqlite"), "--out", str(tmp_path / "o"))
    assert f"{loop} is a symbolic link that loops (loop), not a folder" in line
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    line = one_error_line(capsys, "run", "--probe", "mmp:tf:length", "--quiet", "--no-cache",
                          "--out", str(fifo))
    assert "is a named pipe (FIFO), a special file, not a directory" in line
    stopwords = write_collection_dir(
        tmp_path / "coll", {"q1": "the of and", "q2": "to be or not"},
        {"d1": "apple pie", "d2": "a pie", "d3": "river bank", "d4": "bank loans"},
        {"q1": {"d1": 2, "d2": 1}, "q2": {"d3": 3, "d4": 0}})
    line = one_error_line(capsys, "run", "--collection", str(stopwords), "--probe", "tmp:*",
                          "--quiet", "--no-cache", "--out", str(tmp_path / "o"))
    assert "ranks no document for any of the 2 queries" in line and "run file" not in line
