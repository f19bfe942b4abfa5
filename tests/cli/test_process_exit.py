"""Ending the program without the interpreter's teardown: exit code, flushed output and exit
handlers kept; refused while another thread could still be writing, or when switched off."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": SRC, **env})


def test_finish_keeps_the_code_the_buffered_output_and_the_exit_handlers():
    done = _python("""
        import atexit, sys
        from abnirml.process_exit import finish
        atexit.register(lambda: print("handler ran"))
        sys.stdout.write("buffered, not yet flushed;")
        finish(3)
        print("not reached")
    """)
    assert done.returncode == 3
    assert done.stdout == "buffered, not yet flushed;handler ran\n"


def test_finish_returns_while_a_non_daemon_thread_runs_or_when_switched_off():
    waiting = _python("""
        import threading
        from abnirml.process_exit import finish
        stop = threading.Event()
        threading.Thread(target=stop.wait).start()
        finish(3)
        print("returned")
        stop.set()
    """)
    assert (waiting.returncode, waiting.stdout) == (0, "returned\n")
    off = _python("from abnirml.process_exit import finish; finish(3); print('returned')",
                  ABNIRML_FAST_EXIT="off")
    assert (off.returncode, off.stdout) == (0, "returned\n")


def test_the_program_exits_with_its_usual_code_and_message():
    done = subprocess.run([sys.executable, "-m", "abnirml", "run", "--collection", "demo",
                           "--ranker", "no-such-ranker", "--probe", "mmp:relevance:tf"],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": SRC})
    assert done.returncode == 2
    assert done.stderr.startswith("abnirml: error:") and "no-such-ranker" in done.stderr
