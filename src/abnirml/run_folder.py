"""The output directory of ``abnirml run``: the one place that names, writes and reads it.

Writing is all-or-nothing. Everything is written into a temporary sibling directory which
then replaces ``--out``, so a rerun into the same folder never leaves files of an earlier
run behind (an axiom table, a rank-origin table or a re-ranked run the new run did not
produce), and a run killed while writing leaves the previous output whole, never a mix.
A folder that holds anything but an earlier run's output is refused rather than replaced:
a user's files are never touched.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from abnirml.errors import ConfigError
from abnirml.run_files import CALIBRATION, EXAMPLES, OWNED, RESULTS, RUN_INFO

_STAGING = ".abnirml-staging-"
_RETIRED = ".abnirml-retired-"


class RunFolder:
    """An ``abnirml run`` output directory."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    # -- reading ------------------------------------------------------------------------

    def read_records(self) -> list[dict[str, Any]]:
        from abnirml.report.files import read_results

        return read_results(self.path / RESULTS)

    def read_run_info(self) -> dict[str, Any]:
        """run.json, or {} when absent (reports of older runs render without it)."""
        import json

        from abnirml.errors import InputError

        path = self.path / RUN_INFO
        if not path.is_file():
            return {}
        try:
            value = json.loads(path.read_text("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise InputError(f"not valid JSON ({error})", path=path) from None
        if not isinstance(value, dict):
            raise InputError("expected a JSON object", path=path)
        return value

    # -- writing ------------------------------------------------------------------------

    def check_replaceable(self) -> None:
        """Refuse (before any work) a path that is a file or holds files we did not write."""
        if self.path.exists() and not self.path.is_dir():
            raise ConfigError(f"--out {self.path} is a file, not a directory")
        if not self.path.is_dir():
            return
        foreign = sorted(p.name for p in self.path.iterdir() if p.name not in OWNED)
        if foreign:
            raise ConfigError(f"--out {self.path} holds {foreign[0]!r}"
                              + (f" and {len(foreign) - 1} more" if len(foreign) > 1 else "")
                              + ", which no abnirml run wrote; choose a new or empty folder")

    def write(self, result: Any, run_info: Mapping[str, Any]) -> None:
        """Write every output of ``result`` and swap it in place of the folder's contents."""
        self.check_replaceable()
        parent = self.path.absolute().parent
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=_STAGING + self.path.name + "-", dir=parent))
        try:
            _write_all(staging, result, run_info)
            self._swap_in(staging)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    def _swap_in(self, staging: Path) -> None:
        target = self.path.absolute()
        if not target.exists():
            os.replace(staging, target)
            return
        retired = Path(tempfile.mkdtemp(prefix=_RETIRED + self.path.name + "-",
                                        dir=target.parent))
        retired.rmdir()
        os.replace(target, retired)      # both renames stay inside one parent directory
        try:
            os.replace(staging, target)
        except BaseException:
            os.replace(retired, target)  # put the earlier run back
            raise
        shutil.rmtree(retired, ignore_errors=True)


def _write_all(out: Path, result: Any, run_info: Mapping[str, Any]) -> None:
    from abnirml.report.analyses import write_from_result
    from abnirml.report.files import write_json, write_jsonl

    write_jsonl(out / RESULTS, result.records)
    write_jsonl(out / EXAMPLES, result.examples)
    write_json(out / RUN_INFO, run_info)
    write_json(out / CALIBRATION,
               {name: {"delta": c.delta, "source": c.source, "queries": c.queries,
                       "gaps": [float(g) for g in c.gaps]}
                for name, c in result.calibrations.items()})
    write_from_result(out, result, run_info)   # scores.npz, reranked/, report.md/html, tables/
