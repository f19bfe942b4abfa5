"""The spaCy parse store: exact round trips, reuse across runs without spaCy, sound keys,
and a damaged or foreign file handled without losing data or touching the user's file."""

from __future__ import annotations

import json
import sqlite3
import warnings

import numpy as np
import pytest

from abnirml.probes.manipulation import edits as m
from abnirml.probes.manipulation import original_edits as mo
from abnirml.probes.manipulation import probes as manipulation
from abnirml.probes.parse_cache import ParseCache
from abnirml.probes.probe_registry import select_probes
from abnirml.probes.transfer.queries import FeatureStore
from abnirml.samples import Sample
from abnirml.text import nlp
from abnirml.text.parsed import ParsedText
from abnirml.text.stopwords import load_stopwords
from tests._contexts import probe_context

pytest.importorskip("spacy")

TEXTS = ["Bake the 3 cups of flour at 200 degrees for 20 minutes in the old oven.",
         "The keeper of the lighthouse didn't paint the doors; he was running late.",
         "Paris is the capital of France, and 2,000 people live on the island of Ré."]


def _identity(value):
    return value


def _parses(texts):
    return [ParsedText.from_doc(doc) for doc in m.parse_texts(texts)]


def _forbid(*_args, **_kwargs):
    raise AssertionError("spaCy was used although every parse was stored")


def test_parsed_text_round_trips_through_json_exactly():
    for parsed in _parses(TEXTS):
        back = ParsedText.from_json(json.loads(json.dumps(parsed.to_json())))
        assert back == parsed
        assert [c.tokens for c in back.noun_chunks] == [c.tokens for c in parsed.noun_chunks]
    assert any(t.like_num for p in _parses(TEXTS) for t in p)
    with pytest.raises(ValueError):
        ParsedText.from_json([[["x"]], []])


def test_manipulations_give_the_same_text_from_a_doc_and_from_its_stored_values():
    docs = list(m.parse_texts(TEXTS))
    functions = [m.lemmatize, m.shuffle_prepositions, m.swap_noun_chunks,
                 mo.shuffle_words_keep_noun_chunks, mo.reverse_noun_chunks,
                 mo.shuffle_words_in_sentences_keep_noun_chunks, mo.swap_number_chunks]
    changed = 0
    for text, doc in zip(TEXTS, docs, strict=True):
        stored = ParsedText.from_json(json.loads(json.dumps(ParsedText.from_doc(doc).to_json())))
        for function in functions:
            outputs = [function("query", text, m.ManipulationContext(parses={text: parse}),
                                np.random.default_rng(7)) for parse in (doc, stored)]
            assert outputs[0] == outputs[1], function.__name__
            changed += outputs[0] not in (None, text)
    assert changed >= 10


def test_values_are_reused_in_order_and_built_once(tmp_path):
    path = tmp_path / "parses.sqlite"
    built: list[list[str]] = []

    def build(texts):
        built.append(list(texts))
        return [len(t) for t in texts]

    first = ParseCache(path).get_or_build("k", ["b", "a", "b"], build, _identity, _identity)
    assert list(first.items()) == [("b", 1), ("a", 1)] and built == [["b", "a"]]
    again = ParseCache(path).get_or_build("k", ["c", "a", "b"], build, _identity, _identity)
    assert list(again) == ["c", "a", "b"] and built[-1] == ["c"]
    ParseCache(path).get_or_build("other kind", ["a"], build, _identity, _identity)
    assert built[-1] == ["a"]                       # another kind never reuses an entry


def test_a_new_pipeline_version_parses_again(tmp_path, monkeypatch):
    path = tmp_path / "parses.sqlite"
    calls = []

    def build(texts):
        calls.append(texts)
        return texts

    ParseCache(path).get_or_build("k", ["a"], build, _identity, _identity)
    monkeypatch.setattr(nlp, "pipeline_identity", lambda: "en_core_web_sm==9.9;spacy==9.9")
    ParseCache(path).get_or_build("k", ["a"], build, _identity, _identity)
    assert len(calls) == 2


def test_pipeline_identity_does_not_import_spacy():
    import subprocess
    import sys

    code = ("import sys; from abnirml.text.nlp import pipeline_identity; "
            "i = pipeline_identity(); print(i, 'spacy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert "spacy==" in out[0] and out[1] == "False"


def test_a_rerun_builds_the_same_manipulation_samples_without_spacy(demo_collection, tmp_path,
                                                                     monkeypatch):
    names = ["tmp:lemmatize", "tmp:swap-noun-chunks", "tmp:swap-number-chunks"]

    def samples(context):
        return {n: list(select_probes([n])[0].samples(context)) for n in names}

    def context():
        return probe_context(collection=demo_collection, options={"tmp.sample": 40},
                             parse_cache=ParseCache(tmp_path / "parses.sqlite"))

    cold = samples(context())
    assert sum(isinstance(s, Sample) for n in names for s in cold[n]) > 20
    monkeypatch.setattr(manipulation.m, "parse_texts", _forbid)
    monkeypatch.setattr(nlp, "load_pipeline", _forbid)
    assert samples(context()) == cold


def test_transfer_features_are_stored_per_stopword_list(tmp_path, monkeypatch):
    path = tmp_path / "parses.sqlite"
    stopwords = load_stopwords("default")
    cold = FeatureStore(stopwords, cache=ParseCache(path))
    cold.ensure(TEXTS, chunks=True)
    cold.ensure(TEXTS, chunks=False)
    monkeypatch.setattr(nlp, "load_pipeline", _forbid)
    warm = FeatureStore(stopwords, cache=ParseCache(path))
    warm.ensure(TEXTS, chunks=True)
    warm.ensure(TEXTS, chunks=False)
    assert all(warm.get(t) == cold.get(t) for t in TEXTS)
    assert [c for c, _ in warm.get(TEXTS[0]).chunks] == [c for c, _ in cold.get(TEXTS[0]).chunks]
    with pytest.raises(AssertionError, match="spaCy was used"):
        FeatureStore(frozenset({"the"}), cache=ParseCache(path)).ensure(TEXTS, chunks=True)


def test_a_damaged_store_is_set_aside_once_and_the_values_are_built(tmp_path):
    path = tmp_path / "parses.sqlite"
    ParseCache(path).get_or_build("k", ["a"], lambda t: [1] * len(t), _identity, _identity)
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)
    path.write_bytes(bytes(data))
    for side in ("-wal", "-shm"):
        (tmp_path / f"parses.sqlite{side}").unlink(missing_ok=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = ParseCache(path).get_or_build("k", ["a", "b"], lambda t: [2] * len(t),
                                            _identity, _identity)
    assert got == {"a": 2, "b": 2}
    assert len([w for w in caught if "damaged" in str(w.message)]) == 1
    assert (tmp_path / "parses.sqlite.corrupt").read_bytes() == bytes(data)
    assert ParseCache(path).get_or_build("k", ["b"], _forbid, _identity, _identity) == {"b": 2}


def test_a_row_that_does_not_decode_is_rebuilt_and_replaced(tmp_path):
    path = tmp_path / "parses.sqlite"

    def decode(value):
        if not isinstance(value, int):
            raise ValueError("bad")
        return value

    ParseCache(path).get_or_build("k", ["a"], lambda t: [1], _identity, decode)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE parses SET value = '\"x\"'")
    assert ParseCache(path).get_or_build("k", ["a"], lambda t: [5], _identity, decode) == {"a": 5}
    assert ParseCache(path).get_or_build("k", ["a"], _forbid, _identity, decode) == {"a": 5}


def test_a_file_that_is_not_sqlite_is_left_alone(tmp_path):
    path = tmp_path / "parses.sqlite"
    path.write_text("my notes\n")
    with pytest.warns(UserWarning, match="not a SQLite file"):
        got = ParseCache(path).get_or_build("k", ["a"], lambda t: [3], _identity, _identity)
    assert got == {"a": 3} and path.read_text() == "my notes\n"


def test_two_open_stores_on_one_file_share_their_entries(tmp_path):
    path = tmp_path / "parses.sqlite"
    one, two = ParseCache(path), ParseCache(path)
    one.get_or_build("k", ["a"], lambda t: [1], _identity, _identity)
    two.get_or_build("k", ["b"], lambda t: [2], _identity, _identity)
    assert one.get_or_build("k", ["a", "b"], _forbid, _identity, _identity) == {"a": 1, "b": 2}
    one.close()
    two.close()


def test_the_run_keeps_its_parse_store_beside_the_score_cache(tmp_path):
    from abnirml.evaluation.execution.workspace import SessionSettings, Workspace

    cache = tmp_path / "elsewhere" / "scores.sqlite"
    workspace = Workspace("demo", SessionSettings(cache=str(cache)))
    assert workspace.probe_context().parse_cache.path == tmp_path / "elsewhere" / "parses.sqlite"
    assert Workspace("demo", SessionSettings(cache=None)).parse_cache.path is None
