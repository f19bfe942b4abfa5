"""Training KNRM, Conv-KNRM and LightGBM models with query-level cross-validation.

:func:`train_model` writes a model directory (see :mod:`.store`); :func:`cached_model` does
the same into the model cache, keyed by everything that changes the result — model kind,
hyperparameters, seed, folds, stopword list and a digest of the collection's queries,
judgments and documents — so plain ``knrm`` trains once per collection and seed.

Training is deterministic for a given seed: each fold's model draws its initial weights and
its training samples from a seed derived from (seed, kind, fold). KNRM and Conv-KNRM learn
from pairs of judged documents of one query with different grades (RankNet's logistic loss,
Adam); LightGBM is LambdaMART (``lambdarank``) over :mod:`.features`, with row and feature
subsampling so that the seed matters.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from abnirml.errors import ConfigError, install_hint
from abnirml.files.ownership import check_replaceable_folder, replacing_folder
from abnirml.rankers.families.learned.examples import JudgedQuery, judged_queries, preference_pairs
from abnirml.rankers.families.learned.folds import FoldPlan, model_key
from abnirml.rankers.families.learned.model_directory import (
    KINDS,
    VERSION,
    ModelManifest,
    weights_name,
)
from abnirml.text.analyzer import Analyzer

if TYPE_CHECKING:
    import torch

    from abnirml.data.collection import Collection
    from abnirml.data.stats import CollectionStats

DEFAULT_FOLDS = 5
DEFAULTS: dict[str, dict[str, int | float]] = {
    "knrm": {"steps": 300, "batch": 32, "lr": 0.01, "max_query_len": 16, "max_doc_len": 128},
    "cknrm": {"steps": 200, "batch": 32, "lr": 0.001, "max_query_len": 16, "max_doc_len": 128},
    "lgbm": {"rounds": 200, "leaves": 15, "lr": 0.05, "min_data": 10},
}

#: trains one fold's model on its training queries with a seed and writes it to a path
Trainer = Callable[[list["JudgedQuery"], int, Path], None]


class TrainingEnv(Protocol):
    """What :func:`cached_model` reads of the run's ranker environment
    (:class:`~abnirml.rankers.registry.RankerEnv`)."""

    @property
    def collection(self) -> Collection | None: ...

    @property
    def analyzer(self) -> Analyzer: ...

    def collection_stats(self) -> CollectionStats: ...


def hyperparameters(kind: str, given: Mapping[str, str], where: str) -> dict[str, int | float]:
    """Defaults for ``kind`` overridden by ``given`` (strings from a spec), type-checked."""
    params = dict(DEFAULTS[kind])
    for key, raw in given.items():
        if key not in params:
            raise ConfigError(f"{where}: unknown parameter {key!r} for {kind} "
                              f"(allowed: {', '.join(sorted(params))}, folds, seed)")
        try:
            value: int | float = int(raw) if isinstance(params[key], int) else float(raw)
        except ValueError:
            raise ConfigError(f"{where}: {key}={raw!r} is not a number") from None
        if value <= 0:
            raise ConfigError(f"{where}: {key} must be positive")
        params[key] = value
    return params


def derived_seed(seed: int, *parts: str) -> int:
    h = hashlib.blake2b("\x00".join([str(seed), *parts]).encode(), digest_size=4)
    return int.from_bytes(h.digest(), "little")


def collection_digest(collection: Collection, stats_digest: str) -> str:
    """Queries, judgments and (through the statistics digest) every document text."""
    h = hashlib.blake2b(digest_size=10)
    h.update(stats_digest.encode())
    for qid in sorted(collection.queries):
        h.update(f"q\x00{qid}\x00{collection.queries[qid]}\x00".encode("utf-8", "surrogatepass"))
    for qid, docno, grade in collection.judged():
        h.update(f"j\x00{qid}\x00{docno}\x00{grade}\x00".encode())
    return h.hexdigest()


def train_model(collection: Collection, kind: str, out: Path, *, seed: int = 0,
                folds: int = DEFAULT_FOLDS, params: Mapping[str, int | float] | None = None,
                analyzer: Analyzer | None = None, stats: CollectionStats | None = None,
                progress: bool | None = None) -> Path:
    """Train ``folds`` + 1 models of ``kind`` on ``collection`` and write them to ``out``."""
    from tqdm.auto import tqdm

    if kind not in KINDS:
        raise ConfigError(f"unknown model kind {kind!r} (known: {', '.join(KINDS)})")
    analyzer = analyzer or Analyzer()
    hp = {**DEFAULTS[kind], **(params or {})}
    judged = judged_queries(collection)
    plan = FoldPlan.build({q: j.text for q, j in judged.items()}, folds)
    if stats is None:
        from abnirml.data.stats import CollectionStats

        stats = CollectionStats.build(collection.doc_texts(), analyzer)
    out = Path(out)
    check_model_folder(out)
    with replacing_folder(Path(os.path.realpath(out)),
                          lambda: check_model_folder(out)) as staging:
        trainer = _kernel_trainer(kind, hp, analyzer) if kind != "lgbm" else \
            _booster_trainer(hp, judged, stats)
        keys = [*range(folds), None]
        bar = tqdm(keys, desc=f"training {kind}", unit="model",
                   disable=_bar_disabled(progress),
                   leave=False)
        for fold in bar:
            queries = [judged[q] for q in plan.training_qids(fold)]
            trainer(queries, derived_seed(seed, kind, model_key(fold)),
                    staging / weights_name(kind, model_key(fold)))
        manifest = ModelManifest(kind, seed, hp, analyzer.stopwords, plan,
                                 {"name": collection.name,
                                  "digest": collection_digest(collection, stats.digest)},
                                 _extra(kind))
        manifest.write(staging)
    return out


def check_model_folder(out: Path) -> None:
    """Refuse, before training, an ``--out`` that is a file or a folder holding anything
    this tool did not write there (notes beside a model are never deleted)."""
    from abnirml.files.output_folders import refuse_unusable_folder

    refuse_unusable_folder(out)
    check_replaceable_folder(out, "--out")


def _extra(kind: str) -> dict[str, Any]:
    if kind == "lgbm":
        from abnirml.rankers.families.learned.features import FEATURES

        return {"features": list(FEATURES)}
    from abnirml.rankers.families.glove import load_glove

    return {"embeddings": load_glove(kind).identity}


def _kernel_trainer(kind: str, hp: Mapping[str, int | float], analyzer: Analyzer) -> Trainer:
    import torch

    from abnirml.rankers.families.glove import load_glove
    from abnirml.rankers.families.learned.kernels import TextEncoder, build_module

    encoder = TextEncoder(load_glove(kind), analyzer.stopword_set, int(hp["max_query_len"]),
                          int(hp["max_doc_len"]))
    id_cache: dict[tuple[str, int], list[int]] = {}

    def ids(text: str, limit: int) -> list[int]:
        key = (text, limit)
        if key not in id_cache:
            id_cache[key] = encoder.ids(text, limit)
        return id_cache[key]

    def train(queries: list[JudgedQuery], seed: int, path: Path) -> None:
        from safetensors.torch import save_file

        triples = [(qi, i, j) for qi, q in enumerate(queries) for i, j in preference_pairs(q)]
        if not triples:
            raise ConfigError(f"{kind}: no judged document pairs with different grades to "
                              "learn from")
        table = np.asarray(triples, dtype=np.int64)
        q_ids = [ids(q.text, encoder.max_query_len) for q in queries]
        d_ids = [[ids(d, encoder.max_doc_len) for d in q.docs] for q in queries]
        rng = np.random.default_rng(seed)
        torch.manual_seed(seed)
        module = build_module(kind, encoder.glove.dim)
        optimiser = torch.optim.Adam(module.parameters(), lr=float(hp["lr"]))
        module.train()
        with single_thread(torch):
            _steps(module, optimiser, table, rng, q_ids, d_ids)
        state = {k: v.detach().contiguous() for k, v in module.state_dict().items()}
        save_file(state, str(path), metadata={"kind": kind})

    def _steps(module: torch.nn.Module, optimiser: torch.optim.Optimizer, table: np.ndarray,
               rng: np.random.Generator, q_ids: list[list[int]], d_ids: list[list[list[int]]]
               ) -> None:
        for _ in range(int(hp["steps"])):
            chosen = table[rng.integers(len(table), size=int(hp["batch"]))]
            qs = [q_ids[qi] for qi, _, _ in chosen] * 2
            ds = [d_ids[qi][i] for qi, i, _ in chosen] + [d_ids[qi][j] for qi, _, j in chosen]
            q_emb, q_mask = encoder.batch(qs, torch)
            d_emb, d_mask = encoder.batch(ds, torch)
            scores = module(q_emb, q_mask, d_emb, d_mask)
            better, worse = scores.chunk(2)
            loss = torch.nn.functional.softplus(worse - better).mean()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()

    return train


@contextlib.contextmanager
def single_thread(torch: Any) -> Iterator[None]:
    """Train on one thread: these models are too small to gain from more, contended cores
    make several threads much slower, and results stay bit-identical across machines'
    thread counts."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _booster_trainer(hp: Mapping[str, int | float], judged: Mapping[str, JudgedQuery],
                     stats: CollectionStats) -> Trainer:
    try:
        import lightgbm
    except ImportError:
        raise ConfigError(f"lgbm needs LightGBM: {install_hint('learned')}") from None
    from abnirml.rankers.families.learned.features import FEATURES, TextFeatures

    features = TextFeatures(stats)
    matrices = {qid: features.matrix([(q.text, d) for d in q.docs])
                for qid, q in judged.items()}

    def train(queries: list[JudgedQuery], seed: int, path: Path) -> None:
        x = np.concatenate([matrices[q.qid] for q in queries])
        y = np.concatenate([np.clip(np.asarray(q.grades), 0, None) for q in queries])
        data = lightgbm.Dataset(x, label=y, group=[len(q.docs) for q in queries],
                                feature_name=list(FEATURES), free_raw_data=False)
        params = {"objective": "lambdarank", "learning_rate": float(hp["lr"]),
                  "num_leaves": int(hp["leaves"]), "min_data_in_leaf": int(hp["min_data"]),
                  "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1,
                  "seed": seed, "deterministic": True, "force_row_wise": True,
                  "num_threads": 1, "verbose": -1}
        booster = lightgbm.train(params, data, num_boost_round=int(hp["rounds"]))
        booster.save_model(str(path))

    return train


