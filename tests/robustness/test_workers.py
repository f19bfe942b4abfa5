"""Worker processes: no more than the work and the cores, and a quiet Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from abnirml.cli import main
from abnirml.evaluation.execution import parallel

SRC = Path(__file__).resolve().parents[2] / "src"


def test_processes_are_capped_by_batches_and_cores(monkeypatch):
    monkeypatch.setattr(parallel, "available_cores", lambda: 2)
    executor = parallel.ProcessExecutor(200)
    with pytest.warns(UserWarning, match=r"--workers 200: using 2 worker processes "
                                         r"\(2 CPU core\(s\) available, 185 batch\(es\)"):
        assert executor.processes_for(185) == 2
    assert executor.processes_for(1) == 1           # said once per run, capped always
    monkeypatch.setattr(parallel, "available_cores", lambda: 64)
    assert parallel.ProcessExecutor(200).processes_for(3) == 3
    assert parallel.ProcessExecutor(4).processes_for(100) == 4


def test_the_command_line_says_how_many_processes_it_forks(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(parallel, "available_cores", lambda: 2)
    assert main(["run", "--ranker", "bm25", "--probe", "tmp:shuffle-words", "--workers",
                 "200", "--batch-size", "64", "--no-cache", "--quiet", "--out",
                 str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert err.count("--workers 200: using 2 worker processes (2 CPU core(s) available") == 1


SLOW_PLUGIN = '''
import os
import time

import numpy as np

from abnirml.rankers.registry import register


class Slow:
    name = "slow"
    fingerprint = "slow-v1"

    def score(self, pairs):
        open(os.path.join(os.environ["MARKER_DIR"], str(os.getpid())), "w").close()
        time.sleep(30)
        return np.zeros(len(pairs))


register("slow", lambda spec, env: Slow(), "slow")
'''


@pytest.mark.skipif(sys.platform == "win32", reason="process groups and fork are POSIX")
def test_ctrl_c_with_workers_prints_one_line_and_no_worker_traceback(tmp_path):
    plugin = tmp_path / "slow.py"
    plugin.write_text(textwrap.dedent(SLOW_PLUGIN), encoding="utf-8")
    markers = tmp_path / "markers"
    markers.mkdir()
    env = {**os.environ, "PYTHONPATH": str(SRC), "MARKER_DIR": str(markers),
           "ABNIRML_CACHE": str(tmp_path / "cache.sqlite")}
    # start_new_session: a group of its own, signalled as a terminal's Ctrl-C would be
    child = subprocess.Popen(
        [sys.executable, "-m", "abnirml", "run", "--plugin", str(plugin), "--ranker", "slow",
         "--probe", "tmp:shuffle-words", "--workers", "3", "--batch-size", "8", "--quiet",
         "--out", str(tmp_path / "out")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while len(list(markers.iterdir())) < 2 and time.monotonic() < deadline:
            assert child.poll() is None, child.stderr.read().decode()
            time.sleep(0.1)
        assert len(list(markers.iterdir())) >= 2, "the workers never started scoring"
        os.killpg(child.pid, signal.SIGINT)
        _, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    text = err.decode("utf-8", "replace")
    assert child.returncode == 130, text
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    assert "abnirml: interrupted" in text


class _DiesInWorkers:
    """Scores in the parent; a forked worker kills itself, as the out-of-memory killer
    would."""

    name = fingerprint = "dies-in-workers"

    def __init__(self) -> None:
        self.parent = os.getpid()

    def score(self, pairs):
        if os.getpid() != self.parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return [0.0] * len(pairs)


def test_a_worker_killed_while_scoring_stops_the_run_with_one_line():
    """A dead worker must end the run with an error, never leave it waiting for the lost
    batch (an alarm fails the test instead of hanging it)."""
    from abnirml.errors import ScoringError

    def hung(signum, frame):
        raise AssertionError("the run waited for a batch its dead worker never returns")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        with pytest.raises(ScoringError, match=r"^a --workers process died while scoring "
                                               r"\((?:.*, )?killed by SIGKILL\b"):
            list(parallel.ProcessExecutor(2).run(_DiesInWorkers(),
                                                 [[("q", str(i))] for i in range(6)]))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
