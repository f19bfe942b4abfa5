"""Ranker families are records: a user family declared in one plugin file is listed with its
parameters, refuses a bad value or an unknown key in one line, and runs end to end; every
built-in family's listing shows every parameter its factory reads."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from abnirml.cli import main
from abnirml.plugins import forget_plugins
from abnirml.rankers import registry as ranker_registry
from abnirml.rankers.base import RankerSpec

PLUGIN = '''
from dataclasses import dataclass

import numpy as np

from abnirml.plugin import RankerFamily, ranker_parameters, register_ranker, setting


@dataclass(frozen=True)
class OverlapParams:
    a: int = setting(1, minimum=1, maximum=5, help="points per shared word")
    unit: str = setting("words", choices=("words", "chars"), help="what is compared")


class Overlap:
    def __init__(self, name, a, unit):
        self.name, self.a, self.unit = name, a, unit
        self.fingerprint = f"overlap-v1:{a}:{unit}"

    def score(self, pairs):
        def parts(text):
            return set(text.split()) if self.unit == "words" else set(text)
        return np.array([self.a * len(parts(q) & parts(d)) for q, d in pairs], dtype=float)


def build(spec, env):
    p = ranker_parameters(spec)
    return Overlap(spec.canonical, p.a, p.unit)


register_ranker(RankerFamily("myfam", build, "shared query words, times +a", OverlapParams))
'''


@pytest.fixture(autouse=True)
def _clean():
    before = set(ranker_registry.families())
    yield
    for name in set(ranker_registry.families()) - before:
        ranker_registry.unregister(name)
    forget_plugins()


def _plugin(tmp_path: Path) -> str:
    path = tmp_path / "myfam.py"
    path.write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    return str(path)


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("abnirml: error:")]
    assert len(lines) == 1, err
    return lines[0]


def test_a_user_family_is_listed_with_its_typed_parameters(tmp_path, capsys):
    assert main(["rankers", "--plugin", _plugin(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("myfam\t"))
    assert lines[at].split("\t")[1] == ("myfam[+a=1][+unit=words|chars] — shared query "
                                        "words, times +a")
    assert lines[at + 1] == "  +a\tint (≥ 1, ≤ 5), default 1\tpoints per shared word"
    assert lines[at + 2] == "  +unit\tstr (words|chars), default words\twhat is compared"


@pytest.mark.parametrize(("spec", "expected"), [
    ("myfam+a=9", "ranker myfam+a=9: a=9 must be in [1, 5]"),
    ("myfam+a=two", "ranker myfam+a=two: a: 'two' is not"),
    ("myfam+unit=char", "ranker myfam+unit=char: unit must be words or chars, got 'char'"),
    ("myfam+aa=1", "ranker myfam+aa=1: unknown parameter 'aa' (did you mean a?) "
                   "(allowed: a, unit)"),
])
def test_a_bad_value_or_unknown_key_is_one_line(tmp_path, capsys, spec, expected):
    assert main(["run", "--plugin", _plugin(tmp_path), "--ranker", spec, "--probe",
                 "tmp:prepend-query", "--quiet", "--out", str(tmp_path / "o")]) == 2
    assert _one_line_error(capsys).startswith(f"abnirml: error: {expected}")
    assert not (tmp_path / "o" / "results.jsonl").exists()


def test_a_user_family_runs_end_to_end(tmp_path):
    out = tmp_path / "out"
    assert main(["run", "--plugin", _plugin(tmp_path), "--ranker", "myfam+a=1", "--probe",
                 "tmp:prepend-query", "--no-effectiveness", "--quiet", "--out", str(out)]) == 0
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert records and all(r["ranker"] == "myfam+a=1" for r in records)
    # prepending the query adds every query word: the overlap never falls
    assert all(r["neg"] == 0 for r in records)


def test_the_cross_encoder_lists_all_six_parameters():
    record = ranker_registry.lookup("cross-encoder")
    assert record is not None
    assert record.param_names() == ["output", "max_length", "revision", "dtype", "max_tokens",
                                    "batch_size"]


def test_every_built_in_family_refuses_an_unknown_key_with_the_closest_name():
    from abnirml.errors import ConfigError

    for key in ranker_registry.families():
        record = ranker_registry.lookup(key)
        if record is None or record.open_params or not record.param_names():
            continue
        first = record.param_names()[0]
        spec = RankerSpec.parse(f"{key}+{first}x=1")
        with pytest.raises(ConfigError, match=rf"did you mean [^)]*\b{first}\b"):
            record.check(spec)


def test_declared_defaults_are_the_ones_the_factories_apply():
    """The records list defaults without importing the model modules; these are the
    modules' own constants, so the listing cannot drift from what runs."""
    from abnirml.rankers import (
        adapters,
        causal_lm,
        cross_encoder,
        doc2query,
        monot5,
        pairwise,
        passages,
        splade,
    )
    from abnirml.rankers.learned import train

    def default(family: str, name: str):
        record = ranker_registry.lookup(family)
        assert record is not None
        return next(f.default for f in record.params.__dataclass_fields__.values()
                    if f.name == name)

    assert default("cross-encoder", "max_length") == cross_encoder.DEFAULT_MAX_LENGTH
    assert default("monot5", "max_length") == monot5.DEFAULT_MAX_LENGTH
    assert default("splade", "max_length") == splade.DEFAULT_MAX_LENGTH
    assert default("lm", "max_length") == causal_lm.DEFAULT_MAX_LENGTH
    assert default("lm", "head") in causal_lm.HEADS
    assert default("duot5", "rerank_depth") == pairwise.DEFAULT_RERANK_DEPTH
    assert default("lm-pairwise", "rerank_depth") == pairwise.DEFAULT_RERANK_DEPTH
    assert default("doc2query", "n") == doc2query.DEFAULT_QUERIES
    assert default("doc2query", "top_k") == doc2query.DEFAULT_TOP_K
    assert default("doc2query", "max_new_tokens") == doc2query.DEFAULT_MAX_NEW_TOKENS
    assert default("doc2query", "max_input_length") == doc2query.DEFAULT_MAX_INPUT
    assert default("maxp", "passage_length") == passages.DEFAULT_LENGTH
    assert default("maxp", "passage_stride") == passages.DEFAULT_STRIDE
    assert default("http", "timeout") == 60.0
    for kind in ("knrm", "cknrm", "lgbm"):
        for name, value in train.DEFAULTS[kind].items():
            assert default(kind, name) == value, (kind, name)
        assert default(kind, "folds") == train.DEFAULT_FOLDS
    record = ranker_registry.lookup("http")
    assert record is not None and record.needs_network
    assert dict(record.params.__dataclass_fields__["timeout"].metadata)["maximum"] == \
        adapters.MAX_HTTP_TIMEOUT
