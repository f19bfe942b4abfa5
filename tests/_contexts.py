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


def run_config(top: Mapping[str, Any], session: Mapping[str, Any],
               statistics: Mapping[str, Any], **fields: Any) -> Any:
    """A RunConfig from defaults for its own fields (``top``) and for its ``session`` and
    ``statistics`` records, with ``fields`` (any record's field names, flat) put where each
    belongs — so a test names ``cache=…`` or ``alpha=…`` without building the records."""
    from abnirml.pipeline import RunConfig, SessionSettings, StatisticsSettings

    parts = {"top": dict(top), "session": dict(session), "statistics": dict(statistics)}
    for name, value in fields.items():
        part = ("session" if name in SessionSettings.__dataclass_fields__ else
                "statistics" if name in StatisticsSettings.__dataclass_fields__ else "top")
        parts[part][name] = value
    return RunConfig(**parts["top"], session=SessionSettings(**parts["session"]),
                     statistics=StatisticsSettings(**parts["statistics"]))
