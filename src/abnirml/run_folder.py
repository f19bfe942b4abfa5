"""The output directory of ``abnirml run``: the one place that names, writes and reads it.

Writing is all-or-nothing. Everything is written into a temporary sibling directory which
then replaces ``--out``, so a rerun into the same folder never leaves files of an earlier
run behind (an axiom table, a rank-origin table or a re-ranked run the new run did not
produce), and a run killed while writing leaves the previous output whole, never a mix.
The folder is replaced only when every file in it is one abnirml wrote, unchanged (its
manifest, :mod:`abnirml.files.ownership`); anything else stops the run before any work, naming
the first foreign file: a user's files are never touched.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abnirml.errors import ConfigError
from abnirml.files.run_names import (
    CALIBRATION,
    CANDIDATE_RUN,
    EXAMPLES,
    RERANKED_DIR,
    RESULTS,
    RUN_INFO,
    SCORES,
    table_file,
)
from abnirml.run_record import RunInfo

if TYPE_CHECKING:
    from abnirml.result_fields import ResultRow


class RunFolder:
    """An ``abnirml run`` output directory.

    A ``path`` that is a symbolic link to a folder names that folder: the folder is what is
    written or replaced, the link itself is never replaced.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)

    @property
    def real_path(self) -> Path:
        """The folder itself (a linked ``--out`` resolved), absolute."""
        return Path(os.path.realpath(self.path)) if self.path.is_symlink() \
            else self.path.absolute()

    # -- reading ------------------------------------------------------------------------

    def read_records(self) -> list[ResultRow]:
        """results.jsonl's records (:func:`~abnirml.report.run_outputs.read_results`: a
        file with none is refused, as by ``load_results``)."""
        from abnirml.report.run_outputs import read_results

        self.finish_interrupted_write()
        return read_results(self.path / RESULTS)

    def read_run_info(self) -> RunInfo:
        """run.json, checked (:func:`~abnirml.report.run_outputs.read_run_info`), or {} when
        absent (reports of older runs render without it)."""
        from abnirml.report.run_outputs import read_run_info

        return read_run_info(self.path / RUN_INFO)

    # -- writing ------------------------------------------------------------------------

    def write_reports(self, records: Any = None, run_info: RunInfo | None = None
                      ) -> list[Path]:
        """(Re)write report.md, report.html and tables/* from the folder's files (what
        ``abnirml report DIR`` does); returns the paths written."""
        from abnirml.files.ownership import check_overwritable, write_recorded
        from abnirml.report.analyses import render_reports

        rendered = render_reports(self.path, records, run_info)
        # before writing anything: never through a linked tables/, never over an edited file
        check_overwritable(self.path, rendered, "report")
        # recorded in the manifest before and after writing: a kill in between leaves
        # files the manifest still names (old or new), never a folder the tool refuses
        return write_recorded(self.path, {rel: text.encode("utf-8")
                                          for rel, text in rendered.items()})

    def check_reports_overwritable(self) -> None:
        """Refuse, before any work, a folder whose report files (``report.md``,
        ``report.html``, ``tables/*``) were edited: what a command that ends by rewriting
        the report (``patch``) checks first."""
        from abnirml.files.ownership import check_overwritable, kind_of
        from abnirml.files.run_names import PER_QUERY, REPORT_HTML, REPORT_MD, TABLES_DIR

        tables = self.path / TABLES_DIR
        names = [REPORT_MD, REPORT_HTML, table_file(PER_QUERY, "csv")]
        if kind_of(tables, follow=False) == "folder":
            names += [f"{TABLES_DIR}/{name}" for name in sorted(os.listdir(tables))]
        check_overwritable(self.path, names, "report")

    def finish_interrupted_write(self) -> None:
        """Complete or roll back a swap of this folder that a killed command left half
        done (:func:`abnirml.files.ownership.finish_interrupted_swap`)."""
        from abnirml.files.ownership import finish_interrupted_swap

        finish_interrupted_swap(self.real_path)

    def check_replaceable(self) -> None:
        """Refuse (before any work) a path that is a file or holds anything this tool did not
        write (a file not in the folder's manifest, or changed since)."""
        from abnirml.files.output_folders import refuse_unusable_folder
        from abnirml.files.ownership import check_replaceable_folder

        refuse_unusable_folder(self.path)
        check_replaceable_folder(self.path, "--out")

    def replacement(self, rankers: Iterable[str], probes: Iterable[str], would: bool = False
                    ) -> str | None:
        """What a run of ``rankers`` over ``probes`` would replace here, in one clause —
        ``out/ holds a run of bm25, ql over 110 probes; this run (biencoder over 3 probes)
        drops bm25, ql and 107 probes`` — or None: no earlier run, or one of the same
        rankers and probes (a rerun that only refreshes it)."""
        try:
            info = self.read_run_info()
        except Exception:       # an unreadable run.json: check_replaceable has ruled on it
            return None
        earlier_rankers = [str(r.get("name", "")) for r in info.get("rankers") or []
                           if isinstance(r, dict)]
        earlier_probes = list(info.get("probe_labels") or {})
        if not earlier_rankers:
            return None
        rankers, probes = list(rankers), list(probes)
        if set(earlier_rankers) == set(rankers) and set(earlier_probes) == set(probes):
            return None
        gone_rankers = [r for r in earlier_rankers if r not in rankers]
        gone_probes = [p for p in earlier_probes if p not in probes]
        dropped = [", ".join(gone_rankers)] if gone_rankers else []
        if gone_probes:
            dropped.append(_probes_text(gone_probes))
        lost = (f"drops the results of {' and '.join(dropped)}" if dropped
                else "keeps every earlier ranker and probe")
        return (f"{self.path} holds a run of {', '.join(earlier_rankers)} over "
                f"{_probes_text(earlier_probes)}; this run ({', '.join(rankers)} over "
                f"{_probes_text(probes)}) {'would replace' if would else 'replaces'} it "
                f"and {lost}")

    def refuse_inside(self, path: str | Path | None, flag: str) -> None:
        """Refuse (before any work) a file that would sit inside this folder, which every run
        replaces whole: a ``--cache`` there would fail, or vanish, only after all scoring."""
        if path is None:
            return
        folder = self.real_path
        inner = Path(os.path.realpath(path))
        if inner == folder or folder in inner.parents:
            raise ConfigError(f"{flag} {path} is inside --out {self.path}, which each run "
                              "replaces whole; put it outside the output folder")

    def write(self, result: Any, run_info: RunInfo) -> None:
        """Write every output of ``result`` and swap it in place of the folder's contents."""
        from abnirml.files.ownership import replacing_folder

        self.check_replaceable()
        with replacing_folder(self.real_path, self.check_replaceable) as staging:
            _write_all(staging, result, run_info)


def _probes_text(probes: list[str]) -> str:
    """``tmp:shuffle-words`` for one probe, else ``3 probes``."""
    return probes[0] if len(probes) == 1 else f"{len(probes)} probes"


def _write_all(out: Path, result: Any, run_info: RunInfo) -> None:
    """Every file of a run (the caller writes the manifest naming them); the report modules
    only render (report.md, report.html, tables/)."""
    from abnirml.report.analyses import render_reports
    from abnirml.report.run_outputs import results_text, run_info_text

    _write_text(out / RESULTS, results_text(result.records))
    write_jsonl(out / EXAMPLES, result.examples)
    _write_text(out / RUN_INFO, run_info_text(run_info))
    write_json(out / CALIBRATION,
               {name: {"delta": c.delta, "source": c.source, "queries": c.queries,
                       "gaps": [float(g) for g in c.gaps]}
                for name, c in result.calibrations.items()})
    _write_scores(out, result, run_info)
    _write_reranked(out, result, run_info)
    _write_rendered(out, render_reports(out, result.records, run_info))


def write_jsonl(path: Path, records: Iterable[Mapping[str, Any]]) -> None:
    """``records`` as JSON lines, written atomically."""
    from abnirml.report.run_outputs import jsonl_text

    _write_text(path, jsonl_text(records))


def write_json(path: Path, value: Any) -> None:
    from abnirml.report.run_outputs import json_text

    _write_text(path, json_text(value))


def _write_text(path: Path, text: str) -> None:
    from abnirml.files.ownership import write_file_atomically

    write_file_atomically(path, text.encode("utf-8"))


def _write_rendered(out: Path, files: Mapping[str, str]) -> list[Path]:
    """Write the report's rendered files (folder-relative path → text), each atomically."""
    written = []
    for relative, text in files.items():
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_text(path, text)
        written.append(path)
    return written


def _write_scores(out: Path, result: Any, run_info: RunInfo) -> None:
    """scores.npz: per-sample scores for δ sweeps and comparisons without rescoring."""
    from abnirml.evaluation.execution.score_file import RankerInfo, ScoreStore, save_scores

    store = ScoreStore.from_result(result)
    fingerprints = {r["name"]: r.get("fingerprint", "") for r in run_info.get("rankers", [])}
    store.rankers = [RankerInfo(r.name, fingerprints.get(r.name, "")) for r in store.rankers]
    save_scores(out / SCORES, store)


def _write_reranked(out: Path, result: Any, run_info: RunInfo) -> None:
    """reranked/*.run: each ranker's re-ranking of the candidates, and the candidates."""
    from abnirml.data.trec import write_run
    from abnirml.rankers.base import file_label

    reranked = result.extras.get("reranked") or {}
    files = (run_info.get("effectiveness") or {}).get("run_files") or {}
    if not (reranked and files):
        return
    folder = out / RERANKED_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for ranker, run in reranked.items():
        if ranker in files:
            write_run(folder / files[ranker], run, tag=file_label(ranker))
    candidates = result.extras.get("candidate_run")
    if candidates is not None:
        write_run(folder / CANDIDATE_RUN, candidates, tag="candidates")

