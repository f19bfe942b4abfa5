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


def __dir__() -> list[str]:
    """The public API and the module's own dunders: the lazy names are not in the module's
    namespace until first used, so without this ``dir(abnirml)`` and tab completion would
    not show them."""
    dunders = [name for name in globals() if name.startswith("__") and name.endswith("__")]
    return sorted({*__all__, *dunders})
