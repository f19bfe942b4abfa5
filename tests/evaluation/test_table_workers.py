"""Sample tables built in forked worker processes are the tables one process builds; what a
worker cannot build or hand back is built in the parent, with the parent's errors and
warnings; nothing is forked while another thread runs."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from abnirml.errors import ConfigError
from abnirml.evaluation.execution.experiment import build_tables
from abnirml.evaluation.execution.table_workers import TableWorkers, worker_count
from abnirml.probes.base import KeyedProbe, ProbeContext, SampleTable
from abnirml.probes.probe_registry import select_probes
from abnirml.samples import Sample, Skip

PROBES = ["mmp:relevance:length", "mmp:tf:relevance", "tmp:shuffle-words", "tmp:prepend-query",
          "axiom:rennings-tfc1", "axiom:tfc2", "qvp:shuffle-words"]


@pytest.fixture()
def context(demo):
    from abnirml.evaluation.execution.candidates import resolve_candidates

    candidates = resolve_candidates(demo, None, 100)
    return ProbeContext(collection=demo, candidates=lambda: candidates.ranking)


@pytest.fixture()
def demo():
    from abnirml.data.collection import load_collection

    return load_collection("demo")


@pytest.fixture()
def one_thread(monkeypatch):
    """The test process as a command line runs: no thread but this one (pytest's helper
    threads, where any run, are not this code's business)."""
    monkeypatch.setattr(threading, "active_count", lambda: 1)


def _same(a: SampleTable, b: SampleTable) -> None:
    assert a.texts == b.texts
    for x, y in ((a.query, b.query), (a.doc1, b.doc1), (a.doc2, b.doc2), (a.qids, b.qids),
                 (a.query1, b.query1), *zip(a.more_docs, b.more_docs, strict=True)):
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.grade, b.grade)
    assert a.skipped == b.skipped and a.extra.keys() == b.extra.keys()
    assert a.extra.get("record") == b.extra.get("record")
    assert [a.meta(i) for i in range(len(a))] == [b.meta(i) for i in range(len(b))]
    assert (a.combine is None) == (b.combine is None)


def test_tables_built_by_workers_are_the_tables_one_process_builds(context, one_thread):
    probes = select_probes(PROBES)
    serial = build_tables(probes, context, progress=False)
    workers = TableWorkers.start(probes, context, 2)
    assert workers is not None
    try:
        finished = []
        built = workers.build(probes, context, finished.append)
    finally:
        workers.close()
    assert list(built) == [p.name for p in probes] and workers.built_here == []
    assert sorted(p.name for p in finished) == sorted(PROBES)
    for name in serial:
        _same(built[name], serial[name])


@dataclass(frozen=True)
class _Closure(KeyedProbe):
    """A plugin probe whose table holds a closure (it cannot travel between processes) or
    that fails, warning first."""

    family: ClassVar[str] = "plugin"
    suffix: str = "closure"

    def samples(self, context) -> Iterator[Sample | Skip]:
        warnings.warn(f"{self.suffix}: a warning from the probe", UserWarning, stacklevel=2)
        if self.suffix == "fails":
            raise ValueError("no samples today")
        yield Sample("q", "a b", "b a", {"qid": "1"})

    def sample_table(self, context) -> SampleTable:
        from abnirml.probes.base import table_from_samples

        table = table_from_samples(self.samples(context))
        secret = {"seen": 0}
        table.meta = lambda i: {"qid": "1", "seen": secret["seen"]}
        return table


def _started(probes, context) -> TableWorkers:
    workers = TableWorkers.start(probes, context, 2)
    assert workers is not None
    return workers


def test_a_table_that_cannot_travel_is_built_here_with_its_warning_once(context,
                                                                         one_thread):
    probes = [_Closure(), *select_probes(["tmp:shuffle-words"])]
    with _started(probes, context) as workers, \
            pytest.warns(UserWarning, match="closure: a warning") as caught:
        built = workers.build(probes, context)
    assert workers.built_here == ["plugin:closure"]
    assert built["plugin:closure"].meta(0) == {"qid": "1", "seen": 0}
    assert sum("closure: a warning" in str(w.message) for w in caught) == 1


