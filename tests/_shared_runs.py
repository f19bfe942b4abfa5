"""Outputs that several test modules read, built once per test session, whatever the workers.

A run that takes half a minute and that modules on different pytest-xdist workers read (the
demo battery behind the HTML report tests and the results-digest test) is built by the first
worker that asks, under a file lock in the folder all workers of the session share; the
others wait for it and read the same files. Readers never write into a shared output: a test
that changes one works on its own copy.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

#: written last into a shared folder: its files are complete
COMPLETE = ".complete"


def session_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder every worker of this session shares: under pytest-xdist, the parent of the
    workers' own base folders (``pytest-N/popen-gwK``); without it, the base folder itself
    (its parent is shared with other sessions)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def shared_output(tmp_path_factory: pytest.TempPathFactory, name: str,
                  build: Callable[[Path], None]) -> Path:
    """``session_root/name``, filled by ``build(folder)`` once in the session.

    The first worker to take the lock builds; a build that raised leaves no completion mark,
    so the next worker to ask builds again (and fails with its own traceback) instead of
    reading half an output.
    """
    root = session_root(tmp_path_factory)
    folder = root / name
    with open(root / f"{name}.lock", "w") as handle:
        _lock(handle)
        if not (folder / COMPLETE).exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            (folder / COMPLETE).touch()
    return folder


def _lock(handle) -> None:
    """Hold an exclusive lock on ``handle`` until it is closed (POSIX; elsewhere the workers
    have no lock and each build into its own session root is not shared anyway)."""
    try:
        import fcntl
    except ImportError:                       # not POSIX: xdist workers would race
        if os.environ.get("PYTEST_XDIST_WORKER"):
            pytest.skip("a shared test output needs POSIX file locks under pytest-xdist")
        return
    fcntl.flock(handle, fcntl.LOCK_EX)


def build_demo_battery(folder: Path) -> None:
    """The demo battery (:mod:`tests.results_battery`) into ``folder/out``, its figures drawn
    into ``folder/figures`` (never the user's figure cache)."""
    from tests.results_battery import run_battery

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ABNIRML_FIGURE_CACHE", str(folder / "figures"))
        run_battery(folder / "out")
