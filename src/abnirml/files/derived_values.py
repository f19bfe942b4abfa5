"""Best-effort files of derived values kept between runs (figures, report values, a decoded
vocabulary).

Such a file only saves the next run some work, so writing it must never fail a run: an
unwritable folder is ignored. It is written under a per-process temporary name and renamed
into place, so a concurrent reader never sees half a file and two runs writing the same
entry (identical bytes, by construction of their keys) cannot corrupt it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def default_cache_path() -> Path:
    """The score cache's default location: ``$ABNIRML_CACHE`` if set, else
    ``$XDG_CACHE_HOME/abnirml/scores.sqlite``. Derived-value files live beside it. Here, not
    in :mod:`abnirml.rankers.support.cache`, so that the lower layers (text) can find the folder."""
    explicit = os.environ.get("ABNIRML_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "abnirml" / "scores.sqlite"


def store_json_quietly(path: Path, value: object, **options: object) -> None:
    """Store ``value`` as strict JSON (no NaN or Infinity, which no JSON reader but
    Python's accepts); a value that has none is not stored, only computed again."""
    try:
        text = json.dumps(value, allow_nan=False, **options)  # type: ignore[arg-type]
    except ValueError:
        return
    store_quietly(path, text.encode("utf-8"))


def store_quietly(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically, creating its folder; silently skip on OSError."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_bytes(data)
        os.replace(partial, path)
    except OSError:
        pass
