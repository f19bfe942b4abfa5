"""Python-API slips a notebook user plausibly makes: each is one clear AbnirmlError naming
what was wrong, raised before work starts, never an AttributeError or TypeError from deep
inside (and never a silently wrong run, such as a string iterated letter by letter)."""

from __future__ import annotations

from pathlib import Path

import pytest

from abnirml.errors import ConfigError
from abnirml.pipeline import RunConfig, run

DEMO = Path(__file__).resolve().parents[1] / "src" / "abnirml" / "data" / "demo"


def _config(**fields) -> RunConfig:
    base = dict(rankers=["bm25"], probes=["mmp:tf:length"], cache=None, effectiveness=False,
                progress=False, bootstrap=0)
    base.update(fields)
    return RunConfig(**base)


@pytest.mark.parametrize(("fields", "message"), [
    ({"rankers": "bm25"}, "RunConfig.rankers must be a list, got the string 'bm25'"),
    ({"probes": "mmp:tf:length"}, "RunConfig.probes must be a list, got the string"),
    ({"probes": [3]}, "each probe is a name or pattern string, got int 3"),
    ({"variant_groups": {"k": "bm25,ql"}}, "RunConfig.variant_groups['k'] must be a list"),
    ({"alpha": "0.05"}, "RunConfig.alpha must be a number, got str '0.05'"),
    ({"delta": "0.5"}, "RunConfig.delta must be a number"),
    ({"deltas": {"bm25": None}}, "RunConfig.deltas['bm25'] must be a number"),
    ({"seed": "1"}, "RunConfig.seed must be an integer, got str '1'"),
    ({"examples_per_probe": -1}, "RunConfig.examples_per_probe must be ≥ 0"),
    ({"collection": 7}, "RunConfig.collection must be a path or a string, got int 7"),
    ({"grade_bands": (("relevant", 3, 1),)}, "RunConfig.grade_bands: invalid band"),
    ({"grade_bands": "relevant=2-3"}, "RunConfig.grade_bands must be a tuple"),
    ({"options": ["tmp.typo_rate=0.1"]}, "RunConfig.options must be a dict"),
])
def test_mistyped_run_config_fields_are_one_config_error(fields, message):
    with pytest.raises(ConfigError) as raised:
        run(_config(**fields))
    assert message in str(raised.value)


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
