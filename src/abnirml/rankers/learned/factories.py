"""Spec factories for the learned rankers.

* ``knrm:<dir>``, ``cknrm:<dir>``, ``lgbm:<dir>`` — load a directory ``abnirml train`` wrote.
* ``knrm``, ``cknrm``, ``lgbm`` — train on the run's collection (5 query folds, the run's
  ``--seed``), or reuse the copy in the model cache. Parameters: ``+seed=N`` (overrides
  ``--seed``, so several seeds can be compared in one run), ``+folds=K`` and the kind's
  hyperparameters (``steps``, ``batch``, ``lr``, ``max_query_len``, ``max_doc_len`` for the
  kernel models; ``rounds``, ``leaves``, ``lr``, ``min_data`` for LightGBM).
"""

from __future__ import annotations

from pathlib import Path

from abnirml.errors import ConfigError
from abnirml.rankers.base import RankerSpec
from abnirml.rankers.learned.ranker import FoldedRanker, load_folded
from abnirml.rankers.learned.train import DEFAULT_FOLDS, cached_model, hyperparameters


def knrm(spec: RankerSpec, env) -> FoldedRanker:
    return _learned("knrm", spec, env)


def cknrm(spec: RankerSpec, env) -> FoldedRanker:
    return _learned("cknrm", spec, env)


def lgbm(spec: RankerSpec, env) -> FoldedRanker:
    return _learned("lgbm", spec, env)


def _learned(kind: str, spec: RankerSpec, env) -> FoldedRanker:
    name = spec.canonical
    if spec.argument:
        if spec.params:
            raise ConfigError(f"ranker {name}: a trained model directory takes no parameters "
                              "(its seed and settings are fixed at training time)")
        return load_folded(Path(spec.argument).expanduser(), kind, name, env)
    given = dict(spec.params)
    seed = _int(given.pop("seed", None), env.seed, name, "seed")
    folds = _int(given.pop("folds", None), DEFAULT_FOLDS, name, "folds")
    params = hyperparameters(kind, given, f"ranker {name}")
    directory = cached_model(env, kind, seed, folds, params, name)
    return load_folded(directory, kind, name, env)


def _int(raw: str | None, default: int, name: str, key: str) -> int:
    if raw is None:
        return int(default)
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"ranker {name}: {key}={raw!r} is not an integer") from None
