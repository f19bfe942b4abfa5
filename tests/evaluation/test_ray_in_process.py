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


LOADING_RANKER = """
import os
import time
import zlib

from abnirml.rankers.registry import register

LOG = {log!r}


class Loading:
    '''Loads its "model" once per process (preload: in the background elsewhere; here
    ``model`` loads it), noting each load and each batch with the process id.'''
    name, fingerprint = "loading", "loading-v1"

    def __init__(self):
        self._model = None

    def preload(self):
        pass

    @property
    def model(self):
        if self._model is None:
            with open(LOG, "a") as handle:
                handle.write(f"load {{os.getpid()}}\\n")
            time.sleep(0.5)
            self._model = object()
        return self._model

    def score(self, pairs):
        _ = self.model
        with open(LOG, "a") as handle:
            handle.write(f"batch {{os.getpid()}}\\n")
        return [zlib.crc32(f"{{q}}\\0{{d}}".encode()) / 2**32 for q, d in pairs]


register("loading", lambda spec, env: Loading())
"""


def test_each_worker_process_loads_the_model_once(tmp_path, ray_local):
    """The run warms each task slot's worker process up (the model loaded while the samples
    are built) and every batch then finds the model its process loaded: one load per
    process, and run.json counts one ranker copy per process that scored."""
    import json
    from collections import Counter

    log = tmp_path / "loads.log"
    plugin = _write(tmp_path, "loading.py", LOADING_RANKER.format(log=str(log)))
    args = ["--ranker", "loading", "--probe", "mmp:*", "--no-cache", "--batch-size", "10"]
    serial = _first_record(plugin, tmp_path / "serial", *args)
    log.write_text("")
    on_ray = _first_record(plugin, tmp_path / "ray", *args, "--ray", "local")
    assert on_ray == serial
    lines = [line.split() for line in log.read_text().splitlines()]
    loads = Counter(pid for kind, pid in lines if kind == "load")
    batches = Counter(pid for kind, pid in lines if kind == "batch")
    assert set(loads.values()) == {1} and set(batches) <= set(loads)
    assert sum(batches.values()) == 23 and max(batches.values()) >= 2      # 229 pairs / 10
    record = json.loads((tmp_path / "ray" / "run.json").read_text())["scoring"]["ray"]
    # the processes that scored, each having fetched the ranker once
    assert record["ranker_copies"] == len(batches) == record["worker_processes"]


def test_ray_workers_count_the_requests_they_send(tmp_path, ray_local):
    """A served ranker's copy in a Ray worker counts its requests; the driver's copy would
    say 0, so run.json's usage adds up what each task's worker counted."""
    from tests._served_standins import StandIn
    from tests.rankers.test_served_trust import _run_info

    with StandIn(usage=True) as server:
        info = _run_info(tmp_path, f"rerank-api:{server.base}/rerank+model=m+batch_size=4"
                         "+concurrency=1@served", ["mmp:tf:length"], ray_address="local",
                         batch_size=8)
    assert server.received > 2
    assert info["scoring"]["ray"]["tasks_per_node"]            # the batches ran on Ray
    assert info["usage"]["served"] == {
        "requests": server.received, "retries": 0, "prompt_tokens": 7 * server.received,
        "completion_tokens": 0, "answers_with_usage": server.received}
