"""Interrupted runs resume from the cache and never rescore what is cached."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from abnirml.pipeline import RunConfig, SessionSettings, run
from abnirml.rankers import registry
from abnirml.rankers.families.lexical import BM25
from abnirml.rankers.support.cache import ScoreCache
from abnirml.registry import scoped_registrations


class CountingBM25(BM25):
    """BM25 that counts the pairs it scores and can fail after a number of batches."""

    calls: ClassVar[list[int]] = []
    fail_after: ClassVar[int | None] = None

    def score(self, pairs):
        if CountingBM25.fail_after is not None and len(CountingBM25.calls) >= self.fail_after:
            raise KeyboardInterrupt
        CountingBM25.calls.append(len(pairs))
        return super().score(pairs)


@pytest.fixture()
def counting_ranker():
    with scoped_registrations():
        registry.register("countbm25", lambda spec, env: CountingBM25(env.collection_stats(),
                                                                       name=spec.canonical))
        CountingBM25.calls = []
        CountingBM25.fail_after = None
        yield CountingBM25


def test_interrupted_run_rescores_nothing_cached(tmp_path, counting_ranker):
    cache = tmp_path / "cache.sqlite"
    config = RunConfig(rankers=["countbm25"], probes=["mmp:*"], out=str(tmp_path / "a"),
                       session=SessionSettings(cache=str(cache), batch_size=50, progress=False))
    counting_ranker.fail_after = 3
    with pytest.raises(KeyboardInterrupt):
        run(config)
    assert counting_ranker.calls == [50, 50, 50]
    with ScoreCache(cache) as c:
        cached = c.count()
    assert cached == 150            # every finished batch was committed
    counting_ranker.calls = []
    counting_ranker.fail_after = None
    output = run(config)
    unique = output.run_info["counts"]["unique_pairs"]
    assert sum(counting_ranker.calls) == unique - 150
    assert output.run_info["counts"]["from_cache"] == 150
    counting_ranker.calls = []
    again = run(RunConfig(rankers=["countbm25"], probes=["mmp:*"], out=str(tmp_path / "b"),
                          session=SessionSettings(cache=str(cache), progress=False)))
    assert counting_ranker.calls == []          # fully warm: nothing scored
    assert again.result.records == output.result.records


SLOW_RUN = """
import os, sys, time
from abnirml.cli import main
from abnirml.rankers import registry
from abnirml.rankers.families.lexical import BM25

# KILL_AFTER=k: the k-th scored batch touches KILL_MARKER, and the run stops for good two
# batches later (until killed), so a kill always finds it unfinished, whatever the load
KILL_AFTER = int(os.environ.get("KILL_AFTER", "0"))

class SlowBM25(BM25):
    calls = 0

    def score(self, pairs):
        SlowBM25.calls += 1
        if KILL_AFTER and SlowBM25.calls == KILL_AFTER:
            open(os.environ["KILL_MARKER"], "w").close()
        if KILL_AFTER and SlowBM25.calls >= KILL_AFTER + 2:
            time.sleep(3600)
        time.sleep(0.1)
        return super().score(pairs)

registry.register("slowbm25", lambda spec, env: SlowBM25(env.collection_stats(),
                                                          name=spec.canonical))
sys.exit(main(sys.argv[1:]))
"""


def _slow_cli(tmp_path: Path, out: str, cache: Path) -> list[str]:
    script = tmp_path / "slow.py"
    script.write_text(SLOW_RUN)
    return [sys.executable, str(script), "run", "--ranker", "slowbm25", "--probe", "mmp:*",
            "--batch-size", "10", "--cache", str(cache), "--out", out, "--quiet"]


def _wait_for(marker: Path, proc: subprocess.Popen, limit_s: float = 600.0) -> None:
    deadline = time.monotonic() + limit_s
    while not marker.exists():
        assert proc.poll() is None, "the run ended before reaching its kill point"
        assert time.monotonic() < deadline, "the run did not reach its kill point in time"
        time.sleep(0.02)


@pytest.mark.slow
def test_sigkill_at_random_points_then_resume_gives_same_results(tmp_path):
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    clean = subprocess.run(_slow_cli(tmp_path, str(tmp_path / "clean"),
                                     tmp_path / "clean.sqlite"),
                           env=env, capture_output=True, text=True, check=True)
    assert "computed" in clean.stdout
    unique = json.loads((tmp_path / "clean" / "run.json").read_text())["counts"]["unique_pairs"]
    cache = tmp_path / "killed.sqlite"
    rng = np.random.default_rng(11)
    previous = 0
    for _ in range(3):
        marker = tmp_path / "kill-point"
        marker.unlink(missing_ok=True)
        after = int(rng.integers(2, 4))   # ≤ 4 of its 23 batches a round
        proc = subprocess.Popen(_slow_cli(tmp_path, str(tmp_path / "killed"), cache),
                                env={**env, "KILL_AFTER": str(after), "KILL_MARKER": str(marker)},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # Kill at a random moment after the run's kill point: inside one of its next batches,
        # their commits, or where it stops for good; never after it has finished.
        _wait_for(marker, proc)
        time.sleep(float(rng.uniform(0.0, 0.3)))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        with ScoreCache(cache) as c:
            count = c.count()
        assert count % 10 == 0 or count == unique   # only whole batches are committed
        assert count >= previous                     # nothing committed is lost
        previous = count
    assert previous < unique, "the kills came too late to interrupt scoring"
    subprocess.run(_slow_cli(tmp_path, str(tmp_path / "killed"), cache), env=env,
                   capture_output=True, text=True, check=True)
    killed_results = (tmp_path / "killed" / "results.jsonl").read_bytes()
    assert killed_results == (tmp_path / "clean" / "results.jsonl").read_bytes()
    info = json.loads((tmp_path / "killed" / "run.json").read_text())
    assert info["counts"]["from_cache"] == previous
    assert info["counts"]["scored"] == unique - previous
