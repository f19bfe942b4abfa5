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
from typing import TYPE_CHECKING, Any

from abnirml.errors import ConfigError
from abnirml.rankers.base import RankerSpec
from abnirml.rankers.families.learned.ranker import FoldedRanker, load_folded
from abnirml.rankers.families.learned.train import cached_model, hyperparameters

if TYPE_CHECKING:
    from abnirml.rankers.built_in import LearnedParams


def knrm(spec: RankerSpec, p: LearnedParams, env: Any) -> FoldedRanker:
    return _learned("knrm", spec, p, env)


def cknrm(spec: RankerSpec, p: LearnedParams, env: Any) -> FoldedRanker:
    return _learned("cknrm", spec, p, env)


def lgbm(spec: RankerSpec, p: LearnedParams, env: Any) -> FoldedRanker:
    return _learned("lgbm", spec, p, env)


def _learned(kind: str, spec: RankerSpec, p: LearnedParams, env: Any) -> FoldedRanker:
    name = spec.canonical
    if spec.argument:
        if spec.params:
            raise ConfigError(f"ranker {name}: a trained model directory takes no parameters "
                              "(its seed and settings are fixed at training time)")
        return load_folded(Path(spec.argument).expanduser(), kind, name, env)
    seed = p.seed if p.seed is not None else int(env.seed)
    # the hyperparameters as written: training parses them with its own rules
    given = {k: v for k, v in spec.params if k not in ("seed", "folds")}
    params = hyperparameters(kind, given, f"ranker {name}")
    directory = cached_model(env, kind, seed, p.folds, params, name)
    return load_folded(directory, kind, name, env)

