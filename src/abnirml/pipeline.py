"""One call from configuration to an output directory — shared by the CLI and the Python API.

>>> from abnirml.pipeline import RunConfig, run
>>> result = run(RunConfig(collection="demo", rankers=["bm25"], probes=["mmp:*"], out="out"))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from abnirml.errors import ConfigError
from abnirml.evaluation.experiment import ExperimentConfig, ExperimentResult, run_experiment
from abnirml.evaluation.statistics import check_alpha, check_delta
from abnirml.probes.base import DEFAULT_GRADE_BANDS, ProbeContext

DEFAULT_RANKERS = ("bm25", "ql", "tfidf")


@dataclass
class RunConfig:
    collection: str = "demo"
    rankers: list[str] = field(default_factory=lambda: list(DEFAULT_RANKERS))
    probes: list[str] = field(default_factory=lambda: ["all"])
    out: str | None = None
    alpha: float = 0.01
    delta: float | None = None
    deltas: dict[str, float] = field(default_factory=dict)
    seed: int = 0
    candidates: str | None = None
    candidate_depth: int = 100
    cache: str | None = "default"          # "default", a path, or None for in-memory
    batch_size: int | None = None
    device: str = "cpu"
    stopwords: str = "default"
    grade_bands: tuple[tuple[str, int, int], ...] = DEFAULT_GRADE_BANDS
    options: dict[str, Any] = field(default_factory=dict)
    progress: bool = True
    examples_per_probe: int = 3
    allow_pickle: bool = False
    workers: int = 1
    ray_address: str | None = None
    variant_groups: dict[str, list[str]] = field(default_factory=dict)   # name → ranker specs
    effectiveness: bool = True             # re-rank the candidates and evaluate (needs qrels)


@dataclass
class RunOutput:
    result: ExperimentResult
    run_info: dict[str, Any]
    out: Path | None


def run(config: RunConfig) -> RunOutput:
    from abnirml.data.collection import load_collection
    from abnirml.evaluation.candidates import resolve_candidates
    from abnirml.evaluation.scoring import Scorer
    from abnirml.probes.registry import select_probes
    from abnirml.rankers.cache import ScoreCache, default_cache_path
    from abnirml.rankers.registry import RankerEnv, build_ranker
    from abnirml.text.analyzer import Analyzer

    check_alpha(config.alpha)
    if config.delta is not None:
        check_delta(config.delta)
    for name, value in config.deltas.items():
        check_delta(value, f"delta for {name}")
    if config.batch_size is not None and config.batch_size < 1:
        raise ConfigError(f"batch size must be ≥ 1, got {config.batch_size}")
    probes = select_probes(config.probes)
    collection = load_collection(config.collection)
    analyzer = Analyzer(stopwords=config.stopwords)
    env = RankerEnv(collection=collection, analyzer=analyzer, device=config.device,
                    batch_size=config.batch_size, seed=config.seed,
                    allow_pickle=config.allow_pickle, progress=config.progress)
    from abnirml.evaluation.variance import expand_rankers

    specs = expand_rankers(config.rankers, config.variant_groups)
    if not specs:
        raise ConfigError("no ranker given")
    rankers = [build_ranker(spec, env) for spec in specs]
    names = [r.name for r in rankers]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(f"ranker {duplicates[0]!r} given twice")
    unknown = sorted(set(config.deltas) - set(names))
    if unknown:
        raise ConfigError(f"--delta names unknown ranker {unknown[0]!r}")

    memo: dict[str, Any] = {}

    def candidates():
        if "c" not in memo:
            memo["c"] = resolve_candidates(collection, config.candidates, config.candidate_depth,
                                           env.collection_stats)
        return memo["c"]

    context = ProbeContext(collection=collection, analyzer=analyzer, seed=config.seed,
                           options=dict(config.options), grade_bands=config.grade_bands,
                           candidates=lambda: candidates().ranking)
    context.options.setdefault("ranker_env", env)
    needs_candidates = config.delta is None and any(n not in config.deltas for n in names)
    cache_path = None if config.cache is None else (
        default_cache_path() if config.cache == "default" else Path(config.cache))
    with ScoreCache(cache_path) as cache:
        from abnirml.evaluation.parallel import make_executor

        scorer = Scorer(cache, batch_size=config.batch_size, progress=config.progress,
                        executor=make_executor(config.workers, config.ray_address))
        if config.workers == 1 and config.ray_address is None:
            _preload_uncached(rankers, cache)
        result = run_experiment(
            probes, rankers, context, scorer,
            ExperimentConfig(alpha=config.alpha, deltas=config.deltas, delta_all=config.delta,
                             examples_per_probe=config.examples_per_probe),
            candidates() if needs_candidates else None)
        analyses: dict[str, Any] = {}
        if config.effectiveness and collection.qrels:
            from abnirml.evaluation.effectiveness import attach_effectiveness

            analyses["effectiveness"] = attach_effectiveness(result, rankers, collection,
                                                             candidates(), scorer)
    if config.variant_groups:
        analyses["variant_groups"] = {k: list(v) for k, v in config.variant_groups.items()}
    skipped = dict(collection.skipped)
    skipped.update(result.summary.get("skipped", {}))
    run_info = {
        "collection": {"name": collection.name, "source": collection.source or config.collection,
                       "queries": len(collection.queries), "documents": len(collection.docs),
                       "judgments": sum(len(j) for j in collection.qrels.values())},
        "rankers": [{"name": r.name, "fingerprint": r.fingerprint,
                     "delta": result.calibrations[r.name].delta,
                     "delta_source": result.calibrations[r.name].source,
                     "calibration_queries": result.calibrations[r.name].queries}
                    for r in rankers],
        "candidates": result.summary.get("candidates"),
        "skipped": skipped,
        "counts": {k: result.summary[k] for k in ("samples", "pair_slots", "unique_pairs",
                                                  "scored", "from_cache")},
        "options": {"alpha": config.alpha, "seed": config.seed, "stopwords": config.stopwords,
                    "grade_bands": ", ".join(f"{n} {lo}-{hi}" for n, lo, hi in config.grade_bands),
                    **{k: v for k, v in _public_options(config.options).items()}},
    }
    run_info.update(analyses)
    out = None
    if config.out is not None:
        out = Path(config.out)
        write_outputs(out, result, run_info)
    return RunOutput(result, run_info, out)


def _public_options(options: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (v if isinstance(v, (str, int, float, bool)) else str(v))
            for k, v in sorted(options.items()) if not k.startswith("_") and k != "ranker_env"}


def write_outputs(out: Path, result: ExperimentResult, run_info: Mapping[str, Any]) -> None:
    from abnirml.report.files import markdown_report, write_json, write_jsonl

    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "results.jsonl", result.records)
    write_jsonl(out / "examples.jsonl", result.examples)
    write_json(out / "run.json", run_info)
    write_json(out / "calibration.json",
               {name: {"delta": c.delta, "source": c.source, "queries": c.queries,
                       "gaps": [float(g) for g in c.gaps]}
                for name, c in result.calibrations.items()})
    (out / "report.md").write_text(markdown_report(result.records, run_info), encoding="utf-8")
    from abnirml.report.analyses import write_from_result  # scores.npz, report.html, tables/

    write_from_result(out, result, run_info)


def config_dict(config: RunConfig) -> dict[str, Any]:
    return asdict(config)


def _preload_uncached(rankers: list[Any], cache: Any) -> None:
    """Rankers with nothing cached will certainly load their model: let those that can
    (``preload()``) start now, in the background, while the samples are built. Rankers with
    cached scores stay lazy, so a warm rerun still loads nothing. Not with worker processes:
    a fork must not copy a half-finished load."""
    for ranker in rankers:
        preload = getattr(ranker, "preload", None)
        if preload is not None and not cache.has_scores(ranker.fingerprint):
            preload()
