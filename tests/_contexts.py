"""Hand-built probe contexts for tests that run a probe without a whole run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from abnirml.probes.base import ProbeContext
from abnirml.probes.family_registry import resolve_options


def probe_context(collection: Any = None, options: Mapping[str, Any] | None = None,
                  **fields: Any) -> ProbeContext:
    """A ProbeContext over ``collection`` whose family options are ``options``
    (``FAMILY.KEY`` → value) validated as a run validates them; ``fields`` set the other
    context fields (seed, candidates, ranker_env …)."""
    return ProbeContext(collection=collection, settings=resolve_options(options or {}).settings,
                        **fields)