def model_cache_dir() -> Path:
    """``$ABNIRML_MODELS``, else ``models/`` beside the score cache."""
    explicit = os.environ.get("ABNIRML_MODELS")
    if explicit:
        return Path(explicit)
    from abnirml.rankers.support.cache import default_cache_path

    return default_cache_path().with_name("models")


def cached_model(env: TrainingEnv, kind: str, seed: int, folds: int,
                 params: Mapping[str, int | float], ranker: str) -> Path:
    """The model directory for (collection, kind, params, seed), training it if needed."""
    if env.collection is None:
        raise ConfigError(f"ranker {ranker}: training needs a collection with judgments "
                          f"(or give a trained model: {kind}:<dir>)")
    stats = env.collection_stats()
    key = hashlib.blake2b(json.dumps(
        {"kind": kind, "params": dict(params), "seed": seed, "folds": folds,
         "stopwords": env.analyzer.signature, "version": VERSION,
         "collection": collection_digest(env.collection, stats.digest)},
        sort_keys=True).encode(), digest_size=10).hexdigest()
    label = re.sub(r"[^A-Za-z0-9_.-]+", "_", env.collection.name or "collection")
    path = model_cache_dir() / f"{kind}-{label}-seed{seed}-{key}"
    if not (path / "abnirml-model.json").is_file():
        train_model(env.collection, kind, path, seed=seed, folds=folds, params=params,
                    analyzer=env.analyzer, stats=stats, progress=getattr(env, "progress", None))
    return path


