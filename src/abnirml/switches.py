"""The one reading of on/off words, for environment variables and yes/no options.

Three places used to spell "off" each their own way (the progress bars, the background
import, boolean probe options); one table keeps ``ABNIRML_PROGRESS=No`` and
``--option x.flag=no`` meaning the same thing. Spellings, compared after stripping white
space and lowercasing:

* on: ``1``, ``true``, ``yes``, ``on``
* off: ``0``, ``false``, ``no``, ``off``
"""

from __future__ import annotations

import os

ON_WORDS = ("1", "true", "yes", "on")
OFF_WORDS = ("0", "false", "no", "off")


def switch_value(text: str) -> bool | None:
    """True for an on word, False for an off word, None for anything else."""
    word = text.strip().lower()
    if word in ON_WORDS:
        return True
    if word in OFF_WORDS:
        return False
    return None


def env_off(name: str) -> bool:
    """Whether environment variable ``name`` is set to an off word. Unset, empty or any
    other value leaves the feature on: a switch that is on by default is only turned off
    by an explicit off word."""
    return switch_value(os.environ.get(name, "")) is False
