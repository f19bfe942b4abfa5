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
import re
import sys
import threading
from collections.abc import Iterable

_started: set[str] = set()
_lock = threading.Lock()


def enabled() -> bool:
    """Off only when ``ABNIRML_BACKGROUND_IMPORT`` is an off word (:mod:`abnirml.switches`)."""
    from abnirml.switches import env_off

    return not env_off("ABNIRML_BACKGROUND_IMPORT")


def family_of(spec: str) -> str:
    """``cross-encoder`` of ``cross-encoder:DIR+dtype=bf16``; ``biencoder`` of
    ``biencoder@bi`` (a display name); ``maxp:<spec>`` → inner family. Never raises: a bad
    spec is reported by the registry when the ranker is built."""
    family = re.split(r"[+:@]", spec, maxsplit=1)[0].strip().lower()
    if family == "maxp" and ":" in spec:
        return family_of(spec.split(":", 1)[1])
    return family


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
                    from abnirml.rankers.lean_imports import import_sentence_transformers

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
    for spec in specs:
        if isinstance(spec, str):
            modules += _family_imports(spec, "eager_imports")
    return start(dict.fromkeys(modules))


def _family_imports(spec: str, which: str) -> tuple[str, ...]:
    """The ``eager_imports`` or ``scoring_imports`` of ``spec``'s family record (none for an
    unknown family: the registry reports it when the ranker is built)."""
    from abnirml.rankers.registry import lookup

    record = lookup(family_of(spec))
    return () if record is None else getattr(record, which)


def for_scoring(ranker: object) -> threading.Thread | None:
    """Start importing what ``ranker`` needs to score (its ``scoring_imports``, else its
    family record's)."""
    from abnirml.rankers.base import spec_of

    modules = getattr(ranker, "scoring_imports", None)
    if modules is None:     # the spec, not the name: a display name hides the family
        modules = _family_imports(spec_of(ranker), "scoring_imports")  # type: ignore[arg-type]
    return start(modules)
