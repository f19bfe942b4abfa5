"""Which ranker families can run here, and which can run without a network.

``abnirml rankers`` lists every family; a newcomer on a core install should see at a glance
which of them work as installed and which need an extra, and which need a model from the
Hugging Face hub (so not offline unless cached). What a family imports and how it runs
offline are fields of its :class:`~abnirml.rankers.family.RankerFamily` record; only import
*specs* are looked up here, never the modules themselves, so listing stays instant and
imports no torch.
"""

from __future__ import annotations

from abnirml.errors import install_hint


def missing_modules(family: str) -> list[str]:
    """The modules ``family`` imports that are not installed ([] for unknown families)."""
    from abnirml.rankers.registry import lookup

    record = lookup(family)
    return [] if record is None else record.missing_modules()


def status(family: str) -> str:
    """One line: installed or not (with the command that installs it), and offline use."""
    from abnirml.rankers.registry import is_built_in, lookup, owner_of

    record = lookup(family)
    if record is None:
        return "not registered"
    missing = record.missing_modules()
    if missing and record.extra is not None:
        return f"not installed (missing {', '.join(missing)}: {install_hint(record.extra)})"
    if not is_built_in(family):
        offline = f"; {record.offline}" if record.offline else ""
        return f"registered by {owner_of(family)}{offline}"
    return f"installed; {record.offline}"
