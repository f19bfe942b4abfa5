"""A researcher's workflow end to end: known-answer results, notebook API, CLI papercuts,
tidy tables. The PyTerrier fingerprint tests live with the adapters in
``tests/rankers/test_adapters.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from abnirml.cli import main
from tests.helpers import one_error_line, write_collection_dir


def _run(out: Path, *extra: str, probe: str = "mmp:tf:length") -> Path:
    assert main(["run", "--probe", probe, "--ranker", "bm25", "--out", str(out), "--quiet",
                 "--no-effectiveness", *extra]) == 0
    return out


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> Path:
    return _run(tmp_path_factory.mktemp("demo") / "out")


def test_compare_of_runs_on_different_collections_is_an_error(demo_run, tmp_path, capsys):
    tiny = write_collection_dir(
        tmp_path / "coll",
        {"q1": "apple pie", "q2": "river bank"},
        {"d1": "apple pie with apples", "d2": "a pie", "d3": "the river bank is muddy",
         "d4": "bank loans"},
        {"q1": {"d1": 2, "d2": 1}, "q2": {"d3": 3, "d4": 0}})
    other = _run(tmp_path / "other", "--collection", str(tiny))
    capsys.readouterr()
    line = one_error_line(capsys, "compare", str(demo_run), str(other))
    assert "different collections" in line


def test_compare_with_nothing_in_common_is_an_error(demo_run, tmp_path, capsys):
    other = _run(tmp_path / "other", probe="mmp:sumtf:length")
    capsys.readouterr()
    line = one_error_line(capsys, "compare", str(demo_run), str(other))
    assert "nothing to compare" in line and "only in A" in line
    # The same folders compared with themselves still work.
    assert main(["compare", str(demo_run), str(demo_run), "--a", "bm25", "--b", "bm25"]) == 0


def test_expect_without_transfer_data_raises_with_the_reason():
    from abnirml.errors import ConfigError
    from abnirml.expect import expect

    with pytest.raises(ConfigError, match=r"dtp:paraphrase-mrpc has no samples on demo: "
                                          r"no transfer data given"):
        expect("bm25", "dtp:paraphrase-mrpc")
    found = expect("bm25", "dtp:paraphrase-mrpc", options={"dtp.data": "demo"})
    assert found.n > 0 and -1.0 <= found.score <= 1.0


class _WordCount:
    """A hand-made Ranker object (the contract: name, fingerprint, score)."""

    name = "words"
    fingerprint = "test-word-count-v1"

    def score(self, pairs):
        import numpy as np

        return np.array([float(len(d.split())) for _, d in pairs])


def test_run_accepts_ranker_objects_and_pyterrier_transformers(tmp_path):
    import numpy as np

    import abnirml

    pt = pytest.importorskip("pyterrier")
    same_as_words = pt.apply.doc_score(lambda row: float(len(row["text"].split())))
    config = abnirml.RunConfig(rankers=["bm25", _WordCount(), same_as_words],
                               probes=["mmp:tf:length", "mmp:relevance:length"],
                               out=str(tmp_path / "out"), effectiveness=False,
                               session=abnirml.SessionSettings(cache=None, progress=False))
    output = abnirml.run(config)
    frame = output.to_frame()
    assert list(frame.columns[:10]) == ["probe", "family", "ranker", "subset", "score",
                                        "ci_low", "ci_high", "p_value", "p_adjusted",
                                        "significant"]
    assert set(frame["ranker"]) == {"bm25", "words", "pyterrier"}
    assert len(frame) == len(output.result.records)
    assert frame["significant"].dtype == bool and frame["score"].dtype == np.float64
    # The wrapped transformer and the Ranker object compute the same function, so every
    # number but the ranker's name agrees; BM25 behaves differently.
    numbers = ["score", "n", "pos", "neg", "neutral", "delta"]
    words = frame[frame.ranker == "words"].reset_index(drop=True)
    wrapped = frame[frame.ranker == "pyterrier"].reset_index(drop=True)
    bm25 = frame[frame.ranker == "bm25"].reset_index(drop=True)
    assert words[numbers].equals(wrapped[numbers])
    assert not words[numbers].equals(bm25[numbers])
    # The folder reads back to the same frame; load_scores takes str paths and folders.
    loaded = abnirml.load_results(str(tmp_path / "out"))
    assert loaded[["probe", "ranker", "subset", "n"]].equals(
        frame[["probe", "ranker", "subset", "n"]])
    np.testing.assert_allclose(loaded["score"], frame["score"])
    assert abnirml.load_scores(str(tmp_path / "out" / "scores.npz")).ranker_names == [
        "bm25", "words", "pyterrier"]
    samples = abnirml.load_samples(str(tmp_path / "out"))
    mine = samples[(samples.probe == "mmp:tf:length") & (samples.ranker == "words")]
    n_all = int(words[(words.probe == "mmp:tf:length") & (words.subset == "all")].n.iloc[0])
    assert len(mine) == n_all
    np.testing.assert_allclose(mine["diff"], mine["score1"] - mine["score2"])
    assert (mine["score1"] == mine["score1"].round()).all()     # word counts


def test_run_rejects_something_that_is_not_a_ranker():
    import abnirml
    from abnirml.errors import ConfigError

    with pytest.raises(ConfigError, match="expected a spec string, a Ranker"):
        abnirml.run(abnirml.RunConfig(rankers=[42], probes=["mmp:tf:length"],
                                      session=abnirml.SessionSettings(cache=None, progress=False)))


# --- CLI papercuts ---------------------------------------------------------------------------

class _ClosedPipe:
    """stdout whose reader went away after the first line (``abnirml probes | head -1``)."""

    def __init__(self):
        self.lines = 0

    def write(self, text):
        self.lines += text.count("\n")
        if self.lines > 1:
            raise BrokenPipeError(32, "Broken pipe")
        return len(text)

    def flush(self):
        pass


def test_listing_into_a_closed_pipe_ends_quietly(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdout", _ClosedPipe())
    assert main(["probes"]) == 0
    assert capsys.readouterr().err == ""


def test_probe_patterns_are_case_insensitive_and_globs_get_useful_suggestions(capsys):
    from abnirml.probes.probe_registry import select_probes

    assert [p.name for p in select_probes(["MMP"])] == [p.name for p in select_probes(["mmp"])]
    assert [p.name for p in select_probes(["TMP:Shuffle-Words"])] == ["tmp:shuffle-words"]
    line = one_error_line(capsys, "run", "--probe", "tmp:shufle*")
    suggested = line.split("did you mean ")[1].split("?")[0].split(", ")
    assert suggested and all(s.startswith("tmp:shuffle-") for s in suggested)
    line = one_error_line(capsys, "run", "--probe", "tmp:shufle")
    suggested = line.split("did you mean ")[1].split("?")[0].split(", ")
    assert suggested and all(s.startswith("tmp:") for s in suggested), suggested


def test_help_has_no_rst_markup_and_rankers_are_described(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "``" not in capsys.readouterr().out
    assert main(["rankers"]) == 0
    lines = dict(line.split("\t", 1) for line in capsys.readouterr().out.splitlines())
    assert lines["bm25"].startswith("bm25[+k1=1.2][+b=0.75][+k3=8] — ")
    builtin = ["bm25", "ql", "tfidf", "maxp", "cross-encoder", "monot5", "colbert",
               "biencoder", "splade", "lm", "duot5", "lm-pairwise", "doc2query", "wmd", "knrm",
               "cknrm", "lgbm", "pyterrier", "http"]        # (other tests may register more)
    assert all(lines[f] != "(no description)" for f in builtin)


def test_rank_origin_defaults_its_out_like_run(tmp_path, monkeypatch, capsys):
    run_file = tmp_path / "a.run"
    run_file.write_text("q1 Q0 d1 1 2.0 a\nq1 Q0 d2 2 1.0 a\n")
    other = tmp_path / "b.run"
    other.write_text("q1 Q0 d2 1 2.0 b\nq1 Q0 d1 2 1.0 b\n")
    monkeypatch.chdir(tmp_path)
    assert main(["rank-origin", str(run_file), str(other), "--ranges", "1-1,2-2"]) == 0
    assert (tmp_path / "abnirml-out" / "rank_origin.csv").is_file()


def test_workers_zero_is_refused_before_the_collection_loads(monkeypatch):
    import abnirml
    from abnirml.data import collection
    from abnirml.errors import ConfigError

    def must_not_load(*_):
        raise AssertionError("the collection was loaded before checking workers")

    monkeypatch.setattr(collection, "load_collection", must_not_load)
    with pytest.raises(ConfigError, match="workers must be ≥ 1, got 0"):
        abnirml.run(abnirml.RunConfig(
            session=abnirml.SessionSettings(workers=0, cache=None, progress=False)))


def test_run_names_both_reports_on_its_last_line(tmp_path, capsys):
    _run(tmp_path / "out")
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.endswith(f"{tmp_path / 'out'}/report.md, {tmp_path / 'out'}/report.html")


# --- tidy tables -----------------------------------------------------------------------------

def test_table_csvs_hold_numbers_and_significance_columns(demo_run, tmp_path):
    import csv
    import json

    records = [json.loads(line) for line in (demo_run / "results.jsonl").read_text().splitlines()]
    assert all(isinstance(r["tests_in_table"], int) for r in records if r["n"] >= 2)
    with (demo_run / "tables" / "mmp.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert rows and all(r["Variable"] and r["Control"] for r in rows)   # no merged blanks
    by_label = {(r["Variable"], r["Control"]): r for r in rows}
    record = next(r for r in records if r["probe"] == "mmp:tf:length" and r["subset"] == "all")
    row = by_label[("TF", "Length")]
    assert float(row["bm25"]) == pytest.approx(record["score"], abs=0.005)
    assert row["bm25 significant"] == ("true" if record["significant"] else "false")
    assert int(row["Samples"]) == record["n"]
    assert main(["compare", str(demo_run), str(demo_run), "--a", "bm25", "--b", "bm25",
                 "--out", str(tmp_path / "cmp")]) == 0
    with (tmp_path / "cmp" / "compare.csv").open(encoding="utf-8") as handle:
        compared = list(csv.DictReader(handle))
    # one folder given twice: the columns still name the run, as A and B
    interval = "bm25 (B: out) − bm25 (A: out) interval"
    assert {f"{interval} low", f"{interval} high"} <= set(compared[0])
    for r in compared:
        assert float(r["bm25 (A: out)"]) == float(r["bm25 (B: out)"])
        assert int(r["Effects changed"]) == 0
        # a ranker against itself: identical effects, an interval of zero width, no verdict
        assert float(r[f"{interval} low"]) == float(r[f"{interval} high"]) == 0.0
        assert r["Differs"] == "false"


def test_axiom_table_csvs_split_compound_cells_into_numbers(tmp_path):
    """The axiom tables print several numbers in one cell (``0.96 (0.00)``,
    ``1,234 / 56 / 0``); their CSVs must hold one plain number per cell like every other
    table (README: no thousands separators), each part in a column of its own."""
    import csv
    import json

    out = tmp_path / "ax"
    assert main(["run", "--probe", "axiom:rennings-tfc1", "--probe", "axiom:m-and", "--ranker",
                 "bm25", "--ranker", "ql", "--out", str(out), "--quiet", "--no-effectiveness"]) == 0
    records = {(r["probe"], r["ranker"]): r for r in map(
        json.loads, (out / "results.jsonl").read_text().splitlines()) if r["subset"] == "all"}

    def rows(slug):
        with (out / "tables" / f"{slug}.csv").open(encoding="utf-8") as handle:
            return list(csv.DictReader(handle))

    def plain(value):
        return value == "" or float(value) == float(value)     # raises on '1,234' or '(…)'

    tfc1 = records[("axiom:rennings-tfc1", "bm25")]
    TFC1 = "TFC1 (Rennings et al.)"             # the report's label names the source
    counts = {r["Probe"]: r for r in rows("axiom-counts")}["axiom:rennings-tfc1"]
    assert int(counts["bm25 satisfied"]) == tfc1["satisfied"]
    assert int(counts["bm25 violated"]) == tfc1["violated"]
    assert int(counts["bm25 ties"]) == tfc1["ties"]
    for slug, (sat, tie) in (("axiom-satisfied", ("satisfied", "ties")),
                             ("axiom-satisfied-delta", ("satisfied_delta", "ties_delta"))):
        row = {r["Ranker"]: r for r in rows(slug)}["bm25"]
        assert float(row[f"{TFC1} satisfied"]) == pytest.approx(tfc1[sat] / tfc1["n"],
                                                                abs=0.005)
        assert float(row[f"{TFC1} ties"]) == pytest.approx(tfc1[tie] / tfc1["n"], abs=0.005)
    overlap = rows("axiom-overlap")
    assert sum(int(r[f"{TFC1} instances"]) for r in overlap
               if r["Ranker"] == "bm25") == tfc1["n"]
    datasets = {r[""]: r for r in rows("axiom-datasets")}
    assert int(datasets["Diagnostic dataset size"][TFC1]) == tfc1["instances"]
    assert int(datasets["Agree with relevance"][TFC1]) == tfc1["relevance_agree"]
    assert int(datasets["Disagree with relevance"][TFC1]) == tfc1["relevance_disagree"]
    assert int(datasets["Tie with relevance"][TFC1]) == tfc1["relevance_ties"]
    for slug in ("axiom-counts", "axiom-satisfied", "axiom-satisfied-delta", "axiom-overlap",
                 "axiom-datasets"):
        for row in rows(slug):
            values = [v for k, v in row.items() if k not in ("", "Probe", "Ranker",
                                                             "Overlap group")]
            assert values and all(plain(v) for v in values), (slug, row)
    # report.md keeps the compact cells
    assert "/ " in (out / "report.md").read_text()


def test_compare_names_why_nothing_was_tested_in_a_one_query_run(tmp_path, capsys):
    """Probes in common, but every test undefined: the runs' samples come from one query."""
    one = _run(tmp_path / "one", "--queries", "1", "--ranker", "ql", probe="tmp:shuffle-words")
    capsys.readouterr()
    line = one_error_line(capsys, "compare", str(one), "--a", "bm25", "--b", "ql")
    assert "no probe in common" not in line
    assert "1 probe(s) in common" in line and "from 1 query" in line
    assert "at least 2 queries" in line


