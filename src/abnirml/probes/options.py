"""Typed, validated probe-family options.

A family's settings are a frozen dataclass whose fields say their type, default and range
(:func:`abnirml.settings.setting`). :func:`parse_settings` turns what a user gave (strings from
``--option family.key=VALUE``, values from Python) into that dataclass, *before* any work:
an unknown key is rejected with the closest known names, and every number must be finite
(unless the field allows ∞) and inside its range. Validation lives here once instead of in
every probe's ``float(options.get(...))``.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from typing import Any

from abnirml.errors import ConfigError, did_you_mean
from abnirml.strict_numbers import strict_float
from abnirml.switches import switch_value

__all__ = ["describe", "parse_settings", "settings_fields"]


def settings_fields(options_type: type) -> list[dataclasses.Field[Any]]:
    return list(dataclasses.fields(options_type))


def parse_settings(options_type: type, given: Mapping[str, Any], prefix: str) -> Any:
    """``options_type`` built from ``given`` (keys without the ``prefix.``), validated."""
    fields = {f.name: f for f in settings_fields(options_type)}
    unknown = sorted(set(given) - set(fields))
    if unknown:
        known = [f"{prefix}.{name}" for name in fields]
        key = f"{prefix}.{unknown[0]}"
        raise ConfigError(f"unknown option {key!r}{did_you_mean(key, known)}")
    hints = typing.get_type_hints(options_type)
    values = {name: _convert(given[name], hints[name], fields[name], f"{prefix}.{name}")
              for name in given}
    return options_type(**values)


def describe(options_type: type, prefix: str) -> list[tuple[str, str, str]]:
    """(key, default, help) per setting, for ``abnirml probes --options``-style listings."""
    return [(f"{prefix}.{f.name}", repr(f.default), f.metadata.get("help", ""))
            for f in settings_fields(options_type)]


def _convert(raw: Any, hint: Any, field: dataclasses.Field[Any], key: str) -> Any:
    meta = field.metadata
    if isinstance(raw, str) and raw.strip().lower() in meta.get("words", {}):
        value = meta["words"][raw.strip().lower()]
    else:
        value = _as_type(raw, hint, key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _check_number(float(value), meta, key)
    choices = meta.get("choices") or ()
    if choices and value not in choices:
        raise ConfigError(f"{key} must be one of {', '.join(choices)}, got {raw!r}"
                          f"{did_you_mean(str(raw), list(choices))}")
    check = meta.get("check")
    return check(value, key) if check is not None else value


def _as_type(raw: Any, hint: Any, key: str) -> Any:
    if hint is Any:
        return raw
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        spelled_none = isinstance(raw, str) and raw.strip().lower() in ("", "none")
        if (raw is None or spelled_none) and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _as_type(raw, inner[0], key) if len(inner) == 1 else raw
    if hint is bool:
        if isinstance(raw, bool):
            return raw
        value = switch_value(str(raw))     # strips and lowercases itself
        if value is not None:
            return value
        raise ConfigError(f"{key}: {raw!r} is not a yes/no value")
    if hint is int:
        number = _number(raw, key)
        if not number.is_integer():
            raise ConfigError(f"{key}: {raw!r} is not a whole number")
        return int(number)
    if hint is float:
        return _number(raw, key)
    if hint is str:
        return raw if isinstance(raw, str) else str(raw)
    return raw


def _number(raw: Any, key: str) -> float:
    """A number from Python (int/float) or from text in plain ASCII decimal notation
    (:func:`abnirml.strict_numbers.strict_float`: no ``1_0``, no full-width digits, no nan)."""
    if isinstance(raw, bool):
        raise ConfigError(f"{key}: {raw!r} is not a number")
    if isinstance(raw, (int, float)):
        value = float(raw)
    elif isinstance(raw, str):
        try:
            value = strict_float(raw.strip(), finite=False)
        except ValueError as error:
            raise ConfigError(f"{key}: {error}") from None
    else:
        raise ConfigError(f"{key}: {raw!r} is not a number")
    if math.isnan(value):
        raise ConfigError(f"{key}: {raw!r} is not a number")
    return value


def _check_number(value: float, meta: Mapping[str, Any], key: str) -> None:
    if math.isnan(value) or (math.isinf(value) and not meta.get("allow_inf")):
        raise ConfigError(f"{key} must be a finite number, got {value}")
    lo, hi, above = meta.get("minimum"), meta.get("maximum"), meta.get("above")
    if lo is not None and value < lo:
        raise ConfigError(f"{key} must be ≥ {lo:g}, got {value:g}")
    if above is not None and value <= above:
        raise ConfigError(f"{key} must be > {above:g}, got {value:g}")
    if hi is not None and value > hi:
        raise ConfigError(f"{key} must be ≤ {hi:g}, got {value:g}")


class FamilyOptions(dict[str, Any]):
    """Every registered family's typed options, by family key, as a run resolved them.

    A probe context holding one knows the whole set, so a probe that asks for a key no
    family has, or for options of another type than its family declares, is refused instead
    of quietly handed defaults (which would ignore what the user set with ``--option``).
    """
