"""Values to try for a declared setting: one it accepts other than its default (does it
reach the fingerprint?) and ones its declaration says must be refused."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any


def alternative_value(params: type, field: dataclasses.Field) -> str | None:
    """A value other than the default that the field accepts, as spec text; None when none
    can be derived from its declaration (free text, say)."""
    meta = field.metadata
    default = field.default
    kind = _base_type(typing.get_type_hints(params)[field.name])
    choices = [c for c in meta.get("choices", ()) if c != default]
    if choices:
        return str(choices[0])
    if kind is bool:
        return "false" if default else "true"
    if kind in (int, float):
        low = meta.get("above") if meta.get("above") is not None else meta.get("minimum")
        high = meta.get("maximum")
        start = default if isinstance(default, (int, float)) else low
        step = 1 if kind is int else 0.5
        for candidate in ((start if start is not None else 1) + step,
                          (start if start is not None else 1) - step, low, high):
            if candidate is None or candidate == default:
                continue
            if (low is not None and candidate < low) or (high is not None and candidate > high):
                continue
            if meta.get("above") is not None and candidate <= meta["above"]:
                continue
            return str(int(candidate) if kind is int else float(candidate))
    return None


def bad_values(params: type, field: dataclasses.Field) -> list[str]:
    """Values the field's declaration says must be refused."""
    meta = field.metadata
    kind = _base_type(typing.get_type_hints(params)[field.name])
    out: list[str] = []
    if meta.get("choices"):
        out.append("no-such-choice")
    if kind in (int, float):
        out.append("three")
        low = meta.get("above") if meta.get("above") is not None else meta.get("minimum")
        if low is not None:
            out.append(str(low if meta.get("above") is not None else low - 1))
        if meta.get("maximum") is not None:
            out.append(str(meta["maximum"] + 1))
    if kind is bool:
        out.append("maybe")
    return out


def _base_type(hint: Any) -> Any:
    """``int`` for ``int | None``; the hint itself otherwise."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if len(args) == 1 and typing.get_origin(hint) is not None else hint
