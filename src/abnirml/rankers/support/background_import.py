"""Importing a ranker's heavy libraries in a background thread while samples are built.

Importing torch and transformers costs seconds (≈ 15 s with loading a model on an H100
machine, several seconds on a small CPU). Done on the main thread just before the first pair
is scored, it would follow sample building. When a run
will certainly score something, the import can run beside sample building instead:
Python's import lock makes a later ``import torch`` on the main thread wait for the
background import to finish rather than import twice, so the only change is *when* the
work happens. Warm reruns (every pair cached) never start it, so they still import
nothing they do not need.

A failed background import is ignored: the ranker's own import reports the error with
its usual message. ``ABNIRML_BACKGROUND_IMPORT=off`` disables this (for measuring it).
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from abnirml.rankers.base import RankerSpec
    from abnirml.rankers.family import BuiltRanker

_started: set[str] = set()
_lock = threading.Lock()


def enabled() -> bool:
    """Off only when ``ABNIRML_BACKGROUND_IMPORT`` is an off word (:mod:`abnirml.switches`)."""
    from abnirml.switches import env_off

    return not env_off("ABNIRML_BACKGROUND_IMPORT")


def start(modules: Iterable[str]) -> threading.Thread | None:
    """Import ``modules`` (in order) in a daemon thread; modules already imported or already
    being imported are skipped. Returns the thread, or None when nothing was started."""
    with _lock:
        todo = [m for m in modules if m not in sys.modules and m not in _started]
        if not todo or not enabled():
            return None
        _started.update(todo)

    def run() -> None:
        for module in todo:
            try:
                if module == "sentence_transformers":      # without scikit-learn
                    from abnirml.rankers.support.lean_imports import import_sentence_transformers

                    import_sentence_transformers()
                else:
                    importlib.import_module(module)
            except Exception:      # the ranker's own import explains the error
                return

    thread = threading.Thread(target=run, name="abnirml-import", daemon=True)
    thread.start()
    return thread


def for_specs(specs: Iterable[object]) -> threading.Thread | None:
    """Start importing what the eager families among ``specs`` will import while being
    built (spec strings only; ranker objects are built already)."""
    modules: list[str] = []
    for text in specs:
        if isinstance(text, str):
            modules += _spec_imports(text, "eager_imports")
    return start(dict.fromkeys(modules))


def _spec_imports(text: str, which: str) -> list[str]:
    """The ``eager_imports`` or ``scoring_imports`` of the families spec ``text`` builds.
    Never raises: a spec that does not parse, or names no family, imports nothing here, and
    the registry reports it when the ranker is built."""
    from abnirml.errors import ConfigError
    from abnirml.rankers.base import RankerSpec

    try:
        spec = RankerSpec.parse(text)
    except ConfigError:
        return []
    return _family_imports(spec, which)


def _family_imports(spec: RankerSpec, which: str) -> list[str]:
    """What the records of ``spec``'s families name under ``which``: a wrapper's
    (``maxp:``, ``listwise-of:``), then the wrapped ranker's."""
    from abnirml.rankers.registry import family_records

    return [m for record in family_records(spec) for m in getattr(record, which)]


def for_scoring(built: BuiltRanker) -> threading.Thread | None:
    """Start importing what a built ranker needs to score: its own ``scoring_imports``,
    else those of the families its spec names (nothing for a ranker given as an object)."""
    modules = getattr(built.ranker, "scoring_imports", None)
    if modules is None:
        modules = () if built.spec is None else _family_imports(built.spec, "scoring_imports")
    return start(dict.fromkeys(modules))
