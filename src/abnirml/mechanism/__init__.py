"""Causal activation patching on probe pairs: where in a transformer ranker a probed
behaviour is computed (``abnirml patch``; see docs/patching.md).

The Python API, importable from this package (each name is loaded on first use, so importing
the package loads nothing heavy):

* ``run_patching`` with a ``PatchConfig`` — what the command does;
* ``target_for`` and ``patch_samples`` — patch samples already in hand on a built ranker;
* ``summarise`` — averages and query-clustered intervals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from abnirml import lazy_exports

if TYPE_CHECKING:   # what a type checker sees of the names imported on first use (_LAZY)
    from abnirml.mechanism.run import PatchConfig, run_patching  # noqa: F401
    from abnirml.mechanism.study import patch_samples  # noqa: F401
    from abnirml.mechanism.summary import summarise  # noqa: F401
    from abnirml.mechanism.targets import target_for  # noqa: F401

#: the patching API, imported on first use so ``import abnirml.mechanism`` stays light
_LAZY = {
    "PatchConfig": "abnirml.mechanism.run",
    "run_patching": "abnirml.mechanism.run",
    "target_for": "abnirml.mechanism.targets",
    "patch_samples": "abnirml.mechanism.study",
    "summarise": "abnirml.mechanism.summary",
}

__all__ = list(_LAZY)


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)
