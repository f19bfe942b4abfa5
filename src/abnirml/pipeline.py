"""One call from configuration to an output directory — shared by the CLI and the Python API.

>>> from abnirml.pipeline import RunConfig, SessionSettings, run
>>> result = run(RunConfig(collection="demo", rankers=["bm25"], probes=["mmp:*"], out="out",
...                        session=SessionSettings(cache=None)))
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from abnirml.errors import ConfigError
from abnirml.evaluation.execution.experiment import (
    ExperimentConfig,
    ExperimentResult,
    run_experiment,
)
from abnirml.evaluation.execution.workspace import SessionSettings
from abnirml.evaluation.stats.significance import StatisticsSettings, StatsConfig
from abnirml.evaluation.stats.statistics import check_alpha, check_delta
from abnirml.probes.base import DEFAULT_GRADE_BANDS
from abnirml.rankers.support import background_import
from abnirml.report.tables import MARK_SIGNIFICANT
from abnirml.run_record import (
    CollectionInfo,
    CountsInfo,
    DeltaCalibrationInfo,
    OmittedProbe,
    OptionsInfo,
    RankerInfo,
    RunInfo,
    StatisticsInfo,
)
from abnirml.text.lines import shown_path

if TYPE_CHECKING:
    from abnirml.rankers.family import BuiltRanker

__all__ = ["RunConfig", "RunOutput", "SessionSettings", "StatisticsSettings", "run"]

DEFAULT_RANKERS = ("bm25", "ql", "tfidf")


@dataclass(slots=True)
class RunConfig:
    """What to run and where to write it; ``session`` says how it is loaded and scored,
    ``statistics`` how effects and significance are decided. Every field has a default:
    ``RunConfig(collection="demo", rankers=["bm25"], probes=["mmp:*"])`` is a whole run.
    Slots make a misplaced field an error: ``config.cache = None`` raises AttributeError
    (it is ``config.session``'s)."""

    collection: str = "demo"
    #: spec strings ("bm25+k1=0.9"), Ranker objects or PyTerrier transformers
    rankers: list[Any] = field(default_factory=lambda: list(DEFAULT_RANKERS))
    probes: list[str] = field(default_factory=lambda: ["all"])
    out: str | None = None
    #: probe options, "FAMILY.KEY" → value (``--option``)
    options: dict[str, Any] = field(default_factory=dict)
    seed: int = 0                          # every random choice: samples, rankers, tests
    session: SessionSettings = field(default_factory=SessionSettings)
    statistics: StatisticsSettings = field(default_factory=StatisticsSettings)
    grade_bands: tuple[tuple[str, int, int], ...] = DEFAULT_GRADE_BANDS
    examples_per_probe: int = 3
    variant_groups: dict[str, list[str]] = field(default_factory=dict)   # name → ranker specs
    effectiveness: bool = True             # re-rank the candidates and evaluate (needs qrels)
    #: leave out (and list in run.json) probes whose optional dependencies are missing,
    #: instead of stopping before any work
    skip_unavailable: bool = False
    #: stop, instead of replacing it, when ``out`` holds an earlier run of other rankers or
    #: probes (``--keep``); without it the replacement is announced in one warning line
    keep: bool = False
    #: how the report's tables mark significance: "significant" (a * after each
    #: significant score, the default) or "not-significant" (ABNIRML's * before the others)
    significance_mark: str = MARK_SIGNIFICANT

    def stats(self) -> StatsConfig:
        return self.statistics.stats(self.seed)


@dataclass
class RunOutput:
    result: ExperimentResult
    run_info: RunInfo
    out: Path | None

    def to_frame(self) -> Any:
        """The results as a tidy pandas DataFrame (one row per probe, ranker and subset)."""
        from abnirml.frames import results_frame

        return results_frame(self.result.records)


def _warn_grades_outside_bands(collection: Any, bands: Any) -> None:
    """Judgments no --grade-bands band covers appear in 'all' only; say how many."""
    import warnings

    from abnirml.data.collection import grades_outside

    outside = grades_outside(collection, bands)
    if outside:
        listed = ", ".join(f"grade {g} × {n}" for g, n in outside.items())
        warnings.warn(f"{sum(outside.values())} judgment(s) fall outside every grade band "
                      f"({listed}); they count in the 'all' rows only", stacklevel=2)


def run(config: RunConfig, *, progress: bool | None = None) -> RunOutput:
    """Probe ``config.rankers`` on ``config.collection`` and write ``config.out`` (if set).

    ``progress=False`` (or ``RunConfig(session=SessionSettings(progress=False))``, or
    ``ABNIRML_PROGRESS=0`` in the environment) keeps stderr free of progress bars, e.g. in
    a notebook cell; the argument wins over the config, which wins over the environment.

    The steps of the architecture page, in order: check the configuration, select the
    probes (their options resolved), check the output folder, load the workspace, run the
    experiment and its analyses, describe the run, write the folder. Everything a user can
    get wrong is refused before the collection loads or any ranker scores.
    """
    config, stats = _checked_config(config, progress)
    selection = _select_probes(config)
    folder = _output_folder(config)
    loaded = _load(config, selection, folder)
    try:
        result, analyses, ray_record = _experiment(config, stats, selection, loaded)
    finally:
        if loaded.table_workers is not None:
            loaded.table_workers.close()
    run_info = _run_info(config, stats, selection, loaded, result, analyses, ray_record)
    if folder is not None:
        folder.write(result, run_info)
    return RunOutput(result, run_info, None if folder is None else folder.path)


@dataclass(frozen=True)
class _Selection:
    """The probes a run will run: their families' options resolved and checked, and those
    left out (with why) for run.json."""

    resolved: Any
    probes: list[Any]
    omitted: list[dict[str, Any]]


@dataclass(frozen=True)
class _Loaded:
    """What the experiment runs on: the workspace (collection, scorer, candidates), the
    rankers built from their specs, and the one probe context."""

    workspace: Any
    rankers: list[Any]
    context: Any
    in_process: bool
    table_workers: Any = None      # forked processes that build the sample tables


def _checked_config(config: RunConfig, progress: bool | None
                    ) -> tuple[RunConfig, StatsConfig]:
    """Check the configuration's types and numbers (α, the test, δ, the session's paths)
    before anything loads; ``progress`` overrides the session's. Returns it with the
    checked test settings."""
    from abnirml.api_checks import check_progress, checked_config

    check_progress(progress, "run(progress=…)")
    if not isinstance(config, RunConfig):
        raise ConfigError(f"run() takes a RunConfig, got {type(config).__name__}; write "
                          "run(RunConfig(...))")
    config = checked_config(config)
    if progress is not None:
        config = dataclasses.replace(
            config, session=dataclasses.replace(config.session, progress=progress))
    statistics = config.statistics
    check_alpha(statistics.alpha)
    stats = config.stats()
    if statistics.delta is not None:
        check_delta(statistics.delta)
    for name, value in statistics.deltas.items():
        check_delta(value, f"delta for {name}")
    config.session.check()           # before the collection loads
    return config, stats


def _select_probes(config: RunConfig) -> _Selection:
    """Resolve every family's options and select the probes (``resolve_options``,
    ``select_probes``): unavailable ones left out, requirements checked — all before any
    work, so a typo costs no loading."""
    from abnirml.probes.family_registry import (
        check_requirements,
        resolve_options,
        without_missing_requirements,
    )
    from abnirml.probes.probe_registry import omit_unavailable, select_probes

    resolved = resolve_options(config.options)
    probes, omitted = omit_unavailable(select_probes(config.probes), config.probes,
                                       resolved.settings)
    if config.skip_unavailable:
        probes, missing = without_missing_requirements(probes, resolved.settings)
        omitted += missing
    if not probes:
        raise ConfigError(f"no probe left to run: {omitted[0]['probe']}: "
                          f"{omitted[0]['reason']}")
    check_requirements(probes, resolved.settings)
    return _Selection(resolved, probes, omitted)


def _output_folder(config: RunConfig) -> Any:
    """The output folder (``RunFolder.check``): one the tool may replace, not holding the
    score cache; None without ``out``."""
    from abnirml.run_folder import RunFolder

    if config.out is None:
        return None
    folder = RunFolder(config.out)
    folder.check_replaceable()
    cache = config.session.cache
    if cache is not None:
        from abnirml.rankers.support.cache import default_cache_path

        folder.refuse_inside(default_cache_path() if cache == "default" else cache, "--cache")
    return folder


def _load(config: RunConfig, selection: _Selection, folder: Any) -> _Loaded:
    """Load the workspace and build the rankers (their libraries imported in the background
    while the data loads); a replaced output folder is announced before any scoring."""
    from abnirml.evaluation.execution.table_workers import TableWorkers
    from abnirml.evaluation.execution.workspace import Workspace
    from abnirml.evaluation.stats.variance import expand_rankers

    session, statistics = config.session, config.statistics
    in_process = session.workers == 1 and session.ray_address is None
    workspace = Workspace(config.collection, session, config.seed)
    _warn_grades_outside_bands(workspace.collection, config.grade_bands)
    context = workspace.probe_context(selection.resolved, grade_bands=config.grade_bands)
    # forked now, while this process runs one thread: before the background imports and
    # model loads below (a fork copies no other thread, nor releases their locks)
    table_workers = TableWorkers.start(selection.probes, context)
    try:
        if in_process:  # rankers that load their model when built: import meanwhile
            background_import.for_specs([*config.rankers,
                                         *(s for group in config.variant_groups.values()
                                           for s in group)])
        rankers = workspace.build_rankers(expand_rankers(config.rankers,
                                                         config.variant_groups))
        names = [r.name for r in rankers]
        unknown = sorted(set(statistics.deltas) - set(names))
        if unknown:
            raise ConfigError(f"--delta names unknown ranker {unknown[0]!r}")
        if folder is not None:           # before any scoring: nothing is lost unannounced
            _announce_replacement(folder, names, [p.name for p in selection.probes],
                                  config.keep)
    except BaseException:
        if table_workers is not None:
            table_workers.close()
        raise
    return _Loaded(workspace, rankers, context, in_process, table_workers)


def _experiment(config: RunConfig, stats: StatsConfig, selection: _Selection,
                loaded: _Loaded) -> tuple[ExperimentResult, dict[str, Any], Any]:
    """Run the experiment and the analyses that need the scorer (effectiveness, the
    listwise position analyses, the axiom overlap split, each family's ``annotate``), in
    one scorer session; returns the result, the analyses for run.json and the Ray record."""
    from abnirml.probes.family_registry import get_family

    workspace, rankers, context = loaded.workspace, loaded.rankers, loaded.context
    collection, statistics = workspace.collection, config.statistics
    names = [r.name for r in rankers]
    needs_candidates = statistics.delta is None and any(n not in statistics.deltas
                                                        for n in names)
    with workspace.scorer() as scorer:
        if loaded.in_process:
            _preload_uncached([workspace.built(r) for r in rankers], scorer.cache)
        elif callable(prepare := getattr(scorer.executor, "prepare", None)):
            # Ray: join (or start) the cluster and load the models in its workers now
            prepare([r for r in rankers if not scorer.cache.has_scores(r.fingerprint)])
        candidates = workspace.candidates
        result = run_experiment(
            selection.probes, rankers, context, scorer,
            ExperimentConfig(alpha=statistics.alpha, deltas=statistics.deltas,
                             delta_all=statistics.delta,
                             examples_per_probe=config.examples_per_probe, stats=stats),
            candidates() if needs_candidates else None, table_workers=loaded.table_workers)
        if loaded.table_workers is not None:       # the tables are built: free the cores
            loaded.table_workers.close()
        analyses: dict[str, Any] = {}
        if config.effectiveness and collection.qrels:
            from abnirml.evaluation.analyses.effectiveness import attach_effectiveness

            analyses["effectiveness"] = attach_effectiveness(result, rankers, collection,
                                                             candidates(), scorer)
        from abnirml.rankers.listwise import is_listwise

        if any(is_listwise(r) for r in rankers):
            from abnirml.evaluation.analyses.position_analyses import listwise_analyses

            listwise = listwise_analyses(rankers, scorer, collection, candidates().ranking,
                                         config.seed, stats.resamples, stats.ci_level)
            if listwise:
                analyses["listwise"] = listwise
            # every window the run asked: probes, effectiveness and the position analyses
            result.summary.update(windows_ranked=scorer.windows_ranked,
                                  windows_from_cache=scorer.windows_reused)
        report = getattr(scorer.executor, "report", None)
        ray_record = report() if report is not None else None
        from abnirml.evaluation.analyses.axiom_breakdown import attach_overlap_split

        attach_overlap_split(result, collection, context.analyzer, config.seed)
        for key in dict.fromkeys(p.family for p in selection.probes):
            annotate = get_family(key).annotate
            if annotate is not None:
                annotate(result)
    if config.variant_groups:
        analyses["variant_groups"] = {k: list(v) for k, v in config.variant_groups.items()}
    return result, analyses, ray_record


#: run.json's ``counts``, in the order it lists them (those the run did)
COUNTS = ("samples", "pair_slots", "unique_pairs", "scored", "from_cache", "windows_ranked",
          "windows_from_cache")


def _run_info(config: RunConfig, stats: StatsConfig, selection: _Selection,
              loaded: _Loaded, result: ExperimentResult, analyses: dict[str, Any],
              ray_record: Any) -> RunInfo:
    """run.json (:class:`~abnirml.run_record.RunInfo`): what was run — collection, rankers
    with δ, statistics, counts, options, the families' labels (so a report renders without
    their plugins) and the analyses. The keys go in the order the file shows them."""
    from abnirml.probes.family_registry import get_family

    workspace, rankers, probes = loaded.workspace, loaded.rankers, selection.probes
    collection, session, statistics = workspace.collection, config.session, config.statistics
    skipped = dict(collection.skipped)
    skipped.update(result.summary.get("skipped", {}))
    described: CollectionInfo = {
        "name": collection.name, "source": collection.source or config.collection,
        "queries": len(collection.queries), "documents": len(collection.docs),
        "judgments": sum(len(j) for j in collection.qrels.values())}
    if workspace.query_subset is not None:
        described["query_subset"] = workspace.query_subset.as_dict()
    run_info: RunInfo = {
        "collection": described,
        "rankers": [_ranker_info(r, workspace.built(r), result) for r in rankers],
        "candidates": result.summary.get("candidates"),
        "statistics": cast(StatisticsInfo, {**stats.as_dict(),
                                            **result.summary.get("test_rounds", {})}),
        "delta_calibration": calibration_info(session.candidate_depth,
                                              result.summary.get("candidates")),
        "skipped": skipped,
        "counts": cast(CountsInfo, {k: result.summary[k] for k in COUNTS if k in result.summary}),
        # the families' options (``dtp.data`` …) follow the declared ones under their names
        "options": cast(OptionsInfo, {
            "alpha": statistics.alpha, "seed": config.seed,
            "stopwords": shown_path(session.stopwords),
            "grade_bands": ", ".join(f"{n} {lo}-{hi}" for n, lo, hi in config.grade_bands),
            **selection.resolved.public}),
        "families": [get_family(key).describe()
                     for key in dict.fromkeys(p.family for p in probes)],
        "probe_labels": {p.name: get_family(p.family).label_cells(p) for p in probes},
        "report": {"significance_mark": config.significance_mark},
    }
    usage = _usage(rankers)
    if usage:
        run_info["usage"] = usage
    device = _device_section(rankers)
    if device:
        run_info["device"] = device
    if ray_record is not None:      # where the batches ran (nodes, retries, lost nodes)
        run_info["scoring"] = {"ray": ray_record}
    if selection.omitted:
        run_info["omitted_probes"] = cast(list[OmittedProbe], selection.omitted)
    run_info.update(cast(RunInfo, analyses))
    return run_info


def _ranker_info(ranker: Any, built: BuiltRanker, result: ExperimentResult) -> RankerInfo:
    """One entry of run.json's ``rankers``: its name (and the spec a display name stands
    for), fingerprint and δ."""
    calibration = result.calibrations[ranker.name]
    return cast(RankerInfo, {"name": ranker.name, **_spec_field(built),
                             "fingerprint": ranker.fingerprint, "delta": calibration.delta,
                             "delta_source": calibration.source,
                             "calibration_queries": calibration.queries})


def _usage(rankers: list[Any]) -> dict[str, dict[str, int]]:
    """Per ranker that counts what it costs (a served model's ``usage()``: requests,
    prompt and completion tokens), its counts for this run."""
    from abnirml.rankers.listwise import usage

    counted = {r.name: usage(r) for r in rankers}
    return {name: counts for name, counts in counted.items() if counts}


def _device_section(rankers: list[Any]) -> dict[str, Any]:
    """How each torch ranker ran (:meth:`DeviceSettings.describe`: device, precision, token
    budget, attention backends) and the torch version, where torch was imported; nothing
    for a run of rankers without device settings."""
    import sys

    described = {}
    for ranker in rankers:
        describe = getattr(getattr(ranker, "settings", None), "describe", None)
        if callable(describe):
            described[ranker.name] = describe()
    if not described:
        return {}
    torch = sys.modules.get("torch")
    version = getattr(torch, "__version__", None)
    return {"rankers": described, **({"torch": str(version)} if version else {})}


def _announce_replacement(folder: Any, rankers: list[str], probes: list[str],
                          keep: bool) -> None:
    """``--out`` holds a run of other rankers or probes: say in one line what this run
    replaces (a warning), or stop with ``keep``."""
    note = folder.replacement(rankers, probes, would=keep)
    if note is None:
        return
    if keep:
        raise ConfigError(f"{note}; --keep keeps it: give --out a new folder")
    import warnings

    warnings.warn(f"{note}; --keep stops instead, or give --out a new folder", stacklevel=4)


def _spec_field(built: BuiltRanker) -> dict[str, str]:
    """``{"spec": …}`` for a ranker shown under a display name (what the name stands for,
    from the workspace's record of it); nothing otherwise, so runs without display names
    write the run.json they always did."""
    return {"spec": built.identity} if built.identity != built.name else {}


def calibration_info(depth: int, candidates: str | None) -> DeltaCalibrationInfo:
    """How δ was calibrated, so a reader can tell it apart from ABNIRML's setting."""
    from abnirml.evaluation.stats.calibration import TOP

    return {"candidates": candidates, "candidate_depth": depth, "top": TOP,
            "note": (f"δ = median gap between adjacent scores in each query's top {TOP}, "
                     f"re-scoring the candidate run cut at depth {depth}; ABNIRML re-ranked "
                     "the official top-1000 set (--candidate-depth 1000 reproduces it)")}


def _preload_uncached(records: list[BuiltRanker], cache: Any) -> None:
    """Rankers with nothing cached will certainly score: their libraries are imported now,
    in the background, while the samples are built, and those that can (``preload()``) load
    their model too. Rankers with cached scores stay lazy, so a warm rerun still imports and
    loads nothing. Not with worker processes: a fork must not copy a half-finished load."""
    for built in records:
        ranker = built.ranker
        if cache.has_scores(ranker.fingerprint):
            continue
        background_import.for_scoring(built)
        preload = getattr(ranker, "preload", None)
        if preload is not None:
            preload()
