"""What abnirml prints survives a console that cannot show every character."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def test_an_ascii_console_gets_the_summary_line_escaped_not_a_traceback(tmp_path):
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "PYTHONPATH": str(SRC),
           "ABNIRML_CACHE": str(tmp_path / "cache.sqlite")}
    done = subprocess.run(
        [sys.executable, "-m", "abnirml", "run", "--ranker", "bm25", "--probe",
         "tmp:shuffle-words", "--no-cache", "--quiet", "--out", str(tmp_path / "out")],
        env=env, capture_output=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr.decode("ascii", "replace")
    assert b"Traceback" not in done.stderr
    assert b"probe \\xd7 1 ranker;" in done.stdout     # "×" shown as an escape
    assert (tmp_path / "out" / "report.md").is_file()
