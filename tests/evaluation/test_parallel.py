"""Parallel and distributed scoring give byte-identical results to a serial run."""

from abnirml.cli import main


def results_of(tmp_path, name, *extra):
    out = tmp_path / name
    code = main(["run", "--ranker", "bm25", "--ranker", "ql", "--probe", "mmp:*", "--quiet",
                 "--no-cache", "--batch-size", "37", "--out", str(out), *extra])
    assert code == 0
    return (out / "results.jsonl").read_bytes()


def test_workers_match_serial(tmp_path):
    serial = results_of(tmp_path, "serial")
    assert results_of(tmp_path, "workers", "--workers", "2") == serial


def test_invalid_worker_count(capsys):
    assert main(["run", "--workers", "0", "--quiet", "--no-cache"]) == 2
    assert "--workers must be ≥ 1" in capsys.readouterr().err
