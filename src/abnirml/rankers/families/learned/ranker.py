"""Scoring with a trained model directory: each pair goes to the model whose held-out fold
contains its judged query (see :mod:`.folds`), or to the all-queries model.

A :class:`FoldedRanker` is a :class:`~abnirml.rankers.base.QueryRoutedRanker`: the engine
routes pairs by their query's identity and scores each fold's pairs with :meth:`routed`, so
a probe's varied query meets the model that held the original query out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from abnirml.errors import ConfigError
from abnirml.rankers.base import Pair, QueryIdentity, RankerHints, checked_scores
from abnirml.rankers.families.learned.folds import model_key
from abnirml.rankers.families.learned.model_directory import (
    ModelManifest,
    read_manifest,
    weights_name,
)
from abnirml.rankers.support.hf import directory_digest
from abnirml.text.analyzer import Analyzer

Predict = Callable[[list[Pair]], np.ndarray]
_KERNEL_BATCH = 32


class FoldedRanker:
    """Per-fold predictors, routed by query identity (engine) or by query text (``score``)."""

    def __init__(self, name: str, fingerprint: str, manifest: ModelManifest,
                 predictors: dict[str, Predict] | Callable[[], dict[str, Predict]],
                 hints: RankerHints):
        self.name = name
        self.fingerprint = fingerprint
        self.manifest = manifest
        self._predictors = predictors
        self.hints = hints

    @property
    def predictors(self) -> dict[str, Predict]:
        """The per-fold predictors, loaded on first use: the fingerprint needs only the
        directory's hash, so a fully cached rerun never imports torch or LightGBM."""
        if callable(self._predictors):
            self._predictors = self._predictors()
        return self._predictors

    def model_for(self, query_text: str) -> str:
        """``fold-i`` for a training query of fold i, ``all`` for any other text."""
        return model_key(self.manifest.plan.route(query_text))

    def route(self, identity: QueryIdentity) -> str:
        """``fold-i`` when the judged query ``identity`` was held out of fold i's training,
        ``all`` for a query no model was trained on."""
        return model_key(self.manifest.plan.route_query(identity))

    def routed(self, key: str) -> FoldModel:
        if key not in self.manifest.model_keys():
            raise ConfigError(f"ranker {self.name}: no model {key!r} in its directory")
        return FoldModel(self, key)

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        """Scores of bare pairs, each routed by its own query text (no identity known)."""
        groups: dict[str, list[int]] = {}
        routes: dict[str, str] = {}
        for i, (query, _) in enumerate(pairs):
            key = routes.get(query)
            if key is None:
                key = routes[query] = self.model_for(query)
            groups.setdefault(key, []).append(i)
        out = np.empty(len(pairs), dtype=np.float64)
        for key, idx in groups.items():
            out[idx] = self.predictors[key]([pairs[i] for i in idx])
        return checked_scores(self.name, out, len(pairs))


class FoldModel:
    """One model of a :class:`FoldedRanker`, as a plain ranker: its fingerprint names the
    model, so each fold's scores are cached apart."""

    def __init__(self, parent: FoldedRanker, key: str):
        self.parent = parent
        self.key = key
        self.name = parent.name
        self.fingerprint = f"{parent.fingerprint}[route={key}]"
        self.hints = parent.hints

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        return checked_scores(self.name, self.parent.predictors[self.key](list(pairs)),
                              len(pairs))


def load_folded(directory: Path, kind: str, name: str, env: Any) -> FoldedRanker:
    manifest = read_manifest(directory, name, expected_kind=kind)
    identity = directory_digest(directory)
    if kind == "lgbm":
        return _booster_ranker(directory, manifest, name, identity, env)
    return _kernel_ranker(directory, manifest, name, identity, env)


