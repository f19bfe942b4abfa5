"""Whether progress bars show: one rule for the CLI, notebooks and library calls.

An explicit request wins (``--quiet``, ``RunConfig(progress=False)``, ``run(config,
progress=False)``); left open (``None``), bars show unless ``ABNIRML_PROGRESS`` is ``0``,
``false``, ``no`` or ``off`` — so a notebook or a CI job can silence every call at once
without editing each one.
"""

from __future__ import annotations

import os

ENV = "ABNIRML_PROGRESS"
_OFF = {"0", "false", "no", "off"}


def progress_enabled(requested: bool | None = None) -> bool:
    """``requested`` when given, else whether ``$ABNIRML_PROGRESS`` leaves bars on."""
    if requested is not None:
        return bool(requested)
    return os.environ.get(ENV, "").strip().lower() not in _OFF
