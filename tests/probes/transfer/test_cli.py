"""The command line with transfer data: flags, the Table-3 report section, one-line errors."""

import json

import pytest

from abnirml.cli import main
from abnirml.probes import probe_registry as registry
from abnirml.report.transfer_table import transfer_section
from tests.probes.transfer.test_probes import PARAPHRASES
from tests.transfer_fixtures import lines, write_jfleg, write_mrpc

pytest.importorskip("spacy")


@pytest.fixture(autouse=True)
def _clean_registry():
    """--pairs registers a probe process-wide; keep each test's registrations to itself."""
    with registry.scoped_registrations():
        yield


def records_of(out):
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_transfer_data_run_prints_table_3_layout(tmp_path):
    data = tmp_path / "data"
    write_mrpc(data / "mrpc", PARAPHRASES)
    write_jfleg(data / "jfleg", "dev", ["the cat sit on the mat ."],
                [["The cat sits on the mat ."], ["the cat sit on the mat ."]])
    out = tmp_path / "out"
    assert main(["run", "--transfer-data", str(data), "--probe", "dtp:*", "--ranker", "bm25",
                 "--ranker", "ql", "--out", str(out), "--quiet"]) == 0
    report = (out / "report.md").read_text()
    assert "| Characteristic | Dataset | bm25 | ql | Samples | Discarded |" in report
    row = next(line for line in report.splitlines() if line.startswith("| Paraphrase | MRPC |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[-2:] == ["3", "0"]
    assert all(not c.lstrip("* ").startswith(("+", "-")) for c in cells[2:4])  # unsigned
    assert "| Fluency | JFLEG | " in report and "| identical 1 |" in report
    assert f"data not found: {data / 'gyafc'} — dtp:formality-gyafc, " in report
    assert f"data not found: {data / 'nq'} — dtp:factuality-nq-per, " in report
    by_probe = {(r["probe"], r["ranker"]): r for r in records_of(out)}
    mrpc = by_probe[("dtp:paraphrase-mrpc", "bm25")]
    assert mrpc["symmetric"] and mrpc["n"] == 3 and 0 <= mrpc["score"] <= 1
    assert by_probe[("dtp:neutrality-wnc", "ql")]["skipped"] == {"no-data": 1}
    run_info = json.loads((out / "run.json").read_text())
    assert run_info["options"]["dtp.data"] == str(data)


def test_without_transfer_data_the_probes_are_skipped_not_failed(tmp_path):
    out = tmp_path / "out"
    assert main(["run", "--probe", "dtp:*", "--ranker", "bm25", "--out", str(out),
                 "--quiet"]) == 0
    report = (out / "report.md").read_text()
    assert "data not found: no --transfer-data given — dtp:paraphrase-mrpc" in report
    assert "| Characteristic |" not in report
    assert all(r["n"] == 0 and r["skipped"] == {"no-data": 1} for r in records_of(out))


def test_pairs_flag_adds_a_probe(tmp_path):
    pairs = lines(tmp_path / "mine.jsonl", [json.dumps(
        {"doc1": "Solar panels convert light.", "doc2": "Solar panels are great.",
         "query": "solar panels"})])
    out = tmp_path / "out"
    assert main(["run", "--probe", "mmp:tf:length", "--pairs", str(pairs), "--name", "dtp:mine",
                 "--pairs-symmetric", "--ranker", "bm25", "--out", str(out), "--quiet"]) == 0
    (mine,) = [r for r in records_of(out) if r["probe"] == "dtp:mine"]
    assert mine["symmetric"] and mine["n"] == 1
    # labels as the probe gives them: its name and its file
    assert "| mine | mine.jsonl |" in (out / "report.md").read_text()


def test_pairs_default_name_is_the_file_stem(tmp_path):
    pairs = lines(tmp_path / "style.tsv", ["doc1\tdoc2\tquery", "A red door.\tThe red door!\tdoor"])
    out = tmp_path / "out"
    assert main(["run", "--pairs", str(pairs), "--probe", "dtp:style", "--ranker", "bm25",
                 "--out", str(out), "--quiet"]) == 0
    assert [r["probe"] for r in records_of(out)] == ["dtp:style"]


@pytest.mark.parametrize(("args", "message"), [
    (["--transfer-data", "/no/such/dir"], "--transfer-data /no/such/dir: not a directory"),
    (["--name", "dtp:x"], "give --pairs"),
    (["--pairs", "/no/such.tsv"], "/no/such.tsv: pairs file not found"),
])
def test_errors_are_one_line(tmp_path, capsys, args, message):
    assert main(["run", *args, "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and message in err


def test_malformed_pairs_file_names_file_and_line(tmp_path, capsys):
    pairs = lines(tmp_path / "bad.tsv", ["doc1\tdoc2", "a\tb", "only one field"])
    assert main(["run", "--pairs", str(pairs), "--name", "dtp:bad", "--ranker", "bm25",
                 "--probe", "dtp:bad", "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{pairs}:3: expected 2 tab-separated fields, found 1" in err


def test_bad_probe_name(tmp_path, capsys):
    pairs = lines(tmp_path / "p.tsv", ["doc1\tdoc2", "a b\tb c"])
    assert main(["run", "--pairs", str(pairs), "--name", "mine", "--out",
                 str(tmp_path / "o"), "--quiet"]) == 2
    assert "must look like dtp:<name>" in capsys.readouterr().err


def test_transfer_section_from_records():
    def record(probe, ranker, score, n, skipped, symmetric=False, significant=True):
        return {"probe": probe, "family": "dtp", "ranker": ranker, "subset": "all",
                "score": score, "n": n, "symmetric": symmetric, "significant": significant,
                "skipped": skipped}

    records = [
        record("dtp:paraphrase-mrpc", "bm25", 0.38, 10, {"no-shared-chunk": 2}, True),
        record("dtp:fluency-jfleg", "bm25", -0.05, 8, {"identical": 1, "duplicate": 3}, False,
               False),
        record("dtp:fluency-jfleg-spellchecked", "bm25", 0.1, 8, {}),
        record("dtp:neutrality-wnc", "bm25", None, 0, {"no-data": 1}),
    ]
    text = "\n".join(transfer_section(records, {"options": {"transfer_data": "/d"}}))
    assert "| Paraphrase | MRPC | 0.38* | 10 | no-shared-chunk 2 |" in text
    assert "| Fluency | JFLEG | -0.05 | 8 | duplicate 3, identical 1 |" in text
    assert "|  | JFLEG spellchecked | +0.10* | 8 | 0 |" in text
    papers = "\n".join(transfer_section(records, {"options": {"transfer_data": "/d"},
                                                  "report": {"significance_mark":
                                                             "not-significant"}}))
    assert "| Fluency | JFLEG | * -0.05 | 8 | duplicate 3, identical 1 |" in papers
    assert "| Paraphrase | MRPC | 0.38 | 10 | no-shared-chunk 2 |" in papers
    assert "- data not found: /d/wnc — dtp:neutrality-wnc" in text
    assert transfer_section([dict(records[0], family="mmp")], {}) == []
