"""Typed settings declared as dataclass fields: one declaration for probe-family options and
ranker-family parameters alike.

:func:`setting` only records type-independent facts (default, help, range, choices) in the
field's metadata; :mod:`abnirml.probes.options` reads them for ``--option`` values and
:mod:`abnirml.rankers.family` for ``+key=value`` ranker parameters. It sits at the package
root so both layers can use it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

_T = TypeVar("_T")


@dataclass(frozen=True)
class NoSettings:
    """The settings of a probe family, or the parameters of a ranker family, that has none."""


def setting(default: _T, *, help: str, minimum: float | None = None,
            maximum: float | None = None, above: float | None = None,
            choices: tuple[str, ...] = (), words: Mapping[str, Any] | None = None,
            allow_inf: bool = False, check: Callable[[Any, str], Any] | None = None,
            scoring: bool = True) -> _T:
    """A dataclass field of a family's options.

    ``minimum``/``maximum`` bound numbers inclusively, ``above`` exclusively; ``words`` maps
    spelled values (``any``, ``none``) to values; ``check(value, key)`` validates (and may
    normalise) values the generic rules cannot describe. ``scoring=False`` marks a ranker
    parameter that cannot change a score (a batch size, a timeout, requests in flight): a
    fingerprint derived from the parameters leaves it out, so changing it keeps the cache.
    """
    meta = {"help": help, "minimum": minimum, "maximum": maximum, "above": above,
            "choices": choices, "words": dict(words or {}), "allow_inf": allow_inf,
            "check": check, "scoring": scoring}
    # typed as dataclasses.field is: the declared attribute has the default's type
    return dataclasses.field(default=default, metadata=meta)
