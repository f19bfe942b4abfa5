"""The Python API and plugins obey the CLI's rules: strict types, no silent exits, scores
that are numbers within a range the statistics can handle."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from abnirml.cli import main
from abnirml.errors import ConfigError, ScoringError
from abnirml.pipeline import RunConfig, SessionSettings, StatisticsSettings, run
from abnirml.registry import scoped_registrations
from tests._contexts import run_config


@pytest.fixture(autouse=True)
def _forget_plugins():
    """Undo what each test's plugins registered, and that they were loaded."""
    with scoped_registrations():
        yield


def _config(tmp_path: Path, **fields) -> RunConfig:
    """A small run; fields of the session and statistics records go into those records."""
    return run_config({"collection": "demo", "rankers": ["bm25"],
                       "probes": ["tmp:shuffle-words"], "out": str(tmp_path / "out")},
                      {"cache": None, "progress": False}, {}, **fields)


def _field_name(field: str) -> str:
    """How the checks name ``field``: ``RunConfig.session.device`` for a session field."""
    if field in SessionSettings.__dataclass_fields__:
        return f"RunConfig.session.{field}"
    if field in StatisticsSettings.__dataclass_fields__:
        return f"RunConfig.statistics.{field}"
    return f"RunConfig.{field}"


# --- strict types -----------------------------------------------------------------------

@pytest.mark.parametrize(("field", "value"), [
    ("allow_pickle", "no"), ("allow_pickle", 0), ("effectiveness", "no"),
    ("effectiveness", None), ("ray_address", 5), ("device", 0), ("test", None),
])
def test_a_mistyped_switch_is_refused_naming_the_field(tmp_path, field, value):
    with pytest.raises(ConfigError, match=f"{_field_name(field)} must be"):
        run(_config(tmp_path, **{field: value}))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("address", ["ray://::::", "ray://[::1", "http://head:1",
                                     "head", "ray://head/x", ""])