def test_compare_refuses_a_subset_the_runs_do_not_have(demo_run, capsys):
    line = one_error_line(capsys, "compare", str(demo_run), str(demo_run), "--a", "bm25",
                          "--b", "bm25", "--subsets", "all,relevnt")
    assert "--subsets: no subset 'relevnt'" in line and "did you mean relevant" in line
    assert "all, non-relevant, relevant" in line


def test_compare_md_escapes_the_names_above_its_table(tmp_path):
    folder = _run(tmp_path / "run <img src=x onerror=alert(1)> | x")
    assert main(["compare", str(folder), str(folder), "--a", "bm25", "--b", "bm25",
                 "--out", str(tmp_path / "cmp")]) == 0
    text = (tmp_path / "cmp" / "compare.md").read_text(encoding="utf-8")
    note = text.split("\n\n")[1]
    assert note.startswith("A: bm25 (") and "<img" not in text
    assert "&lt;img src=x onerror=alert(1)> \\| x" in note


def test_the_summary_line_of_a_listwise_run_counts_its_windows(tmp_path, capsys):
    from abnirml.report.run_outputs import pairs_sentence

    assert main(["run", "--probe", "tmp:append-query", "--ranker", "listwise-of:bm25",
                 "--out", str(tmp_path / "out"), "--no-effectiveness", "--no-cache"]) == 0
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    counts = json.loads((tmp_path / "out" / "run.json").read_text(encoding="utf-8"))["counts"]
    assert counts["scored"] == counts["from_cache"] == 0 and counts["windows_ranked"] > 20
    assert f"listwise windows: {counts['windows_ranked']:,} ranked, 0 cached" in summary
    assert "0 computed" not in summary
    sentence = pairs_sentence({"counts": counts, "rankers": [{"name": "listwise-of:bm25"}]})
    assert "0 computed" not in sentence and f"{counts['windows_ranked']:,} ranked" in sentence
