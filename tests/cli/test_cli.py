"""The command line end to end: outputs, known answers, and one-line errors."""

import json

import pytest

from abnirml.cli import main


def run_cli(*args):
    return main([*args])


def read_results(out):
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_demo_run_writes_results_and_report(tmp_path):
    out = tmp_path / "out"
    assert run_cli("run", "--probe", "mmp:*", "--out", str(out), "--quiet") == 0
    records = read_results(out)
    assert len(records) == 18 * 3
    assert {r["ranker"] for r in records} == {"bm25", "ql", "tfidf"}
    for record in records:
        assert record["pos"] + record["neg"] + record["neutral"] == record["n"]
        assert record["delta"] > 0
    report = (out / "report.md").read_text()
    assert "| Variable | Control | bm25 | ql | tfidf | Samples |" in report
    run_info = json.loads((out / "run.json").read_text())
    assert run_info["counts"]["unique_pairs"] <= run_info["counts"]["pair_slots"]
    by_key = {(r["probe"], r["ranker"]): r for r in records}
    # bag-of-words rankers always prefer more query-term occurrences at equal length
    assert by_key[("mmp:tf:length", "bm25")]["score"] == 1.0


def test_report_subcommand_rebuilds_markdown(tmp_path):
    out = tmp_path / "out"
    run_cli("run", "--probe", "mmp:tf:*", "--ranker", "bm25", "--out", str(out), "--quiet")
    original = (out / "report.md").read_text()
    (out / "report.md").unlink()
    assert run_cli("report", str(out)) == 0
    assert (out / "report.md").read_text() == original


