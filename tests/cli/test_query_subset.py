"""``--queries N|FILE``: a seeded sample of judged queries, or the queries a file names."""

from __future__ import annotations

import json
from pathlib import Path

from abnirml.cli import main
from tests.helpers import one_error_line

PROBE = "tmp:shuffle-words"


def _run(out: Path, *extra: str, collection: str = "demo") -> dict:
    assert main(["run", "--collection", collection, "--probe", PROBE, "--ranker", "bm25",
                 "--out", str(out), "--quiet", "--no-effectiveness", "--no-cache",
                 *extra]) == 0
    return json.loads((out / "run.json").read_text(encoding="utf-8"))


def _probed_queries(out: Path) -> set[str]:
    """The queries the probe's samples come from (per-sample scores, not run.json)."""
    from abnirml import load_scores

    scores = load_scores(str(out / "scores.npz")).scores[(PROBE, "bm25")]
    return {scores.queries[code] for code in set(scores.cluster.tolist())}


def test_a_count_draws_that_many_judged_queries_with_the_seed(tmp_path):
    from abnirml.data.collection import load_collection

    first = _run(tmp_path / "a", "--queries", "3")["collection"]
    again = _run(tmp_path / "b", "--queries", "3")["collection"]
    other = _run(tmp_path / "c", "--queries", "3", "--seed", "7")["collection"]
    chosen = first["query_subset"]
    assert chosen["given"] == "3" and chosen["seed"] == 0 and len(chosen["qids"]) == 3
    assert first["queries"] == 3 and again["query_subset"] == chosen
    assert other["query_subset"]["qids"] != chosen["qids"]
    queries = load_collection("demo").queries
    assert _probed_queries(tmp_path / "a") == {queries[q] for q in chosen["qids"]}


def test_a_file_names_the_queries_and_an_unknown_id_is_one_line(tmp_path, capsys):
    from abnirml.data.collection import load_collection

    queries = load_collection("demo").queries
    wanted = sorted(queries)[:2]
    ids = tmp_path / "qids.txt"
    ids.write_text(f"# two queries\n{wanted[0]}\n\n{wanted[1]}\n", encoding="utf-8")
    info = _run(tmp_path / "out", "--queries", str(ids))["collection"]
    assert info["query_subset"] == {"given": str(ids), "seed": None, "qids": wanted}
    assert _probed_queries(tmp_path / "out") == {queries[q] for q in wanted}
    ids.write_text(f"{wanted[0]}\nno-such-query\n", encoding="utf-8")
    line = one_error_line(capsys, "run", "--probe", PROBE, "--ranker", "bm25", "--queries",
                          str(ids), "--out", str(tmp_path / "bad"), "--quiet", "--no-cache")
    assert f"{ids}:2:" in line and "'no-such-query' is not a query of collection demo" in line
    assert not (tmp_path / "bad").exists()


def test_run_queries_5_on_dl19_probes_exactly_5_queries(dl19, tmp_path):
    info = _run(tmp_path / "out", "--queries", "5", collection=str(dl19))["collection"]
    assert info["queries"] == 5 and len(info["query_subset"]["qids"]) == 5
    assert len(_probed_queries(tmp_path / "out")) == 5


def test_a_count_past_pythons_digit_limit_takes_every_judged_query():
    from abnirml.data.collection import load_collection
    from abnirml.data.query_subset import choose, judged_queries

    collection = load_collection("demo")
    huge = "9" * 5000
    chosen = choose(collection, huge, seed=0)
    assert chosen.qids == tuple(judged_queries(collection)) and chosen.given == huge
    assert choose(collection, "0" * 5000 + "2", seed=0).qids == choose(collection, "2", 0).qids


def test_a_fifo_or_a_device_given_as_queries_is_named_by_its_kind(tmp_path, capsys):
    import os

    fifo = tmp_path / "ids.fifo"
    os.mkfifo(fifo)
    for path, kind in [(fifo, "a named pipe (FIFO)"), (Path("/dev/zero"), "a character device"),
                       (tmp_path, "a folder")]:
        line = one_error_line(capsys, "run", "--probe", PROBE, "--ranker", "bm25",
                              "--queries", str(path), "--out", str(tmp_path / "out"),
                              "--quiet", "--no-cache")
        assert line.startswith(f"abnirml: error: {path}: --queries: expected a number of "
                               "queries or a regular file of query ids, one a line, "
                               f"found {kind}"), line
    assert not (tmp_path / "out").exists()
