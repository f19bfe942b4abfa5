"""Probe lookup by name or glob (``mmp:*``, ``tmp:shuffle-*``, ``all``).

Probe families live in provider modules that expose ``available() -> list[Probe]``; they are
imported when probes are listed, and must keep heavy imports inside the probes themselves.
Users add their own probes with :func:`register`.
"""

from __future__ import annotations

import fnmatch
import importlib

from abnirml.errors import ConfigError, did_you_mean
from abnirml.probes.base import FAMILIES, Probe

_PROVIDERS: list[str] = [
    "abnirml.probes.measure_match",
    "abnirml.probes.manipulation",
    "abnirml.probes.axioms",
    "abnirml.probes.transfer",
    "abnirml.probes.query_variation",
]
_EXTRA: list[Probe] = []


def register(probe: Probe) -> None:
    """Make a user-defined probe selectable by its name."""
    if probe.family not in FAMILIES:
        raise ConfigError(f"probe {probe.name}: family must be one of {', '.join(FAMILIES)}")
    _EXTRA[:] = [p for p in _EXTRA if p.name != probe.name]
    _EXTRA.append(probe)


def add_provider(module: str) -> None:
    if module not in _PROVIDERS:
        _PROVIDERS.append(module)


def all_probes() -> list[Probe]:
    probes: list[Probe] = []
    for module in _PROVIDERS:
        probes.extend(importlib.import_module(module).available())
    extra_names = {p.name for p in _EXTRA}
    probes = [p for p in probes if p.name not in extra_names] + list(_EXTRA)
    order = {family: i for i, family in enumerate(FAMILIES)}
    return sorted(probes, key=lambda p: order.get(p.family, len(order)))


def select_probes(patterns: list[str]) -> list[Probe]:
    """Probes matching any pattern, in catalogue order, each once."""
    catalogue = all_probes()
    names = [p.name for p in catalogue]
    chosen: set[str] = set()
    for pattern in patterns or ["all"]:
        pattern = pattern.strip()
        if pattern == "all":
            matched = names
        elif pattern in FAMILIES:
            matched = [p.name for p in catalogue if p.family == pattern]
        else:
            matched = fnmatch.filter(names, pattern)
        if not matched:
            raise ConfigError(f"unknown probe {pattern!r}{did_you_mean(pattern, names)}; "
                              "see 'abnirml probes' for the list")
        chosen.update(matched)
    return [p for p in catalogue if p.name in chosen]
