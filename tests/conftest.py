"""Shared fixtures. Tests that need ../shared/data skip with a reason when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("ABNIRML_SHARED_DATA", REPO.parent / "shared" / "data"))


def pytest_configure(config):
    """Under pytest-xdist, each worker's math libraries get their share of the cores.

    ``make test`` runs one worker per core (``--dist loadfile``: a module's tests share one
    worker, so a model or run its module-scoped fixture builds is built once); torch, MKL and
    OpenMP would each start a thread per core in every worker, and threads spinning for
    cores that the other workers hold make the suite slower, not faster. Subprocesses
    started by tests inherit the share.
    """
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not workers:
        return
    share = max(1, _cores() // max(1, int(workers)))
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(name, str(share))
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                  # not Linux
        return os.cpu_count() or 1


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    """A test (or fixture) that needs an optional extra which is absent skips, saying which."""
    from abnirml.errors import MissingExtra

    try:
        return (yield)
    except MissingExtra as exc:
        pytest.skip(f"optional extra abnirml[{exc.extra}] not installed: {exc}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    from abnirml.errors import MissingExtra

    try:
        return (yield)
    except MissingExtra as exc:
        pytest.skip(f"optional extra abnirml[{exc.extra}] not installed: {exc}")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch, tmp_path_factory):
    """Never touch the user's score cache from tests."""
    monkeypatch.setenv("ABNIRML_CACHE", str(tmp_path / "scores.sqlite"))
    # Rendered report figures: a fresh folder per test, outside the test's own tmp_path
    # (tests check that folder's exact contents).
    monkeypatch.setenv("ABNIRML_FIGURE_CACHE", str(tmp_path_factory.mktemp("figure-cache")))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"needs the shared real data at {SHARED_DATA} (absent on a fresh clone)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def dl19(shared_data) -> Path:
    path = shared_data / "trec-dl-2019"
    if not (path / "queries.tsv").is_file():
        pytest.skip(f"needs TREC DL 2019 files at {path}")
    return path


@pytest.fixture(scope="session")
def demo_collection():
    from abnirml.data.collection import load_collection

    return load_collection("demo")


@pytest.fixture(scope="session")
def demo_battery(tmp_path_factory) -> Path:
    """The output folder of the demo battery (tests/results_battery.py), built once in the
    session for every module and worker that reads it. Read it; copy it to change it."""
    from ._shared_runs import build_demo_battery, shared_output

    return shared_output(tmp_path_factory, "demo-battery", build_demo_battery) / "out"


@pytest.fixture()
def one_torch_thread():
    """Run torch on one thread for the test (the machine's two cores are shared)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture()
def tiny_dir(tmp_path: Path) -> Path:
    """A two-query, four-passage collection folder with graded judgments (the input the
    CLI and bad-input tests start from and then damage)."""
    from .helpers import write_collection_dir

    return write_collection_dir(
        tmp_path / "coll",
        {"q1": "apple pie", "q2": "river bank"},
        {"d1": "apple pie with apples", "d2": "a pie", "d3": "the river bank is muddy",
         "d4": "bank loans"},
        {"q1": {"d1": 2, "d2": 1}, "q2": {"d3": 3, "d4": 0}})


@pytest.fixture
def stats_builds(monkeypatch) -> list[int]:
    """Counts ``CollectionStats.build`` calls (one entry each) for the rest of the test: a
    run must build one collection's statistics once, whatever shares them."""
    from abnirml.data.stats import CollectionStats

    built: list[int] = []
    original = CollectionStats.build.__func__

    def counting(cls, *args, **kwargs):
        built.append(1)
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(CollectionStats, "build", classmethod(counting))
    return built


#: Ray waits a fixed 30 s for its node to start (ray/_private/node.py); on a loaded machine
#: that can run out, so the start is tried this many times
RAY_START_TRIES = 3


def pytest_collection_modifyitems(session, config, items):
    """Modules holding a test marked ``slow`` run first; modules starting Ray run last.

    ``make test`` hands whole modules to the workers in the order collected
    (``--no-loadscope-reorder``). Starting with the long modules lets the many short ones
    fill in behind them, so the workers finish together. A module whose tests start Ray in
    the test process (the ``ray_local`` fixture) goes after all others: Ray leaves gRPC
    threads behind after ``ray.shutdown()``, and a later test on the same worker that forks
    ``--workers`` processes could fork a child that dies on those threads' locks. The order
    changes no test's outcome otherwise: every test builds or finds what it needs itself.
    """
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    ray = {item.path for item in items if "ray_local" in getattr(item, "fixturenames", ())}
    items.sort(key=lambda item: (item.path in ray, item.path not in slow))   # stable


@pytest.fixture
def ray_local():
    """Ray started in this process as ``--ray local`` starts it (so the run under test finds
    it running), tried again when Ray's fixed start-up wait runs out; shut down after."""
    ray = pytest.importorskip("ray", reason="Ray is an optional extra (abnirml[ray])")
    from abnirml.evaluation.execution.ray_executor import start_loopback

    for attempt in range(1, RAY_START_TRIES + 1):
        try:
            start_loopback(ray)
            break
        except Exception as exc:
            ray.shutdown()
            if "timed out during startup" not in str(exc) or attempt == RAY_START_TRIES:
                raise
    yield ray
    ray.shutdown()