def test_a_malformed_ray_address_is_refused_up_front(tmp_path, capsys, address):
    with pytest.raises(ConfigError, match="not a Ray address"):
        run(_config(tmp_path, ray_address=address))
    assert main(["run", "--ray", address, "--ranker", "bm25", "--probe",
                 "tmp:shuffle-words", "--out", str(tmp_path / "cli"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--ray" in err and "not a Ray address" in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "cli").exists()


@pytest.mark.parametrize("address", ["local", "auto", "head:6379", "ray://head:10001",
                                     "ray://head", "[::1]:6379"])
def test_well_formed_ray_addresses_pass_the_check(address):
    from abnirml.evaluation.execution.parallel import check_ray_address

    check_ray_address(address)


# --- what score() may return ------------------------------------------------------------

class _Returns:
    fingerprint = "returns-v1"

    def __init__(self, make):
        self.name = "returns"
        self.make = make
        self.fingerprint = f"returns-{id(make)}"

    def score(self, pairs):
        return self.make(len(pairs))


@pytest.mark.parametrize(("make", "says"), [
    (lambda n: ["1.5"] * n, "text such as '1.5'"),
    (lambda n: np.array(["1.5"] * n, dtype=object), "str '1.5'"),
    (lambda n: np.array([b"1.5"] * n), "bytes such as"),
    (lambda n: [1.0] * (n - 1) + ["2"], "text such as '1.0'"),
    (lambda n: [True] * n, "booleans such as 'True'"),
    (lambda n: [1.0] * (n - 1) + [None], "1 NaN score"),
    (lambda n: np.array([1.0] * (n - 1) + [True], dtype=object), "bool 'True'"),
])
def test_text_or_booleans_as_scores_stop_the_run(tmp_path, make, says):
    with pytest.raises(ScoringError) as err:
        run(_config(tmp_path, rankers=[_Returns(make)], effectiveness=False))
    message = str(err.value)
    assert message.startswith("ranker returns returned ") and says in message, message


def test_text_scores_are_refused_in_worker_processes_too(tmp_path):
    with pytest.raises(ScoringError, match="not text or booleans"):
        run(_config(tmp_path, rankers=[_Returns(lambda n: ["1.5"] * n)], workers=2,
                    batch_size=16, effectiveness=False))


def test_numbers_in_an_object_array_are_accepted(tmp_path):
    output = run(_config(tmp_path, rankers=[_Returns(
        lambda n: np.array([float(i % 3) for i in range(n)], dtype=object))],
        effectiveness=False))
    assert output.result.records


# --- extreme but finite scores -----------------------------------------------------------

def test_extreme_finite_scores_are_a_located_error_in_python(tmp_path):
    alternating = _Returns(lambda n: [1.7e308 if i % 2 else -1.7e308 for i in range(n)])
    with pytest.raises(ScoringError, match=r"beyond ±1e\+100 .*rescale"):
        run(_config(tmp_path, rankers=[alternating], effectiveness=False))


EXTREME_PLUGIN = '''
import numpy as np
from abnirml.rankers.registry import register

class Extreme:
    name = "extreme"
    fingerprint = "extreme-v1"

    def score(self, pairs):
        return np.array([1.7e308 if len(t) % 2 else -1.7e308 for _, t in pairs])

register("extreme", lambda spec, env: Extreme(), "extreme")
'''


def test_extreme_finite_scores_are_one_line_on_the_command_line(tmp_path, capsys):
    plugin = tmp_path / "extreme.py"
    plugin.write_text(EXTREME_PLUGIN, encoding="utf-8")
    assert main(["run", "--plugin", str(plugin), "--ranker", "extreme", "--probe",
                 "tmp:shuffle-words", "--no-cache", "--quiet",
                 "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "ranker extreme returned" in err and "rescale" in err


# --- sys.exit() in a plugin ------------------------------------------------------------

def test_a_plugin_exiting_while_loading_is_an_error_not_a_silent_success(tmp_path, capsys):
    plugin = tmp_path / "quitter.py"
    plugin.write_text("import sys\n\nsys.exit(0)\n", encoding="utf-8")
    assert main(["probes", "--plugin", str(plugin)]) == 2
    err = capsys.readouterr().err
    assert f"{plugin}:3: plugin called sys.exit(0) while loading" in err


def test_a_ranker_exiting_while_scoring_is_an_error(tmp_path, capsys):
    plugin = tmp_path / "quitting_ranker.py"
    plugin.write_text(textwrap.dedent('''
        import sys
        from abnirml.rankers.registry import register

        class Quitter:
            name = "quitter"
            fingerprint = "quitter-v1"

            def score(self, pairs):
                sys.exit(0)

        register("quitter", lambda spec, env: Quitter(), "quitter")
    '''), encoding="utf-8")
    for extra in ([], ["--workers", "2", "--batch-size", "16"]):
        out = tmp_path / f"out{len(extra)}"
        assert main(["run", "--plugin", str(plugin), "--ranker", "quitter", "--probe",
                     "tmp:shuffle-words", "--no-cache", "--quiet", "--out", str(out),
                     *extra]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err
        assert "ranker quitter: score() called sys.exit(0)" in err, err
        assert not out.exists()


# --- code run by design -----------------------------------------------------------------

def test_the_help_says_that_pyterrier_specs_and_plugins_run_code(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "pyterrier:MODULE:FACTORY imports MODULE and runs its code" in text
    assert "its code runs with your permissions" in text
    guide = Path(__file__).resolve().parents[2] / "docs" / "guide" / "rankers.md"
    row = next(line for line in guide.read_text(encoding="utf-8").splitlines()
               if line.startswith("| `pyterrier:"))
    assert "imports `MODULE` and runs its code" in row


def test_a_wrapped_ranker_returning_text_is_refused_by_its_wrapper():
    from abnirml.rankers.families.passages import PassageAggregate

    wrapper = PassageAggregate(_Returns(lambda n: ["0.5"] * n), passage_length=2,
                               passage_stride=2)
    with pytest.raises(ScoringError, match=r"returned text such as '0\.5'"):
        wrapper.score([("q", "one two three four five")])
