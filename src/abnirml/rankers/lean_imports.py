"""Importing sentence-transformers without scikit-learn.

``import sentence_transformers`` runs ``sentence_transformers.util.similarity``, whose first
line is ``from sklearn.metrics import pairwise_distances`` — scikit-learn, and through it
pandas and parts of SciPy: about a second of a cold bi-encoder run on a small CPU, for a
function (sparse Manhattan similarity) that the bi-encoder never calls.

:func:`import_sentence_transformers` imports sentence-transformers with that one import
answered by a stand-in: a ``sklearn.metrics`` whose ``pairwise_distances`` imports the real
function when first called. The stand-in is served only to an importer inside
``sentence_transformers`` (any other importer asking meanwhile gets the real package),
only when scikit-learn is not imported already, and it is removed from ``sys.modules`` as
soon as sentence-transformers is imported, so a later ``import sklearn`` anywhere imports
the real package. Should anything go wrong, sentence-transformers is imported the usual way.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import threading
import types
from typing import Any

_STAND_INS = ("sklearn", "sklearn.metrics")
_lock = threading.Lock()


def import_sentence_transformers() -> Any:
    """``sentence_transformers``, imported without importing scikit-learn when possible."""
    if "sentence_transformers" in sys.modules or "sklearn" in sys.modules:
        return importlib.import_module("sentence_transformers")
    with _lock:
        finder = _StandInFinder()
        sys.meta_path.insert(0, finder)
        try:
            return importlib.import_module("sentence_transformers")
        except ImportError:
            _forget(finder)
            for name in [n for n in sys.modules if n.startswith("sentence_transformers")]:
                del sys.modules[name]
            return importlib.import_module("sentence_transformers")
        finally:
            _forget(finder)


def _forget(finder: _StandInFinder) -> None:
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)
    for name in _STAND_INS:
        if getattr(sys.modules.get(name), "__abnirml_stand_in__", False):
            del sys.modules[name]


def _importer() -> str:
    """The module whose import statement is being executed (import machinery skipped)."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if not (name.startswith("importlib") or name == __name__):
            return name
        frame = frame.f_back
    return ""


def _pairwise_distances(*args: Any, **kwargs: Any) -> Any:
    """scikit-learn's ``pairwise_distances``, imported on first use."""
    from sklearn.metrics import pairwise_distances

    return pairwise_distances(*args, **kwargs)


class _StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in _STAND_INS or not _importer().startswith("sentence_transformers"):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=fullname == "sklearn")

    def create_module(self, spec: Any) -> types.ModuleType:
        module = types.ModuleType(spec.name, "stand-in until sentence-transformers is imported")
        module.__abnirml_stand_in__ = True       # type: ignore[attr-defined]
        if spec.name == "sklearn.metrics":
            module.pairwise_distances = _pairwise_distances   # type: ignore[attr-defined]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass
