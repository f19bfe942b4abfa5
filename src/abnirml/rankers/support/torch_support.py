"""What every PyTorch ranker shares: importing torch with a useful error, checking the
device, and reading positive integer parameters. Batching lives in
:mod:`~abnirml.rankers.support.device_batching` (token budgets, tokenization ahead, precision).
"""

from __future__ import annotations

from typing import Any

from abnirml.errors import ConfigError, install_hint
from abnirml.rankers.base import RankerHints

_DEVICES = ("cpu", "cuda", "mps", "auto")


def import_torch(ranker: str, extra: str = "neural") -> Any:
    try:
        import torch
    except ImportError:
        raise ConfigError(f"ranker {ranker} needs PyTorch: {install_hint(extra)}") from None
    return torch


def import_or_explain(module: str, ranker: str, extra: str) -> Any:
    """Import an optional dependency, or explain which extra installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigError(f"ranker {ranker} needs the {module!r} package: "
                          f"{install_hint(extra)}") from None


def resolve_device(requested: str | None, ranker: str, lazy: bool = False) -> str:
    """``cpu``, ``cuda[:N]``, ``mps`` or ``auto`` (the best available), checked up front.

    ``lazy=True`` leaves an explicitly named device unchecked (no torch import): rankers that
    load their model only when scoring check it then (see ``device_batching.cast_model``),
    so a fully cached rerun never imports torch.
    """
    device = (requested or "cpu").strip().lower()
    if device.split(":")[0] not in _DEVICES:
        raise ConfigError(f"ranker {ranker}: unknown device {requested!r} "
                          "(use cpu, cuda, cuda:N, mps or auto)")
    if device == "cpu" or (lazy and check_deferred(device)):
        return device            # no need to import torch just to say so
    torch = import_torch(ranker)
    mps = getattr(torch.backends, "mps", None)
    mps_ok = bool(mps is not None and mps.is_available())
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else ("mps" if mps_ok else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"ranker {ranker}: device {device!r} requested but CUDA is not available")
    if device == "mps" and not mps_ok:
        raise ConfigError(f"ranker {ranker}: device 'mps' requested but it is not available")
    return device


def check_deferred(requested: str | None) -> bool:
    """Whether ``resolve_device(requested, lazy=True)`` leaves the device unchecked: a named
    accelerator (``cuda``, ``cuda:N``, ``mps``); ``cpu`` needs no check and ``auto`` is
    resolved (with torch) either way."""
    return (requested or "cpu").strip().lower() not in ("cpu", "auto")


def positive_int(value: str | None, default: int, ranker: str, key: str) -> int:
    """A count such as ``max_length`` or ``batch_size``: an integer ≥ 1, or ``default``."""
    from abnirml.rankers.base import checked_number
    from abnirml.strict_numbers import strict_int

    return checked_number(value, default, strict_int, ranker, key, low=1)


def neural_hints(batch_size: int, calls_per_commit: int = 1) -> RankerHints:
    """Engine hints for a neural ranker: length-sorted, ``calls_per_commit`` model batches
    per engine call (larger engine calls mean fewer cache commits)."""
    return RankerHints(batch_size=batch_size * calls_per_commit, sort_by_length=True)
