"""abnirml: diagnose how ranking models behave.

The package root stays import-light on purpose: nothing heavy (torch, spaCy, SQLite
connections) is touched until a caller asks for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:   # what a type checker sees of the names imported on first use (_LAZY)
    from abnirml.evaluation.execution.score_file import load_scores  # noqa: F401
    from abnirml.expect import expect  # noqa: F401
    from abnirml.frames import load_results, load_samples  # noqa: F401
    from abnirml.pipeline import RunConfig, SessionSettings, StatisticsSettings, run  # noqa: F401
    from abnirml.rankers.families.adapters import wrap_pyterrier  # noqa: F401
    from abnirml.result_fields import About, ResultRow  # noqa: F401

#: the notebook API, imported on first use (``abnirml.run``, ``abnirml.load_results`` …)
_LAZY = {
    "run": "abnirml.pipeline",
    "RunConfig": "abnirml.pipeline",
    "SessionSettings": "abnirml.pipeline",
    "StatisticsSettings": "abnirml.pipeline",
    "load_results": "abnirml.frames",
    "load_samples": "abnirml.frames",
    "load_scores": "abnirml.evaluation.execution.score_file",
    "ResultRow": "abnirml.result_fields",
    "About": "abnirml.result_fields",
    "wrap_pyterrier": "abnirml.rankers.families.adapters",
    "expect": "abnirml.expect",
}

__all__ = ["__version__", *_LAZY]


def lazy_exports(namespace: dict[str, Any], table: Mapping[str, str]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` for names imported on first use.

    ``table`` maps each public name to the module defining it. The names are listed by
    ``dir()`` (tab completion) before they are imported, and each is imported once, then
    kept in the package's namespace. Used by this package and by :mod:`abnirml.mechanism`,
    so both stay import-light."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        dunders = [name for name in namespace if name.startswith("__") and name.endswith("__")]
        return sorted({*namespace.get("__all__", ()), *dunders})

    return __getattr__, __dir__


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
