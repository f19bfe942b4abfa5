"""Values to try for a declared setting: one it accepts other than its default (does it
reach the fingerprint?) and ones its declaration says must be refused."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any


def alternative_values(params: type, field: dataclasses.Field[Any]) -> list[str]:
    """Values other than the default that the field accepts, as spec text, nearest first;
    empty when none can be derived from its declaration (free text, say). Several, because
    a ranker may rightly fold some values together (a length above what the model reads is
    the model's own length): a parameter reaches the fingerprint if any of them moves it."""
    meta = field.metadata
    default = field.default
    kind = _base_type(typing.get_type_hints(params)[field.name])
    choices = [str(c) for c in meta.get("choices", ()) if c != default]
    if choices:
        return choices
    if kind is bool:
        return ["false" if default else "true"]
    if kind not in (int, float):
        return []
    above = meta.get("above")
    low = above if above is not None else meta.get("minimum")
    high = meta.get("maximum")
    start = default if isinstance(default, (int, float)) else (low if low is not None else 1)
    step = 1 if kind is int else 0.5
    candidates = [start + step, start - step, start * 2, start / 2, low, high]
    out: list[str] = []
    for candidate in candidates:
        if candidate is None or candidate == default:
            continue
        if kind is int:
            candidate = int(candidate)
        if (low is not None and candidate < low) or (high is not None and candidate > high) \
                or (above is not None and candidate <= above):
            continue
        text = str(candidate if kind is int else float(candidate))
        if text not in out:
            out.append(text)
    return out


def bad_values(params: type, field: dataclasses.Field[Any]) -> list[str]:
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
