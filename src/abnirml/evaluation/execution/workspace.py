"""The session every scoring command shares: collection, analysis, rankers, candidates, cache.

Every command that scores (``run``, ``masking``, ``rank-origin``, ``patch``,
``export-triples``, :func:`abnirml.expect`) builds these pieces through a :class:`Workspace`:
once, in one order, with the same checks (duplicate rankers, batch size), and its probe
context from :meth:`Workspace.probe_context` only. Candidates are resolved only when
something asks for them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abnirml.errors import ConfigError

if TYPE_CHECKING:
    from abnirml.evaluation.execution.parallel import ScoringExecutor
    from abnirml.rankers.family import BuiltRanker


@dataclass(frozen=True)
class SessionSettings:
    """How a scoring command loads its text and scores: analysis, candidate set, score
    cache, device and parallelism (the CLI's ``scoring_flags`` and ``session_flags``).

    One record for every command that scores (``run``, ``masking``, ``rank-origin``,
    ``patch``, ``export-triples``, :func:`abnirml.expect`), so none copies these settings
    field by field. What is scored (collection, rankers, probes) and the seed are the
    command's own.
    """

    stopwords: str = "default"
    #: a run file or the collection's run name giving each query's candidates; None: the
    #: collection's bm25 run, else a BM25 top ``candidate_depth`` computed over it
    candidates: str | None = None
    candidate_depth: int = 100
    cache: str | None = "default"          # "default", a path, or None for in-memory
    device: str = "cpu"
    batch_size: int | None = None
    allow_pickle: bool = False
    progress: bool | None = None           # None: on unless ABNIRML_PROGRESS=0 (progress.py)
    workers: int = 1                       # processes scoring each ranker's batches
    ray_address: str | None = None         # score batches as Ray tasks ("local" or an address)
    ray_tasks: int | None = None           # Ray tasks in flight; None: sized from the cluster
    ray_gpus: float | None = None          # GPUs each Ray task asks for; None: 1 on cuda
    #: ``--queries``: a count of judged queries drawn with the seed, or a file of query ids;
    #: None: every query (:mod:`abnirml.data.query_subset`)
    queries: str | None = None

    @classmethod
    def from_args(cls, args: Any) -> SessionSettings:
        """The settings the parsed command-line flags give (``--no-cache``: in memory,
        ``--quiet``: no progress bars, ``--ray``: the Ray address); flags a command does not
        have keep their defaults."""
        given = {name: getattr(args, name) for name in cls.__dataclass_fields__
                 if getattr(args, name, None) is not None}
        if getattr(args, "no_cache", False):
            given["cache"] = None
        if getattr(args, "quiet", False):
            given["progress"] = False
        if getattr(args, "ray", None) is not None:
            given["ray_address"] = args.ray
        return cls(**given)

    def check(self) -> None:
        """Refuse counts no command can use, before anything loads (a collection can take
        a minute)."""
        if self.batch_size is not None and self.batch_size < 1:
            raise ConfigError(f"batch size must be ≥ 1, got {self.batch_size}")
        if self.workers < 1:
            raise ConfigError(f"workers must be ≥ 1, got {self.workers}")
        if self.ray_tasks is not None and self.ray_tasks < 1:
            raise ConfigError(f"Ray tasks in flight (--ray-tasks) must be ≥ 1, got "
                              f"{self.ray_tasks}")
        if self.ray_gpus is not None and not 0 < self.ray_gpus <= 64:
            raise ConfigError(f"GPUs per Ray task (--ray-gpus) must be > 0 and ≤ 64 (a "
                              f"fraction shares a GPU), got {self.ray_gpus}")
        if self.ray_address is not None:
            from abnirml.evaluation.execution.ray_connect import check_token_for

            check_token_for(self.ray_address)     # a token file that cannot work

    def gpus_per_task(self) -> float | None:
        """GPUs each Ray task asks for: ``ray_gpus``, else one for a ranker on ``cuda``,
        else none."""
        if self.ray_gpus is not None:
            return self.ray_gpus
        return 1.0 if self.device.startswith("cuda") else None


class Workspace:
    """Loaded collection, analyzer and ranker environment, plus lazy candidates and cache."""

    def __init__(self, collection: str = "demo", session: SessionSettings | None = None,
                 seed: int = 0):
        from abnirml.data.collection import load_collection
        from abnirml.progress import progress_enabled
        from abnirml.rankers.registry import RankerEnv
        from abnirml.text.analyzer import Analyzer

        settings = session if session is not None else SessionSettings()
        settings.check()
        self.settings = settings
        self.seed = seed
        self.progress = progress_enabled(settings.progress)
        self.collection = load_collection(collection)
        self.query_subset: Any = None
        if settings.queries is not None:
            from abnirml.data.query_subset import choose, restrict

            self.query_subset = choose(self.collection, settings.queries, seed)
            self.collection = restrict(self.collection, self.query_subset)
        self.analyzer = Analyzer(stopwords=settings.stopwords)
        self.env = RankerEnv(collection=self.collection, analyzer=self.analyzer,
                             device=settings.device, batch_size=settings.batch_size,
                             seed=seed, allow_pickle=settings.allow_pickle,
                             progress=self.progress)
        self._candidates: Any = None
        self._parse_cache: Any = None
        self._built: list[BuiltRanker] = []
        cache_file = self.cache_path()
        if cache_file is not None:
            from abnirml.rankers.support.token_store import default_path as token_store_path

            self.env.token_store = token_store_path(cache_file)

    def cache_path(self) -> Path | None:
        """The score cache file (``--cache``, else the default), or None for ``--no-cache``."""
        from abnirml.rankers.support.cache import default_cache_path

        cache = self.settings.cache
        return None if cache is None else (
            default_cache_path() if cache == "default" else Path(cache))

    @property
    def parse_cache(self) -> Any:
        """The spaCy parse store beside the score cache (in memory only for ``--no-cache``);
        it opens its file on first use."""
        if self._parse_cache is None:
            from abnirml.probes.parse_cache import ParseCache, default_path

            path = self.cache_path()
            self._parse_cache = ParseCache(None if path is None else default_path(path))
        return self._parse_cache

    def build_rankers(self, specs: Sequence[Any]) -> list[Any]:
        """One ranker per spec string, Ranker object or PyTerrier-style transformer (wrapped
        by :func:`~abnirml.rankers.families.adapters.wrap_pyterrier`, named ``pyterrier``,
        ``pyterrier-2`` …); an empty list or a ranker named twice is a user error. The
        workspace keeps each one's record (:meth:`built`): its spec and family."""
        from abnirml.rankers.family import BuiltRanker
        from abnirml.rankers.registry import build

        if not specs:
            raise ConfigError("no ranker given")
        records: list[BuiltRanker] = []
        for spec in specs:
            records.append(build(spec, self.env) if isinstance(spec, str)
                           else BuiltRanker(as_ranker(spec, [r.name for r in records])))
        names = [r.name for r in records]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigError(f"ranker {duplicates[0]!r} given twice (names, display names "
                              "included, must be unique)")
        self._built += records
        return [r.ranker for r in records]

    def built(self, ranker: Any) -> BuiltRanker:
        """The record of a ranker this workspace built: the ranker with its spec and family
        (None for a ranker given as an object). A ranker it did not build is a bug."""
        for record in self._built:
            if record.ranker is ranker:
                return record
        raise ValueError(f"ranker {getattr(ranker, 'name', ranker)!r} was not built by this "
                         "workspace")

    def candidates(self) -> Any:
        """Each query's candidate documents, resolved on first use."""
        if self._candidates is None:
            from abnirml.evaluation.execution.candidates import resolve_candidates

            self._candidates = resolve_candidates(self.collection, self.settings.candidates,
                                                  self.settings.candidate_depth,
                                                  self.env.collection_stats)
        return self._candidates

    def probe_context(self, options: Any = None, **fields: Any) -> Any:
        """The ProbeContext over this workspace — the one way a command makes one.

        ``options`` is a :class:`~abnirml.probes.family_registry.ResolvedOptions` (each
        family's typed options) or None for the defaults; ``fields`` set further context
        fields (``grade_bands``). The context shares this workspace's ranker environment, so
        probes and rankers build the collection statistics once."""
        from abnirml.probes.base import ProbeContext
        from abnirml.probes.family_registry import resolve_options

        resolved = options if options is not None else resolve_options({})
        settings = type(resolved.settings)(resolved.settings)   # a copy, still complete
        return ProbeContext(collection=self.collection, analyzer=self.analyzer,
                            seed=self.seed, settings=settings, ranker_env=self.env,
                            parse_cache=self.parse_cache,
                            candidates=lambda: self.candidates().ranking,
                            candidate_scores=lambda: self.candidates().scores, **fields)

    @contextmanager
    def scorer(self, progress: bool | None = None) -> Iterator[Any]:
        """A Scorer over the score cache, open for the duration of the block, scoring in
        the session's ``workers`` processes or on its Ray cluster."""
        from abnirml.evaluation.execution.scoring import Scorer
        from abnirml.rankers.support.cache import ScoreCache

        settings = self.settings
        executor = make_executor(settings.workers, settings.ray_address, settings.ray_tasks,
                                 settings.gpus_per_task())
        try:
            with ScoreCache(self.cache_path()) as store:
                yield Scorer(store, batch_size=settings.batch_size,
                             progress=self.progress if progress is None else progress,
                             executor=executor)
        finally:
            close = getattr(executor, "close", None)
            if close is not None:
                close()         # a Ray this session started stops with it


def as_ranker(obj: Any, taken: Sequence[str]) -> Any:
    """A Ranker object as it is; a PyTerrier transformer wrapped under an unused name."""
    from abnirml.rankers.base import Ranker, check_ranker_fields

    if isinstance(obj, type):
        raise ConfigError(f"ranker {obj.__name__} is a class; pass an instance, e.g. "
                          f"{obj.__name__}()")
    if isinstance(obj, Ranker) or callable(getattr(obj, "rank_windows", None)):
        check_ranker_fields(obj, f"ranker {type(obj).__name__}")
        return obj
    if callable(getattr(obj, "transform", None)):
        from abnirml.rankers.families.adapters import wrap_pyterrier

        name, i = "pyterrier", 2
        while name in taken:
            name, i = f"pyterrier-{i}", i + 1
        return wrap_pyterrier(obj, name=name)
    raise ConfigError(f"ranker {obj!r}: expected a spec string, a Ranker (name, fingerprint, "
                      "score) or a PyTerrier transformer")


def make_executor(workers: int = 1, ray_address: str | None = None,
                  ray_tasks: int | None = None,
                  ray_gpus: float | None = None) -> ScoringExecutor:
    """The executor a session's settings ask for (chosen here, above both executor
    modules, so neither imports the other back): Ray (``ray_tasks`` in flight, else sized
    from the cluster; ``ray_gpus`` per task), worker processes, or this process."""
    from abnirml.evaluation.execution.parallel import (
        ProcessExecutor,
        SerialExecutor,
        check_ray_address,
    )

    if ray_address is not None:
        from abnirml.evaluation.execution.ray_executor import RayExecutor

        check_ray_address(ray_address)
        return RayExecutor(ray_address, ray_tasks, ray_gpus)
    if workers > 1:
        return ProcessExecutor(workers)
    if workers < 1:
        raise ConfigError(f"--workers must be ≥ 1, got {workers}")
    return SerialExecutor()
