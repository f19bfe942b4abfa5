"""The registered probe families, and validation of a run's options against them.

Built-in families (:mod:`.built_in`) are registered on first use; users add theirs with
:func:`register_family`. Options are namespaced by family (``tmp.typo_rate``);
:func:`resolve_options` validates everything a run was given before any work starts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from abnirml.errors import ConfigError, MissingExtra, did_you_mean
from abnirml.probes.family import Family
from abnirml.probes.layouts import LayoutTest, get_layout
from abnirml.probes.options import FamilyOptions, parse_settings, settings_fields
from abnirml.registry import Registry

#: Every probe family by key, the built-in ones (:mod:`.built_in`) first, loaded on first use.
_FAMILIES: Registry[Family] = Registry(
    "probe family", built_ins=lambda: [(family.key, family) for family in _builtins()],
    called="key", describe=lambda family: family.title)


def register_family(family: Family) -> None:
    """Make a family's probes selectable (``--probe KEY`` or ``KEY:*``) and reportable.

    Registering a key again from the same module (a notebook cell run twice) replaces the
    earlier family; a built-in key, or one another plugin or module holds, is refused."""
    if not family.key or not family.key.replace("_", "").isalnum():
        raise ConfigError(f"family key {family.key!r}: use letters, digits and _")
    get_layout(family.layout)                  # an unknown layout: one line naming the known
    _FAMILIES.add(family.key, family)


def unregister_family(key: str) -> None:
    """Forget a user family (notebooks; tests use
    :func:`abnirml.registry.scoped_registrations`). A built-in family cannot be removed."""
    _FAMILIES.remove(key)


def _builtins() -> tuple[Family, ...]:
    from abnirml.probes.built_in import BUILTIN_FAMILIES

    return BUILTIN_FAMILIES


def families() -> list[Family]:
    """Registered families, built-ins first, then in registration order."""
    return _FAMILIES.values()


def family_keys() -> list[str]:
    return _FAMILIES.keys()


def keys_with_layout(test: LayoutTest) -> set[str]:
    """The registered families whose layout's record passes ``test``: what the engine asks
    instead of naming a family (``lambda layout: layout.axiom_instances``: the families whose
    records count satisfied instances)."""
    return {family.key for family in _FAMILIES.values() if test(get_layout(family.layout))}


def get_family(key: str) -> Family:
    return _FAMILIES.get(key)


# -- options ------------------------------------------------------------------------------

@dataclass
class ResolvedOptions:
    """A run's options after validation.

    ``settings`` holds each registered family's typed options (its defaults where nothing
    was given), what probes read; ``public`` the JSON-ready namespaced values given, for
    run.json.
    """

    settings: FamilyOptions
    public: dict[str, Any] = field(default_factory=dict)


def resolve_options(given: Mapping[str, Any]) -> ResolvedOptions:
    """Validate ``given`` (``FAMILY.KEY`` → value) against every registered family."""
    registry = _FAMILIES.mapping()
    known = [f"{family.key}.{f.name}" for family in registry.values()
             for f in settings_fields(family.options)]
    per_family: dict[str, dict[str, Any]] = {key: {} for key in registry}
    for key, value in given.items():
        family_key, dot, name = key.partition(".")
        if not dot:
            owners = [k for k in known if k.partition(".")[2] == key]
            hint = (f" (did you mean {' or '.join(owners)}?)" if owners
                    else did_you_mean(key, known))
            raise ConfigError(f"unknown option {key!r}{hint}; options are named FAMILY.KEY, "
                              "e.g. tmp.typo_rate")
        if family_key not in registry:
            raise ConfigError(f"unknown option {key!r}: no probe family {family_key!r}"
                              f"{did_you_mean(key, known)}")
        per_family[family_key][name] = value
    settings = FamilyOptions({key: parse_settings(registry[key].options, values, key)
                              for key, values in per_family.items()})
    public = {f"{key}.{name}": _public(getattr(settings[key], name), raw)
              for key, values in per_family.items() for name, raw in values.items()}
    return ResolvedOptions(settings, dict(sorted(public.items())))


def _public(value: Any, raw: Any) -> Any:
    """A JSON value for run.json: the typed value, or as given when JSON cannot hold it."""
    if isinstance(value, float) and not math.isfinite(value):
        return raw if isinstance(raw, str) else str(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _problems(probe: Any, settings: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(who, requirement) per absent dependency of ``probe``: its family's and its own, and
    what it needs under these settings (``missing_for``: the semantic axioms need GloVe
    unless ``axiom.embeddings`` supplies other vectors)."""
    problems = get_family(probe.family).missing([probe])
    check = getattr(probe, "missing_for", None)
    needed = check(settings) if check is not None else None
    if needed is not None:
        problems.append((probe.name, needed))
    return problems


def without_missing_requirements(probes: Sequence[Any], settings: Mapping[str, Any]
                                 ) -> tuple[list[Any], list[dict[str, str]]]:
    """The probes whose optional dependencies are installed, and ``{"probe", "reason"}`` for
    each of the others (the reason names the extra that installs what it lacks), so a run
    asked to skip what it cannot do says what it skipped instead of stopping."""
    from abnirml.errors import install_hint

    kept: list[Any] = []
    omitted: list[dict[str, str]] = []
    for probe in probes:
        problems = _problems(probe, settings)
        if not problems:
            kept.append(probe)
            continue
        requirement = problems[0][1]
        why = f", {requirement.why}" if requirement.why else ""
        omitted.append({"probe": probe.name,
                        "reason": f"needs {requirement.module}{why} "
                                  f"({install_hint(requirement.extra, located=False)})"})
    return kept, omitted


def check_requirements(probes: Sequence[Any], settings: Mapping[str, Any] | None = None
                       ) -> None:
    """Fail before any work when a selected probe's optional dependency is absent."""
    by_family: dict[str, list[Any]] = {}
    for probe in probes:
        by_family.setdefault(probe.family, []).append(probe)
    problems: list[tuple[str, Any]] = []
    for key, chosen in by_family.items():
        problems += get_family(key).missing(chosen)
    if settings is not None:
        for probe in probes:
            check = getattr(probe, "missing_for", None)
            needed = check(settings) if check is not None else None
            if needed is not None:
                problems.append((probe.name, needed))
    if problems:
        who, requirement = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise MissingExtra(requirement.message(who) + more, requirement.extra)
