"""Python-API slips a notebook user plausibly makes: each is one clear AbnirmlError naming
what was wrong, raised before work starts, never an AttributeError or TypeError from deep
inside (and never a silently wrong run, such as a string iterated letter by letter)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from abnirml.errors import ConfigError, ScoringError
from abnirml.pipeline import RunConfig, run
from tests._contexts import run_config

DEMO = Path(__file__).resolve().parents[2] / "src" / "abnirml" / "data" / "demo"


def _config(**fields) -> RunConfig:
    """A small run; fields of the session and statistics records go into those records."""
    return run_config({"rankers": ["bm25"], "probes": ["mmp:tf:length"],
                       "effectiveness": False}, {"cache": None, "progress": False},
                      {"bootstrap": 0}, **fields)


@pytest.mark.parametrize(("fields", "message"), [
    ({"rankers": "bm25"}, "RunConfig.rankers must be a list, got the string 'bm25'"),
    ({"probes": "mmp:tf:length"}, "RunConfig.probes must be a list, got the string"),
    ({"probes": [3]}, "each probe is a name or pattern string, got int 3"),
    ({"variant_groups": {"k": "bm25,ql"}}, "RunConfig.variant_groups['k'] must be a list"),
    ({"variant_groups": {"k": [object()]}}, "members are ranker spec strings, got object"),
    ({"alpha": "0.05"}, "RunConfig.statistics.alpha must be a number, got str '0.05'"),
    ({"delta": "0.5"}, "RunConfig.statistics.delta must be a number"),
    ({"deltas": {"bm25": None}}, "RunConfig.statistics.deltas['bm25'] must be a number"),
    ({"seed": "1"}, "RunConfig.seed must be an integer, got str '1'"),
    ({"examples_per_probe": -1}, "RunConfig.examples_per_probe must be ≥ 0"),
    ({"collection": 7}, "RunConfig.collection must be a path or a string, got int 7"),
    ({"grade_bands": (("relevant", 3, 1),)}, "RunConfig.grade_bands: invalid band"),
    ({"grade_bands": "relevant=2-3"}, "RunConfig.grade_bands must be a tuple"),
    ({"options": ["tmp.typo_rate=0.1"]}, "RunConfig.options must be a dict"),
    ({"options": {1: 2}}, "RunConfig.options: keys are 'family.key' strings, got int 1"),
    ({"progress": "no"}, "RunConfig.session.progress must be True, False or None, got str 'no'"),
])
def test_mistyped_run_config_fields_are_one_config_error(fields, message):
    with pytest.raises(ConfigError) as raised:
        run(_config(**fields))
    assert message in str(raised.value)


@pytest.mark.parametrize(("fields", "message"), [
    ({"session": {"cache": None}}, "RunConfig.session must be a SessionSettings(...), got dict"),
    ({"statistics": None}, "RunConfig.statistics must be a StatisticsSettings(...), got "
                           "NoneType"),
])
def test_nested_records_of_the_wrong_type_are_one_config_error(fields, message):
    with pytest.raises(ConfigError) as raised:
        run(RunConfig(rankers=["bm25"], probes=["mmp:tf:length"], **fields))
    assert message in str(raised.value)


def test_progress_argument_is_a_boolean():
    with pytest.raises(ConfigError, match=r"run\(progress=…\) must be True, False or None"):
        run(_config(), progress="off")


def test_run_refuses_what_is_not_a_run_config():
    with pytest.raises(ConfigError, match=r"run\(\) takes a RunConfig, got dict"):
        run({"rankers": ["bm25"]})


def test_paths_are_accepted_wherever_a_path_is(tmp_path):
    by_path = run(_config(collection=DEMO, out=tmp_path / "out", cache=tmp_path / "s.sqlite"))
    by_name = run(_config())
    assert by_path.to_frame().score.tolist() == by_name.to_frame().score.tolist()
    assert (tmp_path / "out" / "results.jsonl").is_file()
    assert by_path.run_info["collection"]["queries"] == 16


def test_grade_bands_given_as_lists_work_like_tuples():
    as_lists = run(_config(probes=["tmp:reverse-words"],
                           grade_bands=[["low", 0, 1], ["high", 2, 3]]))
    as_tuples = run(_config(probes=["tmp:reverse-words"],
                            grade_bands=(("low", 0, 1), ("high", 2, 3))))
    assert as_lists.to_frame().equals(as_tuples.to_frame())
    assert set(as_lists.to_frame().subset) == {"all", "low", "high"}


class LengthRanker:
    """A custom ranker written the README's way: name, fingerprint, score(pairs)."""

    name = "length"
    fingerprint = "length-v1"

    def score(self, pairs):
        return np.array([float(len(doc)) for _, doc in pairs])


class Returning(LengthRanker):
    def __init__(self, make):
        self.make = make

    def score(self, pairs):
        return self.make(len(pairs))


@pytest.mark.parametrize(("make", "message"), [
    (lambda n: None, "returned None instead of"),
    (lambda n: ["high"] * n, "returned text such as 'high' among its scores"),
    (lambda n: 0.5, "returned 0.5 instead of"),
    (lambda n: np.zeros((n, 2)), "returned an array of shape"),
    (lambda n: np.zeros(n - 1), "scores for"),
    (lambda n: np.full(n, np.nan), "NaN score(s)"),
])
def test_a_ranker_returning_unusable_scores_is_one_scoring_error(make, message):
    with pytest.raises(ScoringError) as raised:
        run(_config(rankers=[Returning(make)]))
    assert message in str(raised.value) and "ranker length" in str(raised.value)


