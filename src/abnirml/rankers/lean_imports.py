"""Importing sentence-transformers without scikit-learn and 🤗 datasets.

``import sentence_transformers`` imports two libraries the bi-encoder never uses:

- scikit-learn (and through it SciPy parts): ``sentence_transformers.util.similarity``'s
  first line is ``from sklearn.metrics import pairwise_distances``, for sparse Manhattan
  similarity;
- 🤗 datasets (and through it pandas and pyarrow): ``sentence_transformers.base.sampler``
  and ``base.model_card`` import ``Dataset`` and friends for training and model cards.

Together about a second of a cold bi-encoder run on a small CPU.

:func:`import_sentence_transformers` imports sentence-transformers with those imports
answered by stand-ins whose every name is a :class:`Deferred`: calling it or reading an
attribute imports the real library and hands on to the real object, and
``isinstance(x, Deferred)`` is exactly ``isinstance(x, real class)`` — ``False`` without an
import while the library is not imported, since no instance of its classes can exist then.
The stand-ins are served only to importers inside ``sentence_transformers`` (any other
importer asking first gets the real package), only for a library not imported already,
and they leave ``sys.modules`` as soon as sentence-transformers is imported, so a later
``import sklearn`` or ``import datasets`` anywhere imports the real package. Should anything
go wrong, sentence-transformers is imported the usual way.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import threading
import types
from typing import Any

#: stand-in module → the top-level package that decides whether to serve it
_STAND_INS = {"sklearn": "sklearn", "sklearn.metrics": "sklearn", "datasets": "datasets"}
_lock = threading.Lock()


def import_sentence_transformers() -> Any:
    """``sentence_transformers``, imported without scikit-learn and datasets when possible."""
    if "sentence_transformers" in sys.modules:
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
        if _is_stand_in(sys.modules.get(name)):
            del sys.modules[name]
            parent, _, child = name.rpartition(".")
            if parent and _is_stand_in(getattr(sys.modules.get(parent), child, None)):
                delattr(sys.modules[parent], child)


def _is_stand_in(module: object) -> bool:
    return bool(getattr(module, "__abnirml_stand_in__", False))


def _importer() -> str:
    """The module whose import statement is being executed (import machinery skipped)."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if not (name.startswith("importlib") or name == __name__):
            return name
        frame = frame.f_back
    return ""


def _real(module: str) -> types.ModuleType | None:
    """``module`` when the real one is imported, else None."""
    found = sys.modules.get(module)
    return None if found is None or _is_stand_in(found) else found


class Deferred:
    """A name of a library that is not imported yet: ``module.name``, imported on first use.

    Calls and attribute reads import the library and go to the real object. ``isinstance``
    and ``issubclass`` against it are answered exactly: while the library is not imported
    no instance or subclass of its classes exists, so the answer is ``False`` without
    importing anything; afterwards the real class answers.
    """

    def __init__(self, module: str, name: str):
        self._module, self._name = module, name

    def resolve(self) -> Any:
        return getattr(importlib.import_module(self._module), self._name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__") and attribute.endswith("__"):
            raise AttributeError(attribute)
        return getattr(self.resolve(), attribute)

    def __instancecheck__(self, instance: object) -> bool:
        real = self._if_imported()
        return real is not None and isinstance(instance, real)

    def __subclasscheck__(self, subclass: type) -> bool:
        real = self._if_imported()
        return real is not None and isinstance(subclass, type) and issubclass(subclass, real)

    def __or__(self, other: Any) -> Any:      # ``Dataset | DatasetDict`` in annotations
        return (self, other)

    __ror__ = __or__

    def _if_imported(self) -> Any:
        module = _real(self._module)
        return None if module is None else getattr(module, self._name, None)

    def __repr__(self) -> str:
        return f"<{self._module}.{self._name}, imported on first use>"


class _StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        package = _STAND_INS.get(fullname)
        if package is None or _real(package) is not None \
                or not _importer().startswith("sentence_transformers"):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package="." not in fullname)

    def create_module(self, spec: Any) -> types.ModuleType:
        module = types.ModuleType(spec.name, "stand-in until sentence-transformers is imported")
        module.__abnirml_stand_in__ = True       # type: ignore[attr-defined]

        def deferred(name: str) -> Deferred:
            if name.startswith("_"):
                raise AttributeError(f"module {spec.name!r} has no attribute {name!r}")
            return Deferred(spec.name, name)

        module.__getattr__ = deferred            # type: ignore[attr-defined]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass
