"""Runs on a Ray started in the test process (``--ray local``).

Every test that starts Ray in-process lives in this module, and tests/conftest.py runs it
after every other module of its worker: Ray leaves gRPC threads behind after
``ray.shutdown()``, and a ``--workers`` test forking on the same worker afterwards could
fork a child that dies on their locks.
"""

from tests.api.test_plugins import (
    RANKERS,
    _first_record,
    _write,
    assert_worker_failures_name_their_line,
)
from tests.evaluation.test_parallel import results_of


def test_ray_local_matches_serial(tmp_path, ray_local):
    serial = results_of(tmp_path, "serial")
    assert results_of(tmp_path, "ray", "--ray", "local") == serial


def test_a_plugin_ranker_failing_on_ray_names_its_own_line(tmp_path, capsys, ray_local):
    """Ray re-raises a task's exception with its own frames: the line named must still be
    the plugin's, and abnirml's own errors stay their one line."""
    assert_worker_failures_name_their_line(tmp_path, capsys, ["--ray", "local"])


def test_a_ranker_class_from_a_plugin_file_runs_on_ray(tmp_path, ray_local):
    """Ray's workers cannot import a plugin file's module (its name exists only in this
    process); the module goes to them by value, and the results equal a serial run's."""
    plugin = _write(tmp_path, "rankers.py", RANKERS)
    args = ["--ranker", "query-words+weight=2", "--probe", "tmp:prepend-query", "--no-cache",
            "--batch-size", "50"]
    serial = _first_record(plugin, tmp_path / "serial", *args)
    on_ray = _first_record(plugin, tmp_path / "ray", *args, "--ray", "local")
    assert on_ray == serial and serial["n"] > 0 and serial["neg"] == 0