def test_scores_as_a_list_or_a_column_are_one_score_per_pair():
    lengths = LengthRanker()
    plain = run(_config(rankers=[lengths])).to_frame()
    for shape in (lambda a: a.tolist(), lambda a: a.reshape(-1, 1)):
        ranker = Returning(None)
        ranker.score = lambda pairs, shape=shape: shape(lengths.score(pairs))
        assert run(_config(rankers=[ranker])).to_frame().score.tolist() == plain.score.tolist()


class NumberNamed(LengthRanker):
    name = 5


class Unnamed(LengthRanker):
    fingerprint = ""


@pytest.mark.parametrize(("ranker", "message"), [
    (LengthRanker, "ranker LengthRanker is a class; pass an instance, e.g. LengthRanker()"),
    (NumberNamed(), "ranker NumberNamed: 'name' must be a non-empty string, got 5"),
    (Unnamed(), "ranker Unnamed: 'fingerprint' must be a non-empty string, got ''"),
])
def test_a_malformed_ranker_object_is_one_config_error(ranker, message):
    with pytest.raises(ConfigError) as raised:
        run(_config(rankers=[ranker]))
    assert message in str(raised.value)


def test_a_probe_that_is_not_a_string_is_one_config_error():
    from abnirml.expect import expect

    with pytest.raises(ConfigError, match=r"a probe is named by a string .* got list "
                                          r"\['mmp:tf:length'\]"):
        expect("bm25", ["mmp:tf:length"])


def test_expect_takes_what_run_takes(tmp_path):
    """A Ranker object, a PyTerrier-style transformer and a collection given as a Path."""
    from abnirml.expect import expect

    pytest.importorskip("pandas")

    class LengthTransformer:                      # transform(DataFrame) → score column
        def transform(self, frame):
            return frame.assign(score=[float(len(t)) for t in frame["text"]])

    by_object = expect(LengthRanker(), "mmp:tf:length", collection=DEMO)
    by_transformer = expect(LengthTransformer(), "mmp:tf:length")
    assert by_object.n == by_transformer.n == 26
    assert by_object.score == by_transformer.score
    with pytest.raises(ConfigError, match="ranker 3: expected a spec string, a Ranker"):
        expect(3, "mmp:tf:length")


def test_a_path_named_demo_is_a_directory_not_the_shipped_demo(tmp_path, monkeypatch):
    from abnirml.data.collection import collection_spec
    from abnirml.errors import InputError

    monkeypatch.chdir(tmp_path)
    assert collection_spec("demo") == "demo" and collection_spec(Path("demo")) == "./demo"
    with pytest.raises(InputError, match="collection not found"):
        run(_config(collection=Path("demo")))


def test_load_results_takes_the_folder_or_its_results_file(tmp_path):
    import abnirml

    pytest.importorskip("pandas")
    output = run(_config(out=tmp_path / "out"))
    from_folder = abnirml.load_results(tmp_path / "out")
    from_file = abnirml.load_results(tmp_path / "out" / "results.jsonl")
    assert from_file.equals(from_folder) and from_folder.equals(output.to_frame())
    for load in (abnirml.load_results, abnirml.load_samples, abnirml.load_scores):
        with pytest.raises(ConfigError, match=r"takes .*str or Path, got int 3"):
            load(3)


@pytest.fixture
def registered():
    """Ranker families registered for one test, forgotten afterwards."""
    from abnirml.rankers.registry import register
    from abnirml.registry import scoped_registrations

    with scoped_registrations():
        yield register


@pytest.mark.parametrize(("factory", "message"), [
    (lambda spec: LengthRanker(), "ranker factory for 'mine' (<lambda>) must take three arguments"),
    (lambda spec, env: None, "ranker factory for 'mine' gave NoneType None, which has no "
                             "score(pairs)"),
    (lambda spec, env: NumberNamed(), "ranker factory for 'mine': 'name' must be a "
                                      "non-empty string, got 5"),
])
def test_a_misbehaving_factory_is_one_config_error(registered, factory, message):
    registered("mine", factory)
    with pytest.raises(ConfigError) as raised:
        run(_config(rankers=["mine"]))
    assert message in str(raised.value)


def test_a_registered_factory_gets_the_spec_and_its_name(registered):
    registered("mine", lambda spec, env: LengthRanker())
    frame = run(_config(rankers=["mine@short", "bm25"])).to_frame()
    assert list(frame.ranker) == ["short", "bm25"]


class EchoProbe:
    """A user probe written the README's way: name, family, symmetric, samples(context)."""

    name, family, symmetric = "tmp:echo-test", "tmp", False

    def samples(self, context):
        from abnirml.samples import Sample

        for qid in sorted(context.collection.queries)[:3]:
            query = context.collection.queries[qid]
            yield Sample(query, query, "zzzq", {"qid": qid})


class TupleProbe(EchoProbe):
    name = "tmp:tuple-test"

    def samples(self, context):
        yield ("query", "doc one", "doc two")


class NoSamplesProbe:
    name, family, symmetric = "tmp:none-test", "tmp", False


def test_a_registered_probe_runs_and_a_malformed_one_is_one_config_error():
    from abnirml.probes.probe_registry import register
    from abnirml.registry import scoped_registrations

    with scoped_registrations():
        register(EchoProbe())
        (record,) = run(_config(probes=["tmp:echo-test"])).result.records
        assert (record["n"], record["score"]) == (3, 1.0)
        with pytest.raises(ConfigError, match="EchoProbe is a class; register an instance"):
            register(EchoProbe)
        with pytest.raises(ConfigError, match="probe tmp:none-test has no samples"):
            register(NoSamplesProbe())
        register(TupleProbe())
        with pytest.raises(ConfigError, match=r"probe tmp:tuple-test: samples\(\) yielded "
                                              r"tuple \('query'"):
            run(_config(probes=["tmp:tuple-test"]))
