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
    """Whether environment variable ``name`` is set to an off word. Unset or empty leaves
    the feature on: a switch that is on by default is only turned off by an explicit off
    word. Any other value is refused, naming the accepted words: ``ABNIRML_PROGRESS=of``
    is a typo for "off", and reading it as "on" would silently do the opposite."""
    text = os.environ.get(name, "")
    value = switch_value(text)
    if value is None and text.strip():
        from abnirml.errors import ConfigError

        raise ConfigError(f"environment variable {name}={text.strip()!r} is not an on/off "
                          f"word; expected one of {', '.join(OFF_WORDS)} (off) or "
                          f"{', '.join(ON_WORDS)} (on), or leave it unset")
    return value is False