def test_same_seed_gives_identical_results(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    run_cli("run", "--probe", "mmp:*", "--out", str(a), "--quiet", "--seed", "7")
    run_cli("run", "--probe", "mmp:*", "--out", str(b), "--quiet", "--seed", "7", "--no-cache",
            "--batch-size", "5")
    assert (a / "results.jsonl").read_bytes() == (b / "results.jsonl").read_bytes()



def error_of(capsys, *args):
    code = run_cli(*args)
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    return code, lines


@pytest.mark.parametrize("damage, expected", [
    (("qrels.txt", "q1 0 d1 2\nq1 0 d2\n"), "qrels.txt:2: expected 4 fields"),
    (("qrels.txt", "q1 0 d1 2\nq9 0 d2 1\n"), "qrels.txt:2: unknown query id 'q9'"),
    (("qrels.txt", "q1 0 d1 high\n"), "qrels.txt:1: grade 'high' is not an integer"),
    (("queries.tsv", "q1\tapple pie\nq2\t   \n"), "queries.tsv:2: empty query text"),
    (("queries.tsv", "q1\tapple pie\nq1\tagain\n"), "queries.tsv:2: duplicate query id 'q1'"),
    (("passages.tsv", "d1\tok\nd2 no tab here\n"), "passages.tsv:2: expected"),
])
def test_bad_input_is_one_line_with_file_and_line(tiny_dir, capsys, damage, expected):
    name, content = damage
    (tiny_dir / name).write_text(content, encoding="utf-8")
    code, lines = error_of(capsys, "run", "--collection", str(tiny_dir), "--out",
                           str(tiny_dir / "out"), "--quiet")
    assert code == 2
    assert len(lines) == 1
    assert lines[0].startswith("abnirml: error: ")
    assert expected in lines[0]
    assert "Traceback" not in lines[0]


def test_non_utf8_bytes_are_reported(tiny_dir, capsys):
    (tiny_dir / "passages.tsv").write_bytes(b"d1\tfine\nd2\tcaf\xe9 au lait\n")
    code, lines = error_of(capsys, "run", "--collection", str(tiny_dir), "--quiet")
    assert code == 2 and len(lines) == 1
    assert "passages.tsv:2: invalid UTF-8 byte at column 7" in lines[0]


def test_missing_file_and_directory(tiny_dir, tmp_path, capsys):
    (tiny_dir / "qrels.txt").unlink()
    code, lines = error_of(capsys, "run", "--collection", str(tiny_dir), "--quiet")
    assert code == 2 and "missing required file" in lines[0] and "qrels.txt" in lines[0]
    code, lines = error_of(capsys, "run", "--collection", str(tmp_path / "nope"), "--quiet")
    assert code == 2 and "collection not found" in lines[0]


@pytest.mark.parametrize("args, expected", [
    (("--ranker", "bm52"), "unknown ranker 'bm52' (did you mean bm25"),
    (("--probe", "mmp:tf:lenght"), "unknown probe 'mmp:tf:lenght' (did you mean mmp:tf:length"),
    (("--delta", "-1"), "delta must be a finite number ≥ 0"),
    (("--delta", "abc"), "is not a number"),
    (("--alpha", "1.5"), "alpha must be in (0, 1)"),
    (("--ranker", "bm25+k9=1"), "unknown parameter 'k9'"),
])
def test_bad_options_are_one_line(capsys, args, expected):
    code, lines = error_of(capsys, "run", "--quiet", *args)
    assert code == 2 and len(lines) == 1
    assert expected in lines[0]


def test_fixed_delta_skips_calibration(tmp_path):
    out = tmp_path / "out"
    run_cli("run", "--probe", "mmp:tf:length", "--delta", "bm25=0.25", "--ranker", "bm25",
            "--ranker", "ql", "--out", str(out), "--quiet")
    info = json.loads((out / "run.json").read_text())
    by_name = {r["name"]: r for r in info["rankers"]}
    assert by_name["bm25"]["delta"] == 0.25 and by_name["bm25"]["delta_source"] == "given"
    assert by_name["ql"]["delta_source"] == "calibrated"


def test_run_file_with_unknown_query_is_located(tiny_dir, capsys):
    (tiny_dir / "runs").mkdir()
    (tiny_dir / "runs" / "bm25.run").write_text("q1 Q0 d1 1 3.0 x\nq7 Q0 d2 2 1.0 x\n")
    code, lines = error_of(capsys, "run", "--collection", str(tiny_dir), "--quiet",
                           "--out", str(tiny_dir / "out"))
    assert code == 2 and len(lines) == 1
    assert "bm25.run:2: unknown query id 'q7'" in lines[0]


def test_run_file_error_names_its_first_unknown_line_and_another_collection(tiny_dir, capsys):
    """The located line is the file's first line with an unknown query (not the line of the
    alphabetically first unknown id), and a file none of whose queries the collection knows
    says it may be a run of another collection."""
    (tiny_dir / "runs").mkdir()
    (tiny_dir / "runs" / "bm25.run").write_text(
        "q1 Q0 d1 1 3.0 x\nz9 Q0 d2 1 1.0 x\na5 Q0 d2 1 1.0 x\n")
    code, lines = error_of(capsys, "run", "--collection", str(tiny_dir), "--quiet",
                           "--out", str(tiny_dir / "out"))
    assert code == 2 and len(lines) == 1
    assert "bm25.run:2: unknown query id 'z9'" in lines[0] and "2 unknown in all" in lines[0]
    (tiny_dir / "runs" / "bm25.run").write_text("x1 Q0 d1 1 3.0 x\nx2 Q0 d2 1 1.0 x\n")
    code, lines = error_of(capsys, "run", "--collection", str(tiny_dir), "--quiet",
                           "--out", str(tiny_dir / "out"))
    assert code == 2 and len(lines) == 1
    assert "bm25.run:1: unknown query id 'x1'" in lines[0]
    assert "none of its 2 query ids" in lines[0] and "another collection" in lines[0]


def test_candidates_computed_when_no_run(tiny_dir, tmp_path):
    out = tmp_path / "out"
    assert run_cli("run", "--collection", str(tiny_dir), "--probe", "mmp:*", "--quiet",
                   "--out", str(out)) == 0
    info = json.loads((out / "run.json").read_text())
    assert info["candidates"].startswith("BM25 top 100 computed")


def test_every_scoring_command_reads_its_flags_into_one_session_record():
    """The flags shared by the scoring commands become a SessionSettings in one place
    (``SessionSettings.from_args``); flags a command does not have keep their defaults."""
    from abnirml.cli import build_parser
    from abnirml.evaluation.execution.workspace import SessionSettings
    from abnirml.evaluation.stats.significance import StatisticsSettings

    parser = build_parser()
    run = parser.parse_args(["run", "--no-cache", "--quiet", "--workers", "2", "--ray", "local",
                             "--device", "cuda", "--batch-size", "8", "--stopwords", "none",
                             "--allow-pickle", "--candidates", "bm25", "--candidate-depth", "5",
                             "--test", "permutation", "--alpha", "0.05", "--ci", "0.9",
                             "--ray-tasks", "16", "--ray-gpus", "0.5"])
    assert SessionSettings.from_args(run) == SessionSettings(
        stopwords="none", candidates="bm25", candidate_depth=5, cache=None, device="cuda",
        batch_size=8, allow_pickle=True, progress=False, workers=2, ray_address="local",
        ray_tasks=16, ray_gpus=0.5)
    assert StatisticsSettings.from_args(run, 0.5, {"bm25": 0.1}) == StatisticsSettings(
        alpha=0.05, delta=0.5, deltas={"bm25": 0.1}, test="permutation", ci=0.9)
    assert SessionSettings.from_args(parser.parse_args(["run"])) == SessionSettings()
    triples = parser.parse_args(["export-triples", "t.jsonl", "--probe", "axiom", "--cache",
                                 "c.sqlite", "--candidate-depth", "7"])
    assert SessionSettings.from_args(triples) == SessionSettings(cache="c.sqlite",
                                                                 candidate_depth=7)
    patch = parser.parse_args(["patch", "--ranker", "bm25", "--probe", "tmp:typos",
                               "--device", "cpu", "--batch-size", "4", "--quiet"])
    assert SessionSettings.from_args(patch) == SessionSettings(batch_size=4, progress=False)
    masking = parser.parse_args(["masking", "--no-cache", "--stopwords", "spacy"])
    assert SessionSettings.from_args(masking) == SessionSettings(stopwords="spacy", cache=None)
