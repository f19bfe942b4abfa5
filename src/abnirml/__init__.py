"""abnirml: diagnose how ranking models behave.

The package root stays import-light on purpose: nothing heavy (torch, spaCy, SQLite
connections) is touched until a caller asks for it.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

#: the notebook API, imported on first use (``abnirml.run``, ``abnirml.load_results`` …)
_LAZY = {
    "run": "abnirml.pipeline",
    "RunConfig": "abnirml.pipeline",
    "SessionSettings": "abnirml.pipeline",
    "StatisticsSettings": "abnirml.pipeline",
    "load_results": "abnirml.frames",
    "load_samples": "abnirml.frames",
    "load_scores": "abnirml.evaluation.score_file",
    "wrap_pyterrier": "abnirml.rankers.adapters",
    "expect": "abnirml.expect",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'abnirml' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
