"""A file-system snapshot around every command: the written rule of docs/reliability.md,
checked.

:func:`snapshot` records every entry under a folder — its path, kind, permission bits, the
SHA-256 of a regular file's bytes, a link's target, a device's numbers — without following
links and without opening anything that is not a regular file (a FIFO would block).
:class:`Guard` runs an ``abnirml`` command between two snapshots and fails the test when
anything changed that the command was not declared to write: the paths a test passes as
``may_change`` (an output folder, the triples file, the score cache with SQLite's
``-wal``/``-shm``/``-journal`` sides) are the only ones it may create, replace or delete.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from abnirml.cli import main

Entry = tuple[str, int, str]

_SQLITE_SIDES = ("-wal", "-shm", "-journal")


def snapshot(root: Path) -> dict[str, Entry]:
    """{relative path: (kind, permission bits, content)} of everything under ``root``."""
    found: dict[str, Entry] = {}

    def visit(folder: Path, prefix: str) -> None:
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            rel = prefix + entry.name
            info = os.lstat(entry.path)
            mode = info.st_mode
            if stat.S_ISREG(mode):
                with open(entry.path, "rb") as handle:
                    content = hashlib.sha256(handle.read()).hexdigest()
                found[rel] = ("file", stat.S_IMODE(mode), content)
            elif stat.S_ISLNK(mode):
                found[rel] = ("link", 0, os.readlink(entry.path))
            elif stat.S_ISDIR(mode):
                found[rel] = ("folder", stat.S_IMODE(mode), "")
                visit(Path(entry.path), rel + "/")
            elif stat.S_ISFIFO(mode):
                found[rel] = ("fifo", stat.S_IMODE(mode), "")
            elif stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
                found[rel] = ("device", stat.S_IMODE(mode), str(info.st_rdev))
            else:
                found[rel] = ("other", stat.S_IMODE(mode), "")

    visit(root, "")
    return found


def changes(before: dict[str, Entry], after: dict[str, Entry]) -> dict[str, str]:
    """{path: 'created' | 'deleted' | 'changed'} between two snapshots."""
    out = {}
    for path in sorted(before.keys() | after.keys()):
        if path not in before:
            out[path] = "created"
        elif path not in after:
            out[path] = "deleted"
        elif before[path] != after[path]:
            out[path] = "changed"
    return out


@dataclass
class Outcome:
    code: int
    out: str
    err: str

    def error_line(self) -> str:
        """The one ``abnirml: error:`` line of a refused command (exit 2, no traceback)."""
        lines = [line for line in self.err.splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("abnirml: error: ")]
        assert self.code == 2, (self.code, lines)
        assert len(errors) == 1 and "Traceback" not in self.err, lines
        return errors[0]


class Guard:
    """Runs commands under ``root`` between snapshots of ``root`` (see the module)."""

    def __init__(self, root: Path, capsys):
        self.root = root
        self.capsys = capsys

    def __call__(self, *argv: str | Path, may_change: Iterable[str | Path] = (),
                 subprocess_timeout: float | None = None) -> Outcome:
        allowed = [self._relative(p) for p in may_change]
        before = snapshot(self.root)
        if subprocess_timeout is None:
            self.capsys.readouterr()
            code = main([str(a) for a in argv])
            captured = self.capsys.readouterr()
            outcome = Outcome(code, captured.out, captured.err)
        else:   # a command that could block (a FIFO): in a child that can be killed
            done = subprocess.run([sys.executable, "-m", "abnirml", *map(str, argv)],
                                  capture_output=True, text=True, timeout=subprocess_timeout,
                                  cwd=self.root, env=os.environ.copy())
            outcome = Outcome(done.returncode, done.stdout, done.stderr)
        unexpected = {path: what for path, what in changes(before, snapshot(self.root)).items()
                      if not any(_under(path, a) for a in allowed)}
        assert not unexpected, (f"abnirml {' '.join(map(str, argv))} changed what it was not "
                                f"asked to write: {unexpected}")
        return outcome

    def _relative(self, path: str | Path) -> str:
        path = Path(path)
        return (path.relative_to(self.root) if path.is_absolute() else path).as_posix()


def _under(path: str, allowed: str) -> bool:
    return any(path == allowed + side or path.startswith(allowed + side + "/")
               for side in ("", *_SQLITE_SIDES))
