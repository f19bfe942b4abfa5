"""A key never reaches the terminal, not even inside the traceback of an unexpected error:
the program passes every traceback it prints (main thread or another) through the same
redaction as its one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
KEY = "sk-live-0123456789abcdefghijklmnop"

SCRIPT = f"""
import sys, threading
sys.path.insert(0, {str(SRC)!r})
from abnirml import cli, errors

errors.register_secret({KEY!r})

def boom(args):
    worker = threading.Thread(target=lambda: (_ for _ in ()).throw(
        ValueError("a worker saw {KEY[:14]}")), name="feeder")
    worker.start()
    worker.join()
    raise RuntimeError("the server replied: invalid key {KEY}")

cli.COMMANDS["probes"] = boom
sys.argv = ["abnirml", "probes"]
sys.exit(cli.main())
"""


def test_an_unexpected_traceback_hides_the_key_in_every_thread():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode != 0
    assert "RuntimeError: the server replied: invalid key ***" in done.stderr
    assert "Exception in thread feeder" in done.stderr and "ValueError" in done.stderr
    for i in range(len(KEY) - 9):
        assert KEY[i:i + 10] not in done.stderr
