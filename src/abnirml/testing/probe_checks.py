"""Conformance checks for a probe family: what the engine assumes of every probe's samples
and of the family's options.

The engine interns a probe's texts, scores each unique pair once, splits samples into
relevance subsets by their grade, clusters statistics by query and resumes from the cache
across runs. So samples must be well formed (texts, a known query, JSON-ready metadata), the
same for the same seed, the fast ``sample_table`` path must give what ``samples`` gives,
and a bad ``--option`` must stop a run before any work.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections import Counter
from collections.abc import Sequence
from functools import cached_property
from itertools import islice
from typing import Any

import numpy as np

from abnirml.errors import AbnirmlError
from abnirml.samples import Sample, Skip
from abnirml.testing.checks import Check, CheckResult, fail, run_checks
from abnirml.testing.values import bad_values

#: samples read through ``samples()`` per probe when comparing it with ``sample_table``
_COMPARED = 5_000


def probe_family_checks(key: str, *, collection: str = "demo", plugins: Sequence[str] = (),
                        seed: int = 0, options: dict[str, Any] | None = None) -> list[Check]:
    """The checks for the probe family ``key`` on ``collection``: its probes, their samples
    (well formed, deterministic per seed, the fast path equal to ``samples()``) and its
    options. ``plugins`` are the files or modules that register it; ``options`` are
    ``FAMILY.KEY`` values to run it with (a smaller sample, say)."""
    subject = _FamilyUnderTest(key, collection, tuple(plugins), seed, dict(options or {}))
    return [
        Check("the family is registered and lists its probes", subject.check_probes),
        Check("samples are well formed", subject.check_samples),
        Check("samples are the same for the same seed", subject.check_deterministic),
        Check("sample_table gives what samples() gives", subject.check_fast_path),
        Check("bad options are refused before any work", subject.check_options),
    ]


def check_probe_family(key: str, *, collection: str = "demo", plugins: Sequence[str] = (),
                       seed: int = 0, options: dict[str, Any] | None = None
                       ) -> list[CheckResult]:
    """Run every check of :func:`probe_family_checks`; raise one ConformanceError naming
    each failure, or return the results (with what each could not check)."""
    return run_checks(f"probe family {key}", probe_family_checks(
        key, collection=collection, plugins=plugins, seed=seed, options=options))


class _FamilyUnderTest:
    def __init__(self, key: str, collection: str, plugins: tuple[str, ...], seed: int,
                 options: dict[str, Any]):
        self.key = key
        self.collection_name = collection
        self.plugins = plugins
        self.seed = seed
        self.options = options

    @cached_property
    def family(self) -> Any:
        from abnirml.plugins import load_plugins
        from abnirml.probes.family_registry import family_keys, get_family

        load_plugins(self.plugins)
        if self.key not in family_keys():
            fail(f"no probe family {self.key!r} is registered (known: "
                 f"{', '.join(family_keys())}); pass the plugin that registers it")
        return get_family(self.key)

    @cached_property
    def probes(self) -> list[Any]:
        from abnirml.probes.probe_registry import all_probes

        self.family  # noqa: B018 - registers the family first
        return [probe for probe in all_probes() if probe.family == self.key]

    @cached_property
    def workspace(self) -> Any:
        from abnirml.evaluation.execution.workspace import SessionSettings, Workspace

        self.family  # noqa: B018
        return Workspace(self.collection_name, SessionSettings(progress=False, cache=None),
                         self.seed)

    def context(self) -> Any:
        """A fresh context, as a run makes it (its memo empty)."""
        from abnirml.probes.family_registry import resolve_options

        try:
            resolved = resolve_options(self.options)
        except AbnirmlError as exc:
            fail(f"the options given to the check are refused: {exc}")
        return self.workspace.probe_context(resolved)

    def table(self, probe: Any, context: Any) -> Any:
        from abnirml.probes.base import build_table

        try:
            return build_table(probe, context)
        except AbnirmlError as exc:
            fail(f"probe {probe.name}: building its samples failed: {exc}")

    @cached_property
    def tables(self) -> dict[str, Any]:
        context = self.context()
        return {probe.name: self.table(probe, context) for probe in self.probes}

    # -- the checks -------------------------------------------------------------------

    def check_probes(self) -> str:
        family = self.family
        if not self.probes:
            fail("the family lists no probe")
        for probe in self.probes:
            if not isinstance(probe.symmetric, bool):
                fail(f"probe {probe.name}: symmetric must be True or False")
        try:
            json.dumps(family.describe(), allow_nan=False)
        except (TypeError, ValueError) as exc:
            fail(f"the family's labels are not JSON (run.json carries them): {exc}")
        return ""

    def check_samples(self) -> str:
        queries = self.workspace.collection.queries
        empty: list[str] = []
        for name, table in self.tables.items():
            n = len(table.query)
            if not (len(table.doc1) == len(table.doc2) == n == len(table.grade)):
                fail(f"probe {name}: its table's columns differ in length")
            if not all(isinstance(text, str) for text in table.texts):
                fail(f"probe {name}: a text is not a string")
            for column in ("query", "doc1", "doc2"):
                refs = np.asarray(getattr(table, column))
                if n and (refs.min() < 0 or refs.max() >= len(table.texts)):
                    fail(f"probe {name}: {column} refers outside its texts")
            qids = [] if table.qids is None else list(table.qids)
            unknown = sorted({q for q in qids if q is not None and q not in queries})
            if unknown:
                fail(f"probe {name}: samples name queries the collection does not have "
                     f"({', '.join(unknown[:3])})")
            if not n:
                empty.append(f"{name} ({_reasons(table.skipped) or 'nothing skipped'})")
                continue
            for i in range(min(n, 50)):
                self.check_meta(name, table.sample(i).meta)
        return f"no sample on this collection from {'; '.join(empty)}" if empty else ""

    def check_meta(self, probe: str, meta: Any) -> None:
        if not hasattr(meta, "get"):
            fail(f"probe {probe}: a sample's meta is {type(meta).__name__}, not a mapping")
        for key in ("grade", "grade1", "grade2"):
            value = meta.get(key)
            if value is not None and not (isinstance(value, (int, float, np.integer,
                                                             np.floating))
                                          and math.isfinite(float(value))):
                fail(f"probe {probe}: meta[{key!r}] is {value!r}, not a finite number")
        try:
            json.dumps(dict(meta), default=_numpy_value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            fail(f"probe {probe}: a sample's meta is not JSON ({exc}); examples.jsonl "
                 "carries it")

    def check_deterministic(self) -> str:
        again = self.context()
        for probe in self.probes:
            first, second = self.tables[probe.name], self.table(probe, again)
            if _content(first) != _content(second):
                fail(f"probe {probe.name}: two builds with seed {self.seed} give different "
                     "samples (draw with context.rng(name), never an unseeded generator)")
        return ""

    def check_fast_path(self) -> str:
        unchecked: list[str] = []
        for probe in self.probes:
            if getattr(probe, "sample_table", None) is None or \
                    not callable(getattr(probe, "samples", None)):
                continue
            table = self.tables[probe.name]
            if len(table.query) > _COMPARED:
                unchecked.append(probe.name)
                continue
            items = list(islice(probe.samples(self.context()), _COMPARED * 10))
            slow = Counter((s.query, s.doc1, s.doc2) for s in items if isinstance(s, Sample))
            fast = Counter(_triples(table))
            if slow != fast:
                only_slow = sum((slow - fast).values())
                only_fast = sum((fast - slow).values())
                fail(f"probe {probe.name}: sample_table and samples() disagree ({only_fast} "
                     f"samples only in the table, {only_slow} only in samples())")
            skips = Counter(s.reason for s in items if isinstance(s, Skip))
            if skips != Counter(table.skipped):
                fail(f"probe {probe.name}: skips differ between sample_table "
                     f"({_reasons(table.skipped)}) and samples() ({_reasons(skips)})")
        return (f"more than {_COMPARED} samples, not compared: {', '.join(unchecked)}"
                if unchecked else "")

    def check_options(self) -> str:
        from abnirml.errors import ConfigError
        from abnirml.probes.family_registry import resolve_options

        options = self.family.options
        attempts = [(f"{self.key}.nosuchoption", "1")]
        attempts += [(f"{self.key}.{field.name}", bad)
                     for field in dataclasses.fields(options)
                     for bad in bad_values(options, field)]
        accepted = []
        for name, value in attempts:
            try:
                resolve_options({name: value})
            except ConfigError:
                continue
            accepted.append(f"{name}={value}")
        if accepted:
            fail(f"accepted --option {', '.join(accepted)} instead of refusing it")
        return ""


def _triples(table: Any) -> list[tuple[str, str, str]]:
    texts = table.texts
    return [(texts[q], texts[a], texts[b])
            for q, a, b in zip(table.query, table.doc1, table.doc2, strict=True)]


def _content(table: Any) -> tuple[Any, ...]:
    """What a table holds, independent of how its texts were numbered."""
    return (_triples(table), [None if g != g else float(g) for g in table.grade],
            None if table.qids is None else list(table.qids),
            sorted(Counter(table.skipped).items()))


def _reasons(skipped: Any) -> str:
    return ", ".join(f"{reason} × {count}" for reason, count in sorted(dict(skipped).items()))


def _numpy_value(value: Any) -> Any:
    """numpy scalars as JSON numbers (the writer converts them the same way)."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
