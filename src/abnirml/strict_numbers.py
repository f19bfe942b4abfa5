"""One strict reader for numbers typed by people or written in data files.

Python's ``int()`` and ``float()`` accept more than a person means: ``1_0`` is ten,
full-width ``３`` is three, ``" 5 "`` and ``"infinity"`` pass, and a 5,000-digit integer
raises a ``ValueError`` about an internal limit. Every place that reads a number from the
command line, a spec string or an input file goes through this module instead, so they all
accept the same plain ASCII notation and say the same thing when it is not one.

The functions raise :class:`ValueError` with a short reason; callers wrap it into an
:class:`~abnirml.errors.InputError` (file and line) or :class:`~abnirml.errors.ConfigError`
(option name), which know where the text came from.
"""

from __future__ import annotations

import math
import re

_INT = re.compile(r"[+-]?[0-9]+\Z")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
MAX_DIGITS = 30
"""Longer numbers are refused as typos; no grade, count or score needs more digits."""


def strict_int(text: str) -> int:
    """An integer in plain ASCII decimal notation (optional sign), at most 30 digits."""
    if not isinstance(text, str) or not _INT.match(text):
        raise ValueError(f"{_show(text)} is not an integer")
    if len(text.lstrip("+-")) > MAX_DIGITS:
        raise ValueError(f"{_show(text)} has more than {MAX_DIGITS} digits")
    return int(text)


def strict_float(text: str, *, finite: bool = True) -> float:
    """A decimal number (``1``, ``-0.5``, ``2e-3``) in plain ASCII; finite unless told.

    ``nan``, ``inf`` and ``infinity`` are accepted only with ``finite=False`` (scores in run
    files written by other tools may be ``-inf``; option values never may).
    """
    if not isinstance(text, str):
        raise ValueError(f"{_show(text)} is not a number")
    if not _FLOAT.match(text):
        if not finite and text.lower().lstrip("+-") in {"inf", "infinity", "nan"}:
            return float(text)
        raise ValueError(f"{_show(text)} is not a number")
    if len(text) > 400:
        raise ValueError(f"{_show(text)} is too long for a number")
    value = float(text)
    if finite and not math.isfinite(value):
        raise ValueError(f"{_show(text)} is out of range (not a finite number)")
    return value


def in_range(value: float, *, low: float | None = None, high: float | None = None,
             low_open: bool = False, high_open: bool = False) -> bool:
    """Whether ``value`` lies in the interval described (bounds ``None`` are unlimited)."""
    if low is not None and (value < low or (low_open and value == low)):
        return False
    return not (high is not None and (value > high or (high_open and value == high)))


def describe_range(low: float | None = None, high: float | None = None, *,
                   low_open: bool = False, high_open: bool = False) -> str:
    """Words for an interval, e.g. ``'> 0'``, ``'in [0, 1]'``, ``'>= 0'``."""
    if low is not None and high is not None:
        return f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if low is not None:
        return f"{'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f"{'<' if high_open else '<='} {high:g}"
    return "any number"


def _show(text: object) -> str:
    shown = repr(text)
    return shown if len(shown) <= 40 else shown[:37] + "…"
