"""A probe with nothing to measure is left out of pattern selections, and the run says so once."""

import json
import warnings

import pytest

from abnirml.cli import main
from abnirml.pipeline import RunConfig, SessionSettings, run
from abnirml.probes.probe_registry import OMITTED_KEY, omit_unavailable, select_probes

DOCT5 = "tmp:add-doct5query"


def _tmp_settings(**values):
    from abnirml.probes.family_registry import resolve_options

    return resolve_options(values).settings


@pytest.mark.parametrize("patterns", [["all"], ["tmp"], ["TMP:add-*"], ["tmp:*", "mmp:tf:*"]])
def test_patterns_leave_doct5query_out_without_expansions(patterns):
    kept, omitted = omit_unavailable(select_probes(patterns), patterns, _tmp_settings())
    assert DOCT5 not in [p.name for p in kept]
    assert [o["probe"] for o in omitted] == [DOCT5]
    assert "tmp.doct5query_file" in omitted[0]["reason"]
    assert "tmp:add-nonrel-sentence" in [p.name for p in kept]


def test_named_probe_or_expansions_keep_it(tmp_path):
    kept, omitted = omit_unavailable(select_probes(["all", "Tmp:Add-DocT5Query"]),
                                     ["all", "Tmp:Add-DocT5Query"], _tmp_settings())
    assert DOCT5 in [p.name for p in kept] and omitted == []
    settings = _tmp_settings(**{"tmp.doct5query_file": str(tmp_path / "x.tsv")})
    kept, omitted = omit_unavailable(select_probes(["tmp"]), ["tmp"], settings)
    assert DOCT5 in [p.name for p in kept] and omitted == []


def test_run_records_the_omission_once_and_writes_no_empty_row(tmp_path):
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # the "every sample skipped" warning is gone
        output = run(RunConfig(rankers=["bm25"], probes=["tmp:add-*"], out=str(out),
                               effectiveness=False,
                               session=SessionSettings(cache=None, progress=False)))
    assert {r["probe"] for r in output.result.records} == {"tmp:add-nonrel-sentence",
                                                           "tmp:add-nonrel-sentence-start"}
    info = json.loads((out / "run.json").read_text())
    assert [o["probe"] for o in info[OMITTED_KEY]] == [DOCT5]
    report = (out / "report.md").read_text()
    lines = [line for line in report.splitlines() if DOCT5 in line]
    assert lines == [f"Left out: `{DOCT5}`: {info[OMITTED_KEY][0]['reason']}."]


def test_run_without_omissions_has_no_key(tmp_path):
    output = run(RunConfig(rankers=["bm25"], probes=["mmp:tf:length"], effectiveness=False,
                           session=SessionSettings(cache=None, progress=False)))
    assert OMITTED_KEY not in output.run_info


def test_explicit_request_still_warns_and_runs(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", "--ranker", "bm25", "--probe", DOCT5, "--out", str(out), "--quiet",
                 "--no-cache", "--no-effectiveness"]) == 0
    err = capsys.readouterr().err
    assert err.count("no DocT5Query expansions") == 1
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {r["probe"] for r in records} == {DOCT5}
    assert all(r["n"] == 0 for r in records)
    assert OMITTED_KEY not in json.loads((out / "run.json").read_text())


def test_only_unavailable_probes_selected_is_one_line_error(tmp_path, capsys):
    code = main(["run", "--ranker", "bm25", "--probe", "tmp:add-doct*", "--out",
                 str(tmp_path / "out"), "--quiet", "--no-cache"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"abnirml: error: no probe left to run: {DOCT5}: ")
