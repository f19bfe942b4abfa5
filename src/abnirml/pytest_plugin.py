"""pytest plugin: gate a model's release on its behaviour, in the model repository's tests.

Installed with abnirml (entry point ``pytest11``), it adds the ``abnirml`` fixture and the
``--abnirml`` option::

    def test_more_query_terms_win(abnirml):
        assert abnirml.expect(my_ranker, "mmp:tf:length").score >= 0.95

Behaviour checks score whole probe batteries, which is slow, so tests using the fixture
are skipped unless pytest runs with ``--abnirml``. ``expect`` returns the
:class:`~abnirml.expect.Expectation` with ``score`` (and ``ci_low`` / ``ci_high`` when the
run computed an interval) as :class:`GateScore` numbers: they compare like floats, and when
a comparison fails, pytest's message names the probe, ranker, collection, score, interval,
sample counts, δ and up to three samples the ranker got the wrong way round.

Results are cached between runs in pytest's cache (``.pytest_cache``), keyed by the ranker's
fingerprint (its weights identity and parameters), the probe, collection, subset, seed,
options and abnirml's version, so an unchanged model is not re-scored;
``--abnirml-refresh`` ignores the cache. ``--abnirml-collection`` sets the default
collection (the shipped demo otherwise).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import pytest

from abnirml.expect import Expectation, expect, p_text

CACHE_PREFIX = "abnirml/expect/"


class GateScore(float):
    """A float that remembers the expectation it came from (for failure messages)."""

    expectation: Any

    def __new__(cls, value: float, expectation: Any) -> GateScore:
        made = super().__new__(cls, value)
        made.expectation = expectation
        return made


@dataclass(frozen=True)
class GateResult(Expectation):
    """What ``abnirml.expect`` returns: the :class:`~abnirml.expect.Expectation` itself,
    extended rather than copied so the two cannot drift apart, with ``score``, ``ci_low``
    and ``ci_high`` as :class:`GateScore` numbers so a failed comparison can explain itself.
    """

    cached: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.score, GateScore):
            object.__setattr__(self, "score", GateScore(float(self.score), self))

    @classmethod
    def of(cls, found: Expectation, cached: bool = False) -> GateResult:
        """The gate's view of an expectation (every field of it, unchanged)."""
        return cls(**{f.name: getattr(found, f.name) for f in fields(Expectation)},
                   cached=cached)

    @property
    def ci_low(self) -> GateScore | None:
        return self._bound("ci_low")

    @property
    def ci_high(self) -> GateScore | None:
        return self._bound("ci_high")

    def _bound(self, name: str) -> GateScore | None:
        """An interval end from the run's record (absent when no interval was computed)."""
        value = self.record.get(name)
        return None if value is None else GateScore(float(value), self)

    def explain(self) -> list[str]:
        """The lines pytest prints under a failed comparison."""
        interval = ("" if self.ci_low is None or self.ci_high is None
                    else f", CI [{float(self.ci_low):+.3f}, {float(self.ci_high):+.3f}]")
        lines = [
            f"abnirml: {self.ranker} on {self.probe} ({self.collection}, {self.subset})",
            f"  score {float(self.score):+.3f}{interval}; "
            f"{'significant' if self.significant else 'not significant'} "
            f"({p_text(self.p_value)})",
            f"  n = {self.n}: {self.pos} prefer d1, {self.neg} prefer d2, {self.neutral} within "
            f"δ = {self.delta:.4g}" + (" (cached result)" if self.cached else ""),
        ]
        for k, example in enumerate(self.counterexamples, 1):
            lines.append(f"  wrong way round #{k}: S(d1) = {example['score1']:.4g}, "
                         f"S(d2) = {example['score2']:.4g}")
            lines.append(f"    query: {_short(example['query'])}")
            lines.append(f"    d1: {_short(example['doc1'])}")
            lines.append(f"    d2: {_short(example['doc2'])}")
        return lines

    def to_json(self) -> dict[str, Any]:
        """The expectation as plain JSON, for pytest's cache (read back by :meth:`from_json`)."""
        data: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(Expectation)}
        data["score"] = float(self.score)
        data["record"] = _plain(self.record)
        data["counterexamples"] = [_plain(e) for e in self.counterexamples]
        return data

    @classmethod
    def from_json(cls, stored: Mapping[str, Any]) -> GateResult:
        """A cached result; the cached flag is what tells the failure message so."""
        names = {f.name for f in fields(Expectation)}
        data = {k: v for k, v in stored.items() if k in names}
        data["counterexamples"] = tuple(stored.get("counterexamples", ()))
        return cls(**data, cached=True)


def _short(text: str, width: int = 100) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 1] + "…"


def _plain(example: Mapping[str, Any]) -> dict[str, Any]:
    plain: dict[str, Any] = json.loads(json.dumps(example, default=str))
    return plain


class Gate:
    """The ``abnirml`` fixture: :meth:`expect` with pytest-cached results."""

    def __init__(self, cache: Any | None, collection: str, refresh: bool):
        self._cache = cache
        self.collection = collection
        self._refresh = refresh

    def expect(self, ranker: Any, probe: str, collection: str | None = None,
               subset: str = "all", **options: Any) -> GateResult:
        """Run one probe for ``ranker`` (a spec string or Ranker object), or reuse the
        result of an earlier run with the same ranker fingerprint and settings."""
        collection = collection or self.collection
        key = self._key(ranker, probe, collection, subset, options)
        if self._cache is not None and not self._refresh:
            stored = self._cache.get(key, None)
            if stored is not None:
                return GateResult.from_json(stored)
        result = GateResult.of(expect(ranker, probe, collection=collection, subset=subset,
                                      **options))
        if self._cache is not None:
            self._cache.set(key, result.to_json())
        return result

    @staticmethod
    def _key(ranker: Any, probe: str, collection: str, subset: str,
             options: Mapping[str, Any]) -> str:
        from abnirml import __version__

        identity = ranker if isinstance(ranker, str) else getattr(ranker, "fingerprint", None)
        if identity is None:
            raise TypeError(f"abnirml.expect: {ranker!r} has no fingerprint to cache by")
        text = json.dumps([__version__, identity, probe, collection, subset,
                           sorted((k, repr(v)) for k, v in options.items())])
        return CACHE_PREFIX + hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("abnirml", "ranker behaviour gates (abnirml)")
    group.addoption("--abnirml", action="store_true",
                    help="run tests that use the abnirml fixture (slow: they score probes)")
    group.addoption("--abnirml-collection", default="demo",
                    help="default collection for abnirml.expect (default: the shipped demo)")
    group.addoption("--abnirml-refresh", action="store_true",
                    help="ignore abnirml results cached by earlier runs")


@pytest.fixture
def abnirml(request: pytest.FixtureRequest) -> Gate:
    """``abnirml.expect(ranker, probe)`` in tests; skipped unless pytest runs --abnirml."""
    config = request.config
    if not config.getoption("--abnirml"):
        pytest.skip("behaviour gates run with pytest --abnirml")
    return Gate(getattr(config, "cache", None), config.getoption("--abnirml-collection"),
                config.getoption("--abnirml-refresh"))


def pytest_assertrepr_compare(config: pytest.Config, op: str, left: Any, right: Any
                              ) -> list[str] | None:
    """Explain a failed comparison of an abnirml score with the probe's numbers."""
    for side in (left, right):
        if isinstance(side, GateScore):
            return [f"{float(left)!r} {op} {float(right)!r}", *side.expectation.explain()]
    return None
