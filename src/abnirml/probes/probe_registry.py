"""Probe lookup by name or glob (``mmp:*``, ``tmp:shuffle-*``, a family key, ``all``).

The catalogue is every registered family's probes (see :mod:`abnirml.probes.family`) plus
probes users registered one by one with :func:`register`, in family order.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from abnirml.errors import ConfigError, did_you_mean
from abnirml.probes.base import Probe
from abnirml.probes.family_registry import families, family_keys
from abnirml.registry import Registry, scoped_registrations

#: The probes users registered one by one, by name (families' own probes are not here).
_PROBES: Registry[Probe] = Registry("probe")

__all__ = ["OMITTED_KEY", "all_probes", "omit_unavailable", "register", "register_pairs_probe",
           "registered", "scoped_registrations", "select_probes", "unregister"]


def register(probe: Probe) -> None:
    """Make a user-defined probe selectable by its name (its family must be registered)."""
    _check_probe(probe)
    keys = family_keys()
    if probe.family not in keys:
        raise ConfigError(f"probe {probe.name}: family {probe.family!r} is not registered"
                          f"{did_you_mean(probe.family, keys)}; known: {', '.join(keys)} "
                          "(abnirml.probes.family_registry.register_family adds one)")
    owner = next((p.family for p in _family_probes() if p.name == probe.name), None)
    if owner is not None:       # it would silently replace that family's probe of this name
        raise ConfigError(f"probe {probe.name}: that name is already a probe of family "
                          f"{owner!r}; give yours another name")
    # the same module registering a name again (a notebook cell run twice) replaces it
    _PROBES.add(probe.name, probe)


def _check_probe(probe: Any) -> None:
    """What the engine reads from a probe, checked when it is registered rather than when
    a run first touches it (an AttributeError deep in sample building)."""
    if isinstance(probe, type):
        raise ConfigError(f"probe {probe.__name__} is a class; register an instance, e.g. "
                          f"register({probe.__name__}())")
    for field in ("name", "family"):
        value = getattr(probe, field, None)
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"probe {probe!r:.60}: '{field}' must be a non-empty string, "
                              f"got {value!r}")
    if not isinstance(getattr(probe, "symmetric", None), bool):
        raise ConfigError(f"probe {probe.name}: 'symmetric' must be True or False")
    if not callable(getattr(probe, "samples", None)) and not callable(
            getattr(probe, "sample_table", None)):
        raise ConfigError(f"probe {probe.name} has no samples(context) method")


def registered() -> list[Probe]:
    """The probes added with :func:`register`, in registration order."""
    return _PROBES.values()


def unregister(name: str) -> None:
    """Forget a probe added with :func:`register` (notebooks; tests use
    :func:`scoped_registrations`, which undoes every registration made inside a block)."""
    _PROBES.remove(name)


def register_pairs_probe(path: str | Path, name: str | None = None,
                         symmetric: bool = False) -> str:
    """Register a transfer probe over a text-pair file (the CLI's ``--pairs``); its name."""
    from abnirml.data.pairs import check_pairs_path
    from abnirml.probes.transfer.probes import pairs_probe

    check_pairs_path(path)      # before the run starts; the file is read when samples are
    probe = pairs_probe(name or f"dtp:{Path(path).stem}", path, symmetric)
    register(probe)
    return probe.name


def _family_probes() -> list[Probe]:
    """Every registered family's own probes; a name two families both list is refused
    (which one ``--probe NAME`` meant could not be told, and their results would mix)."""
    probes: list[Probe] = []
    owners: dict[str, str] = {}
    for family in families():
        for probe in family.probes():
            if probe.name in owners:
                raise ConfigError(f"probe {probe.name}: listed by family {owners[probe.name]!r} "
                                  f"and by family {family.key!r}; probe names must be unique")
            owners[probe.name] = family.key
            probes.append(probe)
    return probes


def all_probes() -> list[Probe]:
    probes = _family_probes()
    extra = _PROBES.values()
    extra_names = {p.name for p in extra}
    probes = [p for p in probes if p.name not in extra_names] + extra
    order = {key: i for i, key in enumerate(family_keys())}
    return sorted(probes, key=lambda p: order.get(p.family, len(order)))


def select_probes(patterns: list[str]) -> list[Probe]:
    """Probes matching any pattern, in catalogue order, each once."""
    catalogue = all_probes()
    names = [p.name for p in catalogue]
    keys = family_keys()
    chosen: set[str] = set()
    for pattern in patterns or ["all"]:
        if not isinstance(pattern, str):
            raise ConfigError(f"a probe is named by a string (a name, family or glob), got "
                              f"{type(pattern).__name__} {pattern!r}")
        pattern = pattern.strip()
        folded = pattern.lower()          # MMP, Tmp:Typos … match like --ranker BM25 does
        if folded == "all":
            matched = names
        elif folded in keys:
            matched = [p.name for p in catalogue if p.family == folded]
        else:
            matched = [n for n in names if fnmatch.fnmatchcase(n.lower(), folded)]
        if not matched:
            from abnirml.probes.axioms.names import ambiguity

            shared = ambiguity(pattern)
            if shared is not None:
                raise ConfigError(shared)
            # a bare word close to a family key (axioms, mmps) means the family
            hint = (did_you_mean(pattern, keys) if ":" not in pattern else "") or \
                did_you_mean(pattern, names)
            raise ConfigError(f"unknown probe {pattern!r}{hint}; "
                              "see 'abnirml probes' for the list")
        chosen.update(matched)
    return [p for p in catalogue if p.name in chosen]


#: run.json's key for probes a pattern selected but the run left out, with the reason
OMITTED_KEY = "omitted_probes"


def omit_unavailable(probes: Sequence[Probe], patterns: Sequence[str],
                     settings: Mapping[str, Any]) -> tuple[list[Probe], list[dict[str, str]]]:
    """Leave out probes that say (``unavailable(settings)``) they have nothing to measure,
    unless a pattern names them exactly: ``all``, a family or a glob then does not fill the
    report with an empty row, while ``--probe tmp:add-doct5query`` still runs and says why
    every sample was skipped. Returns the kept probes and ``{"probe", "reason"}`` per
    omission, for run.json."""
    named = {p.strip().lower() for p in patterns}
    kept: list[Probe] = []
    omitted: list[dict[str, str]] = []
    for probe in probes:
        check = getattr(probe, "unavailable", None)
        reason = None if check is None or probe.name.lower() in named else check(settings)
        if reason:
            omitted.append({"probe": probe.name, "reason": reason})
        else:
            kept.append(probe)
    return kept, omitted
