"""The program against a served ranker whose other requests never end: after a clean error
or a Ctrl-C it exits at once, and a second Ctrl-C prints no traceback.

The stand-in (tests/_served_standins.py) runs in this process on 127.0.0.1; the program runs
in a subprocess. Every request but the one under test waits an hour (``+timeout=3600``), so
a program that waited for them would outlive the subprocess timeout — which only bounds a
regression: a passing run ends within seconds of the event, however loaded the machine.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import abnirml
from tests._served_standins import StandIn

SRC = str(Path(abnirml.__file__).resolve().parents[1])
#: a run of one probe on the demo collection takes a few seconds alone
BOUND_S = 600
HOUR = "+timeout=3600"
FAMILIES = {
    "http": "http:{base}/score+batch_size=1+concurrency=4" + HOUR,
    "rerank-api": "rerank-api:{base}/rerank+model=m+batch_size=1+concurrency=4" + HOUR,
    "rankgpt": "rankgpt:{base}/v1+model=m+concurrency=4" + HOUR,
}

pytestmark = pytest.mark.slow


def _program(ranker: str, out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "abnirml", "run", "--collection", "demo", "--ranker", ranker,
         "--probe", "tmp:append-query", "--no-cache", "--no-effectiveness", "--quiet",
         "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": SRC, "ABNIRML_PROGRESS": "0"})


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_clean_error_ends_the_program_while_other_requests_hang(tmp_path, family):
    with StandIn(fail_request=2, latency=3600) as server:
        program = _program(FAMILIES[family].format(base=server.base), tmp_path / "out")
        try:
            _, stderr = program.communicate(timeout=BOUND_S)
        finally:
            program.kill()
    assert program.returncode == 2, stderr
    assert stderr.startswith("abnirml: error: ranker ") and "answered HTTP 500" in stderr
    assert "Traceback" not in stderr and not (tmp_path / "out").exists()


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_ctrl_c_with_requests_in_flight_ends_the_run_and_a_second_prints_no_traceback(
        tmp_path, family):
    with StandIn(latency=3600) as server:
        program = _program(FAMILIES[family].format(base=server.base), tmp_path / "out")
        try:
            waited = time.monotonic()
            while server.in_flight < 2 and program.poll() is None:
                assert time.monotonic() - waited < BOUND_S, "no request reached the server"
                time.sleep(0.05)
            program.send_signal(signal.SIGINT)
            time.sleep(0.5)
            if program.poll() is None:           # still tidying up: a second Ctrl-C
                program.send_signal(signal.SIGINT)
            _, stderr = program.communicate(timeout=BOUND_S)
        finally:
            program.kill()
    assert program.returncode == 130, stderr
    assert "abnirml: interrupted" in stderr and "Traceback" not in stderr


def test_a_second_ctrl_c_ends_a_program_still_tidying_up_without_a_traceback():
    """The first Ctrl-C raises KeyboardInterrupt; the one after it ends the process there,
    even while a non-daemon thread would keep the interpreter waiting at exit."""
    code = """
import os, signal, sys, threading, time
from abnirml.process_exit import leave_on_second_interrupt
leave_on_second_interrupt(130)
threading.Thread(target=time.sleep, args=(3600,)).start()     # the interpreter would wait
try:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(60)
except KeyboardInterrupt:
    print("first", flush=True)
os.kill(os.getpid(), signal.SIGINT)
time.sleep(60)
print("not reached", flush=True)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=BOUND_S, env={**os.environ, "PYTHONPATH": SRC})
    assert (done.returncode, done.stdout) == (130, "first\n")
    assert done.stderr == "abnirml: interrupted again; stopped at once\n"
