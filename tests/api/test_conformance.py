"""abnirml.testing: the built-in families pass every conformance check, and each check
catches the defect it is there for (a plugin written with exactly that defect fails exactly
that check)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from abnirml.registry import scoped_registrations
from abnirml.testing import (
    ConformanceError,
    check_probe_family,
    check_ranker,
    probe_family_checks,
    ranker_checks,
)


@pytest.fixture(autouse=True)
def _clean_registries():
    with scoped_registrations():
        yield


def _plugin(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


def _failed(results_or_error) -> dict[str, str]:
    return {r.name: r.problem for r in results_or_error if not r.passed}


def _failures(checks) -> dict[str, str]:
    return _failed([check.result() for check in checks])


@pytest.mark.parametrize("spec", ["bm25", "ql+mu=1500", "tfidf", "lgbm", "listwise-of:bm25"])
def test_built_in_lexical_and_learned_rankers_pass_every_check(spec):
    results = check_ranker(spec)
    assert len(results) == 8 and all(r.passed for r in results)


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["biencoder", "splade", "wmd:glove"])
def test_built_in_packaged_models_pass_every_check(spec):
    assert all(r.passed for r in check_ranker(spec))


@pytest.mark.slow
def test_a_cross_encoder_of_real_shape_passes_every_check(tmp_path):
    from tests._tiny_models import save_cross_encoder

    model = save_cross_encoder(tmp_path / "ce")
    results = check_ranker(f"cross-encoder:{model}")
    assert all(r.passed for r in results)
    # its parameters with declared alternatives were each tried against the fingerprint
    varied = next(r for r in results if r.name.startswith("every scoring parameter"))
    assert "output" not in varied.note and "max_length" not in varied.note


@pytest.mark.slow
def test_a_pairwise_t5_of_real_shape_passes_every_check(tmp_path):
    from tests._tiny_models import save_t5

    results = check_ranker(f"duot5:{save_t5(tmp_path / 't5')}")
    assert results[0].note == "a pairwise ranker" and all(r.passed for r in results)


LISTWISE = '''
from abnirml.plugin import RankerFamily, register_ranker


class Reverse:
    name, fingerprint, window_size = "reverse", "reverse-v1", 4

    def rank_windows(self, windows):
        return [ORDER for window in windows]


register_ranker(RankerFamily(key="reverse", factory=lambda spec, p, env: Reverse(),
                             description="each window backwards"))
'''


@pytest.mark.parametrize("order, failing", [
    ("tuple(reversed(range(len(window.passages))))", []),
    ("(0,) * len(window.passages)", ["one well-formed answer per item"]),
])
def test_a_listwise_ranker_must_answer_permutations(tmp_path, order, failing):
    plugin = _plugin(tmp_path, "reverse.py", LISTWISE.replace("ORDER", order))
    failed = _failures(ranker_checks("reverse", plugins=[plugin]))
    assert list(failed) == failing
    if failing:
        assert "returned [0, 0, 0, 0] for a window of 4 passages" in failed[failing[0]]


@pytest.mark.parametrize("key, options", [("mmp", {}), ("axiom", {}),
                                          ("dtp", {"dtp.data": "demo"})])
def test_built_in_probe_families_pass_every_check(key, options):
    results = check_probe_family(key, options=options)
    assert len(results) == 5 and all(r.passed for r in results)


@pytest.mark.slow
@pytest.mark.parametrize("key", ["tmp", "qvp"])
def test_built_in_text_editing_families_pass_every_check(key):
    assert all(r.passed for r in check_probe_family(key))


# -- each check catches its defect ------------------------------------------------------

RANKER = '''
import os
import numpy as np
from dataclasses import dataclass

from abnirml.plugin import RankerFamily, register_ranker, setting


@dataclass(frozen=True)
class Params:
    weight: float = setting(1.0, minimum=0, help="score per query word")
    batch_size: int = setting(32, minimum=1, scoring=False, help="pairs per call")


class Words:
    def __init__(self, name, params):
        self.name, self.weight = name, params.weight
        self.fingerprint = FINGERPRINT

    def score(self, pairs):
        raw = np.array([self.weight * sum(w in d.split() for w in q.split())
                        for q, d in pairs], dtype=np.float64)
        return SCORES


register_ranker(RankerFamily(key="words", factory=lambda spec, p, env: Words(spec.canonical, p),
                             description="query words in the document", params=Params))
'''

GOOD = {"FINGERPRINT": 'f"words-v1(weight={params.weight!r})"', "SCORES": "raw"}


@pytest.mark.parametrize("defect, replace, failing", [
    ("float32 scores", {"SCORES": "raw.astype(np.float32)"},
     "one well-formed answer per item|no items give an empty answer"),
    ("NaN for an empty document",
     {"SCORES": "np.where([d == '' for _, d in pairs], np.nan, raw)"},
     "one well-formed answer per item"),
    ("scores min-max normalised within the batch",
     {"SCORES": "raw / max(raw.max(), 1.0) if len(raw) else raw"},
     "answers do not depend on the batch"),
    ("unseeded noise", {"SCORES": "raw + np.random.default_rng().random(len(raw))"},
     "answers do not depend on the batch|answers are deterministic"),
    ("a fingerprint with hash()", {"FINGERPRINT": 'f"words-{hash(repr(params.weight))}"'},
     "the fingerprint is the same in a fresh process"),
    ("a fingerprint without the weight", {"FINGERPRINT": '"words-v1"'},
     "every scoring parameter changes the fingerprint, no other does"),
    ("a fingerprint with the batch size",
     {"FINGERPRINT": 'f"words-v1({params.weight!r},{params.batch_size})"'},
     "every scoring parameter changes the fingerprint, no other does"),
])
def test_a_ranker_with_a_defect_fails_exactly_its_check(tmp_path, defect, replace, failing):
    text = RANKER
    for key, value in {**GOOD, **replace}.items():
        text = text.replace(key, value)
    plugin = _plugin(tmp_path, "words.py", text)
    failed = _failures(ranker_checks("words", plugins=[plugin]))
    assert list(failed) == failing.split("|"), (defect, failed)


def test_a_sound_plugin_ranker_passes_and_a_failure_names_every_check(tmp_path):
    text = RANKER
    for key, value in GOOD.items():
        text = text.replace(key, value)
    plugin = _plugin(tmp_path, "words.py", text)
    assert all(r.passed for r in check_ranker("words+weight=2", plugins=[plugin]))

    broken = _plugin(tmp_path, "broken.py", text.replace("words", "broken").replace(
        "return raw", "return raw.astype(np.float32)").replace(
        'f"broken-v1(weight={params.weight!r})"', '"broken-v1"'))
    with pytest.raises(ConformanceError) as caught:
        check_ranker("broken", plugins=[broken])
    message = str(caught.value)
    assert message.startswith("ranker broken fails 3 of 8 conformance checks:")
    assert "dtype float32, not float64" in message
    assert "+weight=1.5, 0.5, 2.0, 0.0 leave the fingerprint 'broken-v1' unchanged" in message


def test_a_ranker_object_is_checked_as_far_as_an_object_can_be():
    import numpy as np

    class Length:
        name, fingerprint = "length", "length-v1"

        def score(self, pairs):
            return np.array([len(d) for _, d in pairs], dtype=np.float64)

    results = {r.name: r for r in check_ranker(Length())}
    assert all(r.passed for r in results.values())
    assert "only a spec" in results["the fingerprint is the same in a fresh process"].note


FAMILY = '''
import random
from dataclasses import dataclass

from abnirml.plugin import Family, Sample, register_family, setting


@dataclass(frozen=True)
class EchoOptions:
    queries: int = setting(3, minimum=1, help="how many queries")


class Echo:
    name, family, symmetric = "echo:query-vs-noise", "echo", False

    def samples(self, context):
        n = context.options(EchoOptions).queries
        for qid in sorted(context.collection.queries)[:n]:
            query = context.collection.queries[qid]
            yield Sample(query, query, NOISE, {"qid": QID, "grade": GRADE})


register_family(Family(key="echo", title="Echo", options=EchoOptions,
                       positive="d1 is the query", probes=lambda: [Echo()]))
'''

SOUND = {"NOISE": '"zzzq xxyq"', "QID": "qid", "GRADE": "1"}


@pytest.mark.parametrize("defect, replace, failing", [
    ("noise drawn without the context's generator", {"NOISE": 'str(random.random())'},
     "samples are the same for the same seed"),
    ("an infinite grade", {"GRADE": "float(\"inf\")"}, "samples are well formed"),
    ("a query the collection does not have", {"QID": '"no-such-query"'},
     "samples are well formed"),
])
def test_a_probe_family_with_a_defect_fails_exactly_its_check(tmp_path, defect, replace,
                                                              failing):
    text = FAMILY
    for key, value in {**SOUND, **replace}.items():
        text = text.replace(key, value)
    plugin = _plugin(tmp_path, "echo.py", text)
    assert list(_failures(probe_family_checks("echo", plugins=[plugin]))) == [failing], defect


def test_a_fast_path_that_disagrees_with_samples_is_caught(tmp_path):
    text = FAMILY
    for key, value in SOUND.items():
        text = text.replace(key, value)
    text += '''
from abnirml.probes.base import table_from_samples


def _fast(self, context):          # one query fewer than samples() gives
    return table_from_samples(list(self.samples(context))[1:], self.name)


Echo.sample_table = _fast
'''
    plugin = _plugin(tmp_path, "echo.py", text)
    failed = _failures(probe_family_checks("echo", plugins=[plugin]))
    assert list(failed) == ["sample_table gives what samples() gives"]
    assert "0 samples only in the table, 1 only in samples()" in failed[
        "sample_table gives what samples() gives"]
    with pytest.raises(ConformanceError, match="probe family echo fails 1 of 5"):
        check_probe_family("echo", plugins=[plugin])
