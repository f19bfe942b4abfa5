"""The Ranker contract and the spec strings that name rankers on the command line.

A ranker maps (query text, document text) pairs to float64 scores. It exposes a ``name``
(the canonical spec, reported in results) and a ``fingerprint``: a stable string naming the
class, the weights' identity and every parameter that changes scores — the score-cache key.
Collection-dependent rankers take their statistics when constructed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from abnirml.errors import ConfigError, ScoringError

Pair = tuple[str, str]


@runtime_checkable
class Ranker(Protocol):
    name: str
    fingerprint: str

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        """One float64 score per pair, for any number of pairs."""
        ...


@dataclass(frozen=True)
class RankerHints:
    """Optional, engine-facing facts about a ranker (read with :func:`hints`)."""

    batch_size: int = 4096
    sort_by_length: bool = False
    mask_token: str = "[MASK]"
    # True when the ranker packs its own model batches (token budgets): ``batch_size`` is then
    # only how many pairs the engine hands over per cache commit, and ``--batch-size`` reaches
    # the model through the ranker's own settings instead of shrinking engine calls.
    own_batches: bool = False


def hints(ranker: Ranker) -> RankerHints:
    return getattr(ranker, "hints", RankerHints())


@dataclass(frozen=True)
class RankerSpec:
    """A parsed ranker spec: ``family[:argument][+key=value…]``.

    Examples: ``bm25``, ``bm25+k1=0.9+b=0.4``,
    ``cross-encoder:cross-encoder/ms-marco-MiniLM-L-6-v2``,
    ``biencoder:/models/sbert+similarity=dot``.
    """

    family: str
    argument: str = ""
    params: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, text: str) -> RankerSpec:
        text = text.strip()
        if not text:
            raise ConfigError("empty ranker spec")
        base, *raw_params = text.split("+")
        family, _, argument = base.partition(":")
        params: list[tuple[str, str]] = []
        for raw in raw_params:
            key, sep, value = raw.partition("=")
            if not sep or not key.strip():
                raise ConfigError(f"ranker spec {text!r}: parameter {raw!r} is not key=value")
            if any(k == key.strip() for k, _ in params):
                raise ConfigError(f"ranker spec {text!r}: parameter {key.strip()!r} is given "
                                  "twice")
            params.append((key.strip(), value.strip()))
        return cls(family.strip().lower(), argument.strip(), tuple(params))

    @property
    def canonical(self) -> str:
        out = self.family + (f":{self.argument}" if self.argument else "")
        return out + "".join(f"+{k}={v}" for k, v in self.params)

    def param(self, key: str, default: str | None = None) -> str | None:
        return dict(self.params).get(key, default)

    def float_param(self, key: str, default: float, *, low: float | None = None,
                    high: float | None = None, low_open: bool = False) -> float:
        """A finite number in plain notation, checked against ``[low, high]`` when given."""
        from abnirml.numbers import describe_range, in_range, strict_float

        raw = self.param(key)
        if raw is None:
            return default
        try:
            value = strict_float(raw)
        except ValueError as exc:
            raise ConfigError(f"ranker {self.canonical}: {key}: {exc}") from None
        if not in_range(value, low=low, high=high, low_open=low_open):
            raise ConfigError(f"ranker {self.canonical}: {key}={raw} must be "
                              f"{describe_range(low, high, low_open=low_open)}")
        return value

    def check_no_argument(self) -> None:
        """Refuse ``family:argument`` for families that take none (it would be ignored)."""
        if self.argument:
            raise ConfigError(f"ranker {self.canonical}: {self.family} takes no ':' argument "
                              f"(found {self.argument!r}); parameters go after '+'")

    def check_params(self, allowed: set[str]) -> None:
        unknown = [k for k, _ in self.params if k not in allowed]
        if unknown:
            raise ConfigError(f"ranker {self.canonical}: unknown parameter {unknown[0]!r} "
                              f"(allowed: {', '.join(sorted(allowed)) or 'none'})")


def digest(*parts: str) -> str:
    """A short, stable hex digest for fingerprints."""
    h = hashlib.blake2b(digest_size=10)
    for part in parts:
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


def checked_scores(ranker_name: str, scores: object, expected: int) -> np.ndarray:
    """Validate what a ranker returned: right count, finite float64."""
    array = np.asarray(scores, dtype=np.float64).reshape(-1)
    if array.shape[0] != expected:
        raise ScoringError(f"ranker {ranker_name} returned {array.shape[0]} scores "
                           f"for {expected} pairs")
    bad = ~np.isfinite(array)
    if bad.any():
        kind = "NaN" if np.isnan(array[bad]).any() else "infinite"
        raise ScoringError(f"ranker {ranker_name} returned {int(bad.sum())} {kind} score(s); "
                           "refusing to use them")
    return array