def train_from_spec(collection_spec: str, model_spec: str, out: str | Path, *, seed: int = 0,
                    folds: int = DEFAULT_FOLDS, stopwords: str = "default",
                    progress: bool | None = None, queries: str | None = None
                    ) -> tuple[str, Path]:
    """``abnirml train``: ``model_spec`` is ``knrm``, ``cknrm`` or ``lgbm`` with optional
    ``+key=value`` hyperparameters; ``queries`` (``--queries N|FILE``) trains on a subset.
    Returns the kind and the directory written."""
    from abnirml.data.collection import load_collection
    from abnirml.rankers.base import RankerSpec

    spec = RankerSpec.parse(model_spec)
    if spec.family not in KINDS or spec.argument:
        raise ConfigError(f"--model {model_spec!r}: expected one of {', '.join(KINDS)} "
                          "(optionally with +key=value hyperparameters)")
    params = hyperparameters(spec.family, dict(spec.params), f"--model {model_spec}")
    check_model_folder(Path(out))       # before the collection loads and training starts
    collection = load_collection(collection_spec)
    if queries is not None:
        from abnirml.data.query_subset import choose, restrict

        collection = restrict(collection, choose(collection, queries, seed))
    path = train_model(collection, spec.family, Path(out), seed=seed, folds=folds, params=params,
                       analyzer=Analyzer(stopwords=stopwords), progress=progress)
    return spec.family, path


def _bar_disabled(progress: bool | None) -> bool | None:
    """tqdm's ``disable``: off when asked or when ABNIRML_PROGRESS=0, else tqdm's own
    choice (None: no bar when stderr is not a terminal)."""
    from abnirml.progress import progress_enabled

    if progress is not None:
        return not progress
    return None if progress_enabled() else True