def test_a_probe_failing_in_a_worker_fails_here_as_in_one_process(context, one_thread):
    probes = [_Closure("fails"), *select_probes(["mmp:relevance:length"])]
    with _started(probes, context) as workers, \
            pytest.raises(ConfigError, match=r"probe plugin:fails: building its samples "
                                             r"failed.*ValueError: no samples today"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        workers.build(probes, context)


def test_warnings_of_a_worker_are_raised_here(context, one_thread):
    probes = [_Closure("tells"), _Closure("also")]
    with _started(probes, context) as workers, pytest.warns(UserWarning) as caught:
        probes_tables = workers.build(probes, context)
    messages = sorted(str(w.message) for w in caught)
    assert messages == ["also: a warning from the probe", "tells: a warning from the probe"]
    assert set(probes_tables) == {"plugin:tells", "plugin:also"}


def test_nothing_is_forked_while_another_thread_runs_or_for_one_probe(context, monkeypatch):
    probes = select_probes(["mmp:relevance:length", "tmp:shuffle-words"])
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    assert TableWorkers.start(probes, context, 2) is None
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    assert TableWorkers.start(probes[:1], context, 4) is None


def test_the_worker_count_follows_the_environment_and_the_probes(monkeypatch):
    monkeypatch.setenv("ABNIRML_SAMPLE_WORKERS", "3")
    assert worker_count(10) == 3 and worker_count(2) == 2
    monkeypatch.setenv("ABNIRML_SAMPLE_WORKERS", "zero")
    with pytest.raises(ConfigError, match="ABNIRML_SAMPLE_WORKERS must be a positive"):
        worker_count(5)
    monkeypatch.delenv("ABNIRML_SAMPLE_WORKERS")
    from abnirml.evaluation.execution import parallel
    monkeypatch.setattr(parallel, "available_cores", lambda: 16)
    assert worker_count(64) == 16 and worker_count(5) == 5
    monkeypatch.setattr(parallel, "available_cores", lambda: 2)     # too few: this process
    assert worker_count(64) == 1


def test_a_run_with_sample_workers_writes_the_results_of_one_process(tmp_path, monkeypatch,
                                                                      one_thread):
    import multiprocessing

    from abnirml.evaluation.execution import table_workers
    from abnirml.pipeline import RunConfig, SessionSettings, run

    started = []
    start = table_workers.TableWorkers.start.__func__

    def noted(cls, probes, context, count=None):
        workers = start(cls, probes, context, count)
        started.append(workers)
        return workers

    monkeypatch.setattr(table_workers.TableWorkers, "start", classmethod(noted))
    results = {}
    for count in ("1", "3"):
        monkeypatch.setenv("ABNIRML_SAMPLE_WORKERS", count)
        out = tmp_path / f"out-{count}"
        run(RunConfig(collection="demo", rankers=["bm25", "ql"], probes=PROBES[:-1],
                      out=str(out), seed=0,
                      session=SessionSettings(cache=None, progress=False)))
        results[count] = (out / "results.jsonl").read_bytes()
    assert started[0] is None and started[1] is not None      # forked for the second run
    assert started[1]._processes == []                          # and stopped
    assert not [p for p in multiprocessing.active_children() if p.name == "abnirml-samples"]
    assert results["1"] == results["3"]


def test_registered_axioms_travel_by_key_and_others_do_not():
    import pickle
    from dataclasses import replace

    from abnirml.probes.axioms.probe import AXIOM_BY_KEY, registered_axiom

    tfc2 = AXIOM_BY_KEY["tfc2"]
    assert pickle.loads(pickle.dumps(tfc2)) is tfc2
    ir_tfc1 = registered_axiom("ir-tfc1")
    assert ir_tfc1 is not None and pickle.loads(pickle.dumps(ir_tfc1)) is ir_tfc1
    with pytest.raises(pickle.PicklingError, match="not a registered axiom"):
        pickle.dumps(replace(tfc2, key="my-axiom"))


@dataclass
class _Named:
    name: str
    family: str


def test_idle_workers_take_a_family_nobody_has_begun_before_sharing_one():
    """Each family's shared inputs (measures, parses) are built once per worker that
    builds one of its probes: a worker keeps to its family, and a free worker starts a
    family nobody has begun before joining one."""
    from collections import deque

    from abnirml.evaluation.execution.table_workers import _next_probe

    todo = deque(_Named(n, n.split(":")[0]) for n in
                 ["mmp:a", "mmp:b", "mmp:c", "tmp:a", "tmp:b", "axiom:a", "axiom:b"])
    started: set[str] = set()

    def take(last: str | None) -> str:
        probe = _next_probe(todo, last, started)
        started.add(probe.family)
        return probe.name

    assert take(None) == "mmp:a"           # worker 1
    assert take(None) == "tmp:a"           # worker 2: not mmp, which worker 1 began
    assert take(None) == "axiom:a"         # worker 3
    assert take("mmp") == "mmp:b"          # worker 1 keeps to its family
    assert take(None) == "mmp:c"           # every family begun: the first waiting
    assert take("mmp") == "tmp:b"          # its family done: the first waiting
    assert take("axiom") == "axiom:b"
    assert not todo
