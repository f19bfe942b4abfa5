"""Type checks for a :class:`~abnirml.pipeline.RunConfig` built by hand in Python.

The command line hands ``run`` values argparse has already typed; a notebook does not. A
string where a list belongs (``rankers="bm25"``) would otherwise be iterated letter by
letter ("unknown ranker 'b'"), a ``Path`` or a string number would fail deep inside with an
AttributeError or TypeError. These checks turn each such slip into one ConfigError naming
the field, before any data is loaded. ``os.PathLike`` values are accepted wherever a path
is, and returned as strings so everything downstream sees what the CLI passes.
"""

from __future__ import annotations

import dataclasses
import numbers
import os
from typing import Any

from abnirml.data.collection import collection_spec
from abnirml.errors import ConfigError

#: fields that hold a path (or a keyword such as "demo" / "default"); None where allowed
PATH_FIELDS = ("collection", "out", "cache", "candidates", "stopwords")
#: fields that hold a list of strings or objects, never one bare string
LIST_FIELDS = ("rankers", "probes")


def checked_config(config: Any) -> Any:
    """``config`` with path-like fields as strings; a ConfigError for any mistyped field."""
    changes: dict[str, Any] = {}
    for name in PATH_FIELDS:
        value = getattr(config, name)
        if isinstance(value, os.PathLike):
            changes[name] = collection_spec(value) if name == "collection" else os.fspath(value)
        elif value is not None and not isinstance(value, str):
            raise ConfigError(f"RunConfig.{name} must be a path or a string, got "
                              f"{_described(value)}")
    if config.collection is None:
        raise ConfigError("RunConfig.collection must be a path or a string, got None")
    for name in LIST_FIELDS:
        _check_list(name, getattr(config, name))
    for probe in config.probes:
        if not isinstance(probe, str):
            raise ConfigError(f"RunConfig.probes: each probe is a name or pattern string, "
                              f"got {_described(probe)}")
    _check_groups(config.variant_groups)
    for name in ("alpha", "ci"):
        _check_real(name, getattr(config, name))
    if config.delta is not None:
        _check_real("delta", config.delta)
    if not isinstance(config.deltas, dict):
        raise ConfigError(f"RunConfig.deltas must be a dict of ranker name → δ, got "
                          f"{_described(config.deltas)}")
    for ranker, value in config.deltas.items():
        _check_real(f"deltas[{ranker!r}]", value)
    for name in ("seed", "candidate_depth", "examples_per_probe", "workers", "bootstrap",
                 "permutations"):
        if name in ("bootstrap", "permutations") and getattr(config, name) is None:
            continue                      # None: the automatic count
        _check_int(name, getattr(config, name))
    if config.batch_size is not None:
        _check_int("batch_size", config.batch_size)
    if config.examples_per_probe < 0:
        raise ConfigError(f"RunConfig.examples_per_probe must be ≥ 0, got "
                          f"{config.examples_per_probe}")
    if not isinstance(config.options, dict):
        raise ConfigError(f"RunConfig.options must be a dict of 'family.key' → value, got "
                          f"{_described(config.options)}")
    for key in config.options:
        if not isinstance(key, str):
            raise ConfigError(f"RunConfig.options: keys are 'family.key' strings, got "
                              f"{_described(key)}")
    check_progress(config.progress, "RunConfig.progress")
    for name in ("allow_pickle", "effectiveness", "skip_unavailable"):
        # bool("no") is True: a string here would switch on what it seems to switch off
        value = getattr(config, name)
        if not isinstance(value, bool):
            raise ConfigError(f"RunConfig.{name} must be True or False, got "
                              f"{_described(value)}")
    for name in ("device", "test", "correction"):
        value = getattr(config, name)
        if not isinstance(value, str):
            raise ConfigError(f"RunConfig.{name} must be a string, got {_described(value)}")
    if config.ray_address is not None:
        from abnirml.evaluation.parallel import check_ray_address

        check_ray_address(config.ray_address, "RunConfig.ray_address")
    _check_grade_bands(config.grade_bands)
    return dataclasses.replace(config, **changes) if changes else config


def check_progress(value: Any, where: str) -> None:
    """True, False or None (the environment decides): a string such as "no" would be true."""
    if value is not None and not isinstance(value, bool):
        raise ConfigError(f"{where} must be True, False or None, got {_described(value)}")


def _described(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def _check_list(name: str, value: Any) -> None:
    if isinstance(value, str):
        raise ConfigError(f"RunConfig.{name} must be a list, got the string {value!r}; "
                          f"write {name}=[{value!r}]")
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"RunConfig.{name} must be a list, got {_described(value)}")


def _check_groups(groups: Any) -> None:
    if not isinstance(groups, dict):
        raise ConfigError(f"RunConfig.variant_groups must be a dict of group name → list of "
                          f"ranker specs, got {_described(groups)}")
    for group, members in groups.items():
        _check_list(f"variant_groups[{group!r}]", members)
        for member in members:
            if not isinstance(member, str):
                raise ConfigError(f"RunConfig.variant_groups[{group!r}]: members are ranker "
                                  f"spec strings, got {_described(member)}")


def _check_real(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(f"RunConfig.{name} must be a number, got {_described(value)}")


def _check_int(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(f"RunConfig.{name} must be an integer, got {_described(value)}")


def _check_grade_bands(bands: Any) -> None:
    """The rules ``--grade-bands`` applies: named (not ``all``), integer LOW ≤ HIGH."""
    if isinstance(bands, (str, bytes)) or not isinstance(bands, (list, tuple)):
        raise ConfigError("RunConfig.grade_bands must be a tuple of (name, low, high), e.g. "
                          "(('non-relevant', 0, 1), ('relevant', 2, 3)), got "
                          f"{_described(bands)}")
    for band in bands:
        ok = (isinstance(band, (list, tuple)) and len(band) == 3
              and isinstance(band[0], str) and band[0] and band[0] != "all"
              and all(isinstance(b, numbers.Integral) and not isinstance(b, bool)
                      for b in band[1:]))
        if not ok or band[1] > band[2]:
            raise ConfigError(f"RunConfig.grade_bands: invalid band {band!r}: expected "
                              "(name, low, high) with a name other than 'all' and integer "
                              "low ≤ high")
