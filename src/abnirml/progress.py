"""Whether progress bars show: one rule for the CLI, notebooks and library calls.

An explicit request wins (``--quiet``, ``SessionSettings(progress=False)``,
``run(config, progress=False)``); left open (``None``), bars show unless
``ABNIRML_PROGRESS`` is ``0``, ``false``, ``no`` or ``off`` (any case: the off words of
:mod:`abnirml.switches`) — so a notebook or a CI job can silence every call at once without
editing each one.
"""

from __future__ import annotations

from abnirml.switches import env_off

ENV = "ABNIRML_PROGRESS"


def progress_enabled(requested: bool | None = None) -> bool:
    """``requested`` when given, else whether ``$ABNIRML_PROGRESS`` leaves bars on."""
    if requested is not None:
        return bool(requested)
    return not env_off(ENV)
