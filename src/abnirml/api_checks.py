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
PATH_FIELDS = ("collection", "out")
#: the same for the session record's fields
SESSION_PATH_FIELDS = ("cache", "candidates", "stopwords")
#: fields that hold a list of strings or objects, never one bare string
LIST_FIELDS = ("rankers", "probes")


def checked_config(config: Any) -> Any:
    """``config`` with path-like fields as strings; a ConfigError for any mistyped field
    (its nested ``session`` and ``statistics`` records included)."""
    from abnirml.evaluation.execution.workspace import SessionSettings
    from abnirml.evaluation.stats.significance import StatisticsSettings

    changes: dict[str, Any] = {}
    for name in PATH_FIELDS:
        changes.update(_path_change(config, name, "RunConfig"))
    if config.collection is None:
        raise ConfigError("RunConfig.collection must be a path or a string, got None")
    for name in LIST_FIELDS:
        _check_list(name, getattr(config, name))
    for probe in config.probes:
        if not isinstance(probe, str):
            raise ConfigError(f"RunConfig.probes: each probe is a name or pattern string, "
                              f"got {_described(probe)}")
    _check_groups(config.variant_groups)
    for name in ("seed", "examples_per_probe"):
        _check_int(f"RunConfig.{name}", getattr(config, name))
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
    from abnirml.report.tables import MARKS

    if config.significance_mark not in MARKS:
        raise ConfigError(f"RunConfig.significance_mark must be one of {', '.join(MARKS)}, "
                          f"got {config.significance_mark!r}")
    for name in ("effectiveness", "skip_unavailable", "keep"):
        _check_bool(f"RunConfig.{name}", getattr(config, name))
    _check_grade_bands(config.grade_bands)
    if not isinstance(config.session, SessionSettings):
        raise ConfigError(f"RunConfig.session must be a SessionSettings(...), got "
                          f"{_described(config.session)}")
    if not isinstance(config.statistics, StatisticsSettings):
        raise ConfigError(f"RunConfig.statistics must be a StatisticsSettings(...), got "
                          f"{_described(config.statistics)}")
    session = _checked_session(config.session)
    _check_statistics(config.statistics)
    if session is not config.session:
        changes["session"] = session
    return dataclasses.replace(config, **changes) if changes else config


def _path_change(record: Any, name: str, where: str) -> dict[str, Any]:
    """``{name: the path as a string}`` for a path-like value, ``{}`` for a string or None."""
    value = getattr(record, name)
    if isinstance(value, os.PathLike):
        return {name: collection_spec(value) if name == "collection" else os.fspath(value)}
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{where}.{name} must be a path or a string, got {_described(value)}")
    return {}


def _checked_session(session: Any) -> Any:
    where = "RunConfig.session"
    changes: dict[str, Any] = {}
    for name in SESSION_PATH_FIELDS:
        changes.update(_path_change(session, name, where))
    for name in ("candidate_depth", "workers"):
        _check_int(f"{where}.{name}", getattr(session, name))
    if session.batch_size is not None:
        _check_int(f"{where}.batch_size", session.batch_size)
    if session.ray_tasks is not None:
        _check_int(f"{where}.ray_tasks", session.ray_tasks)
    if session.ray_gpus is not None:
        _check_real(f"{where}.ray_gpus", session.ray_gpus)
    check_progress(session.progress, f"{where}.progress")
    _check_bool(f"{where}.allow_pickle", session.allow_pickle)
    if not isinstance(session.device, str):
        raise ConfigError(f"{where}.device must be a string, got {_described(session.device)}")
    if isinstance(session.queries, int) and not isinstance(session.queries, bool):
        changes["queries"] = str(session.queries)     # queries=5: a count, as --queries 5
    else:
        changes.update(_path_change(session, "queries", where))
    if session.ray_address is not None:
        from abnirml.evaluation.execution.parallel import check_ray_address

        check_ray_address(session.ray_address, f"{where}.ray_address")
    return dataclasses.replace(session, **changes) if changes else session


def _check_statistics(statistics: Any) -> None:
    where = "RunConfig.statistics"
    for name in ("alpha", "ci"):
        _check_real(f"{where}.{name}", getattr(statistics, name))
    if statistics.delta is not None:
        _check_real(f"{where}.delta", statistics.delta)
    if not isinstance(statistics.deltas, dict):
        raise ConfigError(f"{where}.deltas must be a dict of ranker name → δ, got "
                          f"{_described(statistics.deltas)}")
    for ranker, value in statistics.deltas.items():
        _check_real(f"{where}.deltas[{ranker!r}]", value)
    for name in ("bootstrap", "permutations"):
        if getattr(statistics, name) is not None:     # None: the automatic count
            _check_int(f"{where}.{name}", getattr(statistics, name))
    for name in ("test", "correction"):
        value = getattr(statistics, name)
        if not isinstance(value, str):
            raise ConfigError(f"{where}.{name} must be a string, got {_described(value)}")


def _check_bool(name: str, value: Any) -> None:
    """bool("no") is True: a string here would switch on what it seems to switch off."""
    if not isinstance(value, bool):
        raise ConfigError(f"{name} must be True or False, got {_described(value)}")


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
        raise ConfigError(f"{name} must be a number, got {_described(value)}")


def _check_int(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(f"{name} must be an integer, got {_described(value)}")


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