def _kernel_ranker(directory: Path, manifest: ModelManifest, name: str, identity: str,
                   env: Any) -> FoldedRanker:
    import importlib.util

    from abnirml.rankers.families.glove import glove_identity
    from abnirml.rankers.support.torch_support import import_or_explain, resolve_device

    for module_name in ("torch", "safetensors"):
        if importlib.util.find_spec(module_name) is None:
            import_or_explain(module_name, name, "learned")
    installed = glove_identity(name)
    expected = manifest.extra.get("embeddings")
    if expected and expected.split("@")[0] != installed.split("@")[0]:
        raise ConfigError(f"ranker {name}: the model was trained on {expected} vectors, "
                          f"but {installed} are installed")
    device = env.device_for(name, lazy=True)
    checked = env.device_checked          # a named accelerator: checked when the model loads

    def load() -> dict[str, Predict]:
        from safetensors.torch import load_file

        from abnirml.rankers.families.glove import load_glove
        from abnirml.rankers.families.learned.kernels import TextEncoder, build_module
        from abnirml.rankers.support.torch_support import import_torch

        torch = import_torch(name, "learned")
        if not checked:
            resolve_device(device, name)
        glove = load_glove(name)
        encoder = TextEncoder(glove, Analyzer(stopwords=manifest.stopwords).stopword_set,
                              int(manifest.params["max_query_len"]),
                              int(manifest.params["max_doc_len"]))
        predictors: dict[str, Predict] = {}
        for key in manifest.model_keys():
            module = build_module(manifest.kind, glove.dim)
            try:
                module.load_state_dict(load_file(str(directory / weights_name(manifest.kind,
                                                                               key))))
            except (RuntimeError, OSError) as exc:
                raise ConfigError(f"ranker {name}: cannot load {key} weights "
                                  f"({str(exc).splitlines()[0]})") from None
            predictors[key] = _kernel_predictor(module.to(device).eval(), encoder, device,
                                                torch)
        return predictors

    from abnirml.text.stopwords import content_tag

    # a stopword *file* is read now, so its contents (not its path) name the model
    stops = content_tag(manifest.stopwords, Analyzer(stopwords=manifest.stopwords).stopword_set)
    fingerprint = f"{manifest.kind.upper()}[model={identity}]" + (f"[{stops}]" if stops else "")
    return FoldedRanker(name, fingerprint, manifest, load,
                        RankerHints(batch_size=1024, sort_by_length=True))


def _kernel_predictor(module: Any, encoder: Any, device: str, torch: Any) -> Predict:
    def predict(pairs: list[Pair]) -> np.ndarray:
        q_ids = [encoder.ids(q, encoder.max_query_len) for q, _ in pairs]
        d_ids = [encoder.ids(d, encoder.max_doc_len) for _, d in pairs]
        out = np.empty(len(pairs), dtype=np.float64)
        with torch.inference_mode():
            for start in range(0, len(pairs), _KERNEL_BATCH):
                count = min(_KERNEL_BATCH, len(pairs) - start)
                # every call the same shape (rows padded with empty texts), so a pair's score
                # does not depend on the batch it came in, to the last bit
                filler: list[list[int]] = [[]] * (_KERNEL_BATCH - count)
                q_emb, q_mask = encoder.batch(q_ids[start:start + count] + filler, torch,
                                              encoder.max_query_len)
                d_emb, d_mask = encoder.batch(d_ids[start:start + count] + filler, torch,
                                              encoder.max_doc_len)
                scores = module(q_emb.to(device), q_mask.to(device), d_emb.to(device),
                                d_mask.to(device))
                out[start:start + count] = scores[:count].double().cpu().numpy()
        return out

    return predict


def _booster_ranker(directory: Path, manifest: ModelManifest, name: str, identity: str,
                    env: Any) -> FoldedRanker:
    import importlib.util

    from abnirml.rankers.families.learned.features import FEATURES, TextFeatures
    from abnirml.rankers.support.torch_support import import_or_explain

    if importlib.util.find_spec("lightgbm") is None:
        import_or_explain("lightgbm", name, "learned")
    if list(manifest.extra.get("features", [])) != list(FEATURES):
        raise ConfigError(f"ranker {name}: the model was trained on other features than this "
                          "abnirml computes; retrain it with 'abnirml train'")
    stats = _stats_for(env, manifest.stopwords, name)
    features = TextFeatures(stats)

    def load() -> dict[str, Predict]:
        lightgbm = import_or_explain("lightgbm", name, "learned")
        predictors: dict[str, Predict] = {}
        for key in manifest.model_keys():
            booster = lightgbm.Booster(model_file=str(directory / weights_name("lgbm", key)))

            def predict(pairs: list[Pair], booster: Any = booster) -> np.ndarray:
                return np.asarray(booster.predict(features.matrix(pairs), num_threads=1),
                                  dtype=np.float64)

            predictors[key] = predict
        return predictors

    fingerprint = f"LGBM[model={identity}][{features.signature}]"
    return FoldedRanker(name, fingerprint, manifest, load,
                        RankerHints(batch_size=4096, sort_by_length=False))


def _stats_for(env: Any, stopwords: str, name: str) -> Any:
    """Statistics of the run's collection, analysed with the model's stopword list."""
    if env is None or env.collection is None:
        raise ConfigError(f"ranker {name}: LightGBM features need the collection's statistics")
    if env.analyzer.stopwords == stopwords:
        return env.collection_stats()

    def build() -> Any:
        from abnirml.data.stats import CollectionStats

        return CollectionStats.build(env.collection.doc_texts(), Analyzer(stopwords=stopwords))

    return env.memo(f"stats:{stopwords}", build)
