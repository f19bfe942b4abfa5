"""``+dtype=fp32|fp16|bf16``: the floating-point type a torch ranker's weights run in.

One small function so that every ranker family of this module set parses the parameter the
same way (and a shared implementation can replace it in one place). Half precision changes
scores, so the chosen name belongs in each ranker's fingerprint.
"""

from __future__ import annotations

from typing import Any

from abnirml.errors import ConfigError

DTYPES = ("fp32", "fp16", "bf16")
_TORCH_NAMES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def parse_dtype(value: str | None, ranker: str) -> tuple[str, Any]:
    """(canonical name, torch dtype) for a ``+dtype=`` value; ``fp32`` when absent."""
    name = (value or "fp32").strip().lower()
    if name not in _TORCH_NAMES:
        raise ConfigError(f"ranker {ranker}: dtype must be one of {', '.join(DTYPES)}, "
                          f"got {value!r}")
    import torch

    return name, getattr(torch, _TORCH_NAMES[name])
