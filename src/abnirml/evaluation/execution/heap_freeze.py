"""Keeping the garbage collector's full passes off the scoring path.

By the time a run scores, its process holds millions of long-lived objects (the collection,
the sample tables, torch and transformers' modules). CPython's cyclic garbage collector
walks every one of them in a full (oldest-generation) pass, which it starts by itself once
enough objects were made since the last one: on the DL19 battery such a pass costs about a
third of a second, all of it holding the interpreter's lock — while an accelerator waits
for batches that the thread feeding it cannot build. So while pairs are scored, the objects
that existed when scoring started are frozen (:func:`gc.freeze`: moved to a generation the
collector never walks) and put back afterwards (:func:`gc.unfreeze`). Objects made while
scoring are collected as always; what the frozen ones hold is garbage for a later pass to
find. A process that froze objects itself (before forking workers, say) is left as it is.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_holders = 0          # scorings in progress that asked for a frozen heap
_ours = False         # whether the objects frozen now were frozen here


@contextmanager
def frozen_heap() -> Iterator[None]:
    """The objects that exist now are left out of the collector's passes until the
    outermost of nested (or concurrent) uses ends."""
    global _holders, _ours
    with _lock:
        if _holders == 0:
            _ours = gc.isenabled() and gc.get_freeze_count() == 0
            if _ours:
                gc.freeze()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _ours:
                gc.unfreeze()
                _ours = False
