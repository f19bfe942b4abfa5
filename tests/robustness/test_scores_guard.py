"""Rankers returning unusable scores are stopped by name; constant rankers are fine."""

import numpy as np
import pytest

from abnirml.cli import main
from abnirml.pipeline import RunConfig, SessionSettings, run
from abnirml.rankers import registry
from abnirml.registry import scoped_registrations


class FixedRanker:
    def __init__(self, name, value):
        self.name = name
        self.fingerprint = f"fixed[{value!r}]"
        self.value = value

    def score(self, pairs):
        return np.full(len(pairs), self.value)


@pytest.fixture()
def fixed_rankers():
    with scoped_registrations():
        registry.register("nanrank", lambda spec, env: FixedRanker(spec.canonical,
                                                                   float("nan")))
        registry.register("infrank", lambda spec, env: FixedRanker(spec.canonical,
                                                                   float("inf")))
        registry.register("constrank", lambda spec, env: FixedRanker(spec.canonical, 0.5))
        yield


@pytest.mark.parametrize("name, kind", [("nanrank", "NaN"), ("infrank", "infinite")])
def test_non_finite_scores_are_rejected_by_ranker_name(fixed_rankers, capsys, tmp_path, name,
                                                       kind):
    code = main(["run", "--ranker", name, "--probe", "mmp:tf:length", "--quiet",
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert f"ranker {name} returned" in err[0] and kind in err[0]
    assert not (tmp_path / "out" / "results.jsonl").exists()


def test_constant_ranker_is_neutral_and_not_significant(fixed_rankers):
    output = run(RunConfig(rankers=["constrank", "bm25"], probes=["mmp:*"],
                           session=SessionSettings(cache=None, progress=False)))
    records = [r for r in output.result.records if r["ranker"] == "constrank"]
    assert output.result.calibrations["constrank"].delta == 0.0
    for record in records:
        assert record["score"] == 0.0
        assert record["neutral"] == record["n"]
        assert record["p_value"] == 1.0
        assert not record["significant"]
