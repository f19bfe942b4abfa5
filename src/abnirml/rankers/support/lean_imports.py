"""Importing sentence-transformers without the libraries it imports for unused features.

``import sentence_transformers`` imports three libraries the bi-encoder never uses:

- scikit-learn (and through it SciPy parts): ``sentence_transformers.util.similarity``'s
  first line is ``from sklearn.metrics import pairwise_distances``, for sparse Manhattan
  similarity;
- 🤗 datasets (and through it pandas and pyarrow): ``sentence_transformers.base.sampler``
  and ``base.model_card`` import ``Dataset`` and friends for training and model cards;
- ``scipy.optimize``: transformers' object-detection losses import
  ``linear_sum_assignment``.

Together about a second of a cold bi-encoder run on a small CPU.

:func:`import_sentence_transformers` imports sentence-transformers with those imports
answered by stand-in modules whose names are :class:`Deferred`: calling one or reading an
attribute imports the real library and hands on to the real object, and
``isinstance(x, Deferred)`` is exactly ``isinstance(x, real class)`` — ``False`` without an
import while the library is not imported, since no instance of its classes can exist then.
A stand-in is served only to the importers it is meant for (modules inside
``sentence_transformers``, or ``transformers.loss``), only for a library not imported
already. Anyone else who reaches a stand-in meanwhile gets the real library's names (the
stand-in gives way to the real module on the first such use, as on any :class:`Deferred`'s
first use), and the stand-ins leave ``sys.modules`` as soon as sentence-transformers is
imported, so a later import anywhere imports the real package. Should anything go wrong,
sentence-transformers is imported the usual way.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import threading
import types
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: stand-in module → (the package whose import means "already imported, use it", the
#: importers it is served to)
_STAND_INS = {"sklearn": ("sklearn", "sentence_transformers"),
              "sklearn.metrics": ("sklearn", "sentence_transformers"),
              "datasets": ("datasets", "sentence_transformers"),
              "scipy.optimize": ("scipy.optimize", "transformers.loss")}
#: stand-ins whose ``__version__`` is their distribution's (sentence-transformers reads
#: ``datasets.__version__`` for its model card while loading a model)
_DISTRIBUTIONS = {"sklearn": "scikit-learn", "datasets": "datasets"}
_lock = threading.RLock()
#: libraries something needed for real: never stood in for again in this process
_given_way: set[str] = set()


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


def load_without_unused_imports(load: Callable[[], T]) -> T:
    """``load()`` (loading a sentence-transformers model), with the same stand-ins served:
    building a model reads ``datasets.__version__`` for a model card it never writes,
    which would import datasets after all. Answered from the installed distribution's
    metadata instead. On an :class:`ImportError`, ``load()`` runs again the usual way."""
    with _lock:
        finder = _StandInFinder()
        sys.meta_path.insert(0, finder)
        try:
            return load()
        except ImportError:
            _forget(finder)
            return load()
        finally:
            _forget(finder)


def _forget(finder: _StandInFinder) -> None:
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)
    _drop_stand_ins(list(_STAND_INS))


def _drop_stand_ins(names: list[str]) -> None:
    """Take the stand-ins ``names`` out of ``sys.modules`` and their parent packages."""
    for name in sorted(names, key=len, reverse=True):        # children first
        if _is_stand_in(sys.modules.get(name)):
            sys.modules.pop(name, None)
            parent, _, child = name.rpartition(".")
            holder = sys.modules.get(parent) if parent else None
            if holder is not None and _is_stand_in(holder.__dict__.get(child)):
                delattr(holder, child)


def _real_module(module: str) -> types.ModuleType:
    """The real ``module``, imported now if need be; its library's stand-ins give way."""
    found = _real(module)
    if found is not None:
        return found
    group = _STAND_INS.get(module, (module, ""))[0]
    _given_way.add(group)         # else the finder could answer this very import again
    _drop_stand_ins([n for n, (g, _) in _STAND_INS.items() if g == group])
    return importlib.import_module(module)


def _is_stand_in(module: object) -> bool:
    return bool(getattr(module, "__abnirml_stand_in__", False))


def _importer() -> str:
    """The module whose import statement is being executed (import machinery skipped)."""
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None:
        name: str = frame.f_globals.get("__name__", "")
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
        return getattr(_real_module(self._module), self._name)

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
        served = _STAND_INS.get(fullname)
        if served is None or served[0] in _given_way or _real(served[0]) is not None \
                or not _importer().startswith(served[1]):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package="." not in fullname)

    def create_module(self, spec: Any) -> types.ModuleType:
        module = types.ModuleType(spec.name, "stand-in until sentence-transformers is imported")
        module.__abnirml_stand_in__ = True       # type: ignore[attr-defined]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        name, importers = module.__name__, _STAND_INS[module.__name__][1]

        def deferred(attribute: str) -> Any:
            if attribute == "__version__" and name in _DISTRIBUTIONS:
                from importlib.metadata import version

                return version(_DISTRIBUTIONS[name])
            if attribute.startswith("__") and attribute.endswith("__"):
                raise AttributeError(f"module {name!r} has no attribute {attribute!r}")
            if attribute.startswith("_") or not _importer().startswith(importers):
                return getattr(_real_module(name), attribute)     # not for this stand-in
            return Deferred(name, attribute)

        module.__getattr__ = deferred            # type: ignore[method-assign]
