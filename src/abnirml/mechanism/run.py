"""``abnirml patch``: build a probe's samples, patch them on one ranker, write the results.

Files (described in docs/patching.md) go to ``OUT/patching/<ranker label>/``:
``patching.json`` (summaries), ``samples/<probe>.npz`` (per-sample grids),
``patching.md`` and ``figures/*.png``. When ``OUT`` is an ``abnirml run`` folder its
report is rebuilt with the patching section.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from abnirml.counts import counted
from abnirml.errors import ConfigError
from abnirml.evaluation.execution.workspace import SessionSettings
from abnirml.files.ownership import (
    check_replaceable_folder,
    intent_in,
    kind_of,
    record_written,
    replacing_folder,
)
from abnirml.files.run_names import PATCHING_DIR
from abnirml.mechanism.study import (
    DEFAULT_MIN_DIFFERENCE,
    GRANULARITIES,
    ProbePatching,
    patch_samples,
    stacked,
)
from abnirml.mechanism.summary import summarise
from abnirml.report.patching import SUMMARY_FILE, figures, markdown
from abnirml.samples import Sample

FORMAT = 1
#: pairs examined per requested sample before a probe is refused as not alignable
TRIES_PER_SAMPLE = 20
MIN_TRIES = 200


@dataclass
class PatchConfig:
    ranker: str
    probes: list[str]
    collection: str = "demo"
    out: str | None = "abnirml-out"
    limit: int | None = 50
    granularities: tuple[str, ...] = GRANULARITIES
    seed: int = 0
    filler: str = "a"
    min_difference: float = DEFAULT_MIN_DIFFERENCE
    resamples: int = 1000
    level: float = 0.95
    options: dict[str, Any] = field(default_factory=dict)   # "FAMILY.KEY" → value
    #: device, batch size, candidates, cache … (the scoring commands' shared settings)
    session: SessionSettings = field(default_factory=SessionSettings)
    command: str = ""


@dataclass
class PatchOutput:
    results: list[ProbePatching]
    summaries: list[dict[str, Any]]
    refused: dict[str, str]
    seconds: float
    folder: Path | None


def build_samples(config: PatchConfig, names: Sequence[str], workspace: Any,
                  options: Any) -> dict[str, Any]:
    """Sample tables of the probes ``names`` (as ``abnirml run`` builds them) under the
    resolved ``options``."""
    from abnirml.evaluation.execution.experiment import build_tables
    from abnirml.probes.probe_registry import select_probes

    context = workspace.probe_context(options)
    return build_tables(select_probes(list(names)), context, config.session.progress)


def refusal(result: ProbePatching) -> str | None:
    """Why a probe gave no usable sample (one line), or None when it gave some."""
    if result.samples:
        return None
    if not result.skipped:
        return "it has no samples on this collection"
    reason, count = result.skipped.most_common(1)[0]
    return (f"none of the {counted(result.tried, 'pair')} examined could be used; the most "
            f"common reason ({counted(count, 'pair')}): {reason}")


def check_config(config: PatchConfig) -> None:
    """Refuse, with one line and before any work, every setting that cannot be run: each
    number finite and in its range (a NaN passes every ``<`` test and would be written
    into patching.json), the resamples bounded as ``--bootstrap`` is."""
    from abnirml.evaluation.stats.bootstrap import MAX_RESAMPLES

    if config.limit is not None and config.limit < 1:
        raise ConfigError(f"--limit must be at least 1, got {config.limit}")
    if not math.isfinite(config.min_difference) or config.min_difference < 0:
        raise ConfigError(f"--min-difference must be a finite number ≥ 0, got "
                          f"{config.min_difference}")
    if not 0 <= config.resamples <= MAX_RESAMPLES:
        raise ConfigError(f"--resamples must be 0 (no intervals) to {MAX_RESAMPLES:,} (the "
                          f"limit --bootstrap has), got {config.resamples:,}")
    if not 0.0 < config.level < 1.0:
        raise ConfigError(f"level must be a coverage in (0, 1), e.g. 0.95, got {config.level}")
    config.session.check()
    unknown = [g for g in config.granularities if g not in GRANULARITIES]
    if unknown or not config.granularities:
        raise ConfigError(f"--granularity must be residual and/or heads, got "
                          f"{', '.join(unknown) or 'nothing'}")


def run_patching(config: PatchConfig) -> PatchOutput:
    """Patch every probe of ``config`` on its ranker; write the files when ``out`` is set."""
    from abnirml.evaluation.execution.workspace import Workspace
    from abnirml.mechanism.targets import target_for
    from abnirml.probes.family_registry import resolve_options
    from abnirml.probes.probe_registry import select_probes

    batch_size = config.session.batch_size
    check_config(config)
    folder = _target_folder(config) if config.out else None
    names = [p.name for p in select_probes(config.probes)]
    options = resolve_options(dict(config.options))   # a bad --option stops before loading
    start = time.perf_counter()
    workspace = Workspace(config.collection, config.session, config.seed)
    (ranker,) = workspace.build_rankers([config.ranker])
    target = target_for(ranker)
    tables = build_samples(config, names, workspace, options)
    results, refused = [], {}
    tries = None if config.limit is None else max(MIN_TRIES, TRIES_PER_SAMPLE * config.limit)
    for name in names:
        table = tables[name]
        samples = (table.sample(i) for i in range(len(table)))

        def patch(on: Callable[[int], None] | None, s: Iterator[Sample] = samples,
                  n: str = name) -> ProbePatching:
            return patch_samples(target, s, n, config.granularities, config.limit,
                                 config.seed, config.filler, batch_size,
                                 config.min_difference, tries, on)

        result = _with_progress(config, name, patch)
        why = refusal(result)
        if why is not None:
            refused[name] = why
            print(f"abnirml: patch: probe {name} refused: {why}", file=sys.stderr)
            continue
        results.append(result)
    if not results:
        only = next(iter(refused.items()))
        raise ConfigError(f"no probe could be patched; {only[0]}: {only[1]}")
    summaries = [summarise(r, config.resamples, config.level, config.seed) for r in results]
    seconds = time.perf_counter() - start
    if folder is not None:
        _write(folder, config, target, summaries, results, refused, seconds)
        _refresh_run_report(folder.parent.parent)   # OUT, above patching/<ranker>
    return PatchOutput(results, summaries, refused, seconds, folder)


def _with_progress(config: PatchConfig, name: str,
                   work: Callable[[Callable[[int], None] | None], ProbePatching]
                   ) -> ProbePatching:
    from abnirml.progress import progress_enabled

    if not progress_enabled(config.session.progress):
        return work(None)
    from tqdm.auto import tqdm

    bar = tqdm(total=config.limit, desc=f"patching {name}", unit="sample", file=sys.stderr,
               leave=False, mininterval=1.0)
    try:
        return work(lambda done: bar.update(done - bar.n))
    finally:
        bar.close()


def _target_folder(config: PatchConfig) -> Path:
    """``OUT/patching/<ranker label>``; refused before any work when it exists but was not
    written by ``abnirml patch``."""
    from abnirml.rankers.base import RankerSpec, file_label

    label = RankerSpec.parse(config.ranker).label    # a bad spec stops here, before any work
    if config.out is None:
        raise ValueError("patching writes no folder without --out")
    out = Path(config.out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; patching writes into a folder")
    folder = out / PATCHING_DIR / file_label(label)
    for parent in (out / PATCHING_DIR, folder):
        if os.path.lexists(parent) and kind_of(parent, follow=False) != "folder":
            raise ConfigError(f"--out: {parent} is a {kind_of(parent, follow=False)}, not a "
                              "folder abnirml wrote; choose another --out")
    # replaced only when everything in it is what an earlier ``abnirml patch`` wrote there
    check_replaceable_folder(folder, "--out: the patching folder")
    if _is_run_folder(out):
        # the command ends by rewriting the run's report: an edited report.md, a broken
        # results.jsonl… stop it now, not after the patching
        from abnirml.run_folder import RunFolder

        run = RunFolder(out)
        run.read_records()
        run.read_run_info()
        run.check_reports_overwritable()
    return folder


def _is_run_folder(out: Path) -> bool:
    from abnirml.files.run_names import RESULTS, RUN_INFO

    return (out / RUN_INFO).is_file() and (out / RESULTS).is_file()


def _write(folder: Path, config: PatchConfig, target: Any, summaries: list[dict[str, Any]],
           results: list[ProbePatching], refused: dict[str, str], seconds: float) -> None:
    """Write into a staging folder beside ``folder``, then swap it in."""
    from abnirml.report.patching import _slug

    document = {
        "format": FORMAT, "command": config.command,
        "ranker": {"name": target.name, "spec": config.ranker,
                   "fingerprint": getattr(target.ranker, "fingerprint", ""),
                   "device": str(target.device), "dtype": str(target.model_dtype)},
        "collection": config.collection, "seed": config.seed, "limit": config.limit,
        "filler": config.filler, "min_difference": config.min_difference,
        "batch_size": config.session.batch_size, "seconds": round(seconds, 1),
        "probes": summaries, "refused": refused,
    }
    run_folder = folder.parent.parent
    # an ``abnirml run`` folder lists the new files before they are swapped in, so a kill
    # before it records them leaves a folder the next run still owns
    with replacing_folder(folder, lambda: check_replaceable_folder(
            folder, "--out: the patching folder"), intent_in(run_folder, folder)) as staging:
        (staging / "samples").mkdir()
        (staging / "figures").mkdir()
        (staging / SUMMARY_FILE).write_text(json.dumps(document, indent=1, ensure_ascii=False,
                                                       allow_nan=False) + "\n",
                                            encoding="utf-8")
        (staging / "patching.md").write_text(markdown([document]), encoding="utf-8")
        for result, summary in zip(results, summaries, strict=True):
            slug = _slug(result.probe)
            _write_samples(staging / "samples" / f"{slug}.npz", result)
            try:
                for kind, png in figures(summary).items():
                    (staging / "figures" / f"{slug}-{kind}.png").write_bytes(png)
            except ImportError:
                pass
    # an ``abnirml run`` folder stays replaceable by the next run: its manifest lists these
    record_written(run_folder, [path for path in folder.rglob("*") if path.is_file()])


def _write_samples(path: Path, result: ProbePatching) -> None:
    order = sorted(range(len(result.samples)), key=lambda i: result.samples[i].key)
    samples = [result.samples[i] for i in order]
    arrays: dict[str, Any] = {
        "qid": np.asarray([s.qid for s in samples]),
        "key": np.asarray([s.key for s in samples]),
        "base": np.asarray([s.base for s in samples]),
        "perturbed": np.asarray([s.perturbed for s in samples]),
        "changed": np.asarray([s.changed for s in samples]),
        "length": np.asarray([s.length for s in samples]),
    }
    if "residual" in result.granularities:
        arrays["residual"] = stacked([s.residual for s in samples], "residual")
    if "heads" in result.granularities:
        arrays["heads"] = stacked([s.heads for s in samples], "heads")
    np.savez_compressed(path, **arrays)


def _refresh_run_report(out: Path) -> None:
    """Rebuild report.md / report.html of an ``abnirml run`` folder to show the section."""
    from abnirml.files.run_names import RESULTS, RUN_INFO

    if (out / RUN_INFO).is_file() and (out / RESULTS).is_file():
        from abnirml.run_folder import RunFolder

        RunFolder(out).write_reports()
