"""The Ranker contract and the spec strings that name rankers on the command line.

A ranker maps (query text, document text) pairs to float64 scores. It exposes a ``name``
(the canonical spec, reported in results) and a ``fingerprint``: a stable string naming the
class, the weights' identity and every parameter that changes scores — the score-cache key.
Collection-dependent rankers take their statistics when constructed.
"""

from __future__ import annotations

import hashlib
import numbers
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeGuard, TypeVar, runtime_checkable

import numpy as np

from abnirml.errors import ConfigError, ScoringError

Number = TypeVar("Number", int, float)

Pair = tuple[str, str]


@runtime_checkable
class Ranker(Protocol):
    name: str
    fingerprint: str

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        """One float64 score per pair, for any number of pairs."""
        ...


@dataclass(frozen=True)
class QueryIdentity:
    """Which judged query a scored pair belongs to, whatever a probe did to its text.

    ``qid`` is the collection's id of the sample's query (None when the pair belongs to no
    judged query) and ``text`` that query's original text. A query-side probe scores a
    varied text, but the pair keeps the identity of the query it was varied from.
    """

    qid: str | None
    text: str


@runtime_checkable
class QueryRoutedRanker(Protocol):
    """A ranker with per-query state: what scores a pair depends on the judged query it
    belongs to (cross-validation fold models, per-qid features, a PyTerrier pipeline keyed
    on qid). The engine groups pairs by :meth:`route` of their :class:`QueryIdentity` and
    scores each group with :meth:`routed`, so a varied query is scored exactly as its
    original would be, and each route's scores are cached under its own fingerprint.

    ``score(pairs)`` alone stays available for callers that know no identity (it may route
    by text); the engine never uses it for such a ranker when identities are known.
    """

    name: str
    fingerprint: str

    def score(self, pairs: Sequence[Pair]) -> np.ndarray: ...

    def route(self, identity: QueryIdentity) -> str:
        """The key of the scorer for pairs of this query (equal keys score alike)."""
        ...

    def routed(self, key: str) -> Ranker:
        """A plain ranker for one route, whose ``fingerprint`` names the route."""
        ...


def is_query_routed(ranker: object) -> TypeGuard[QueryRoutedRanker]:
    """True for a ranker whose scores depend on the pair's judged query (see
    :class:`QueryRoutedRanker`)."""
    return callable(getattr(ranker, "route", None)) and callable(getattr(ranker, "routed",
                                                                         None))


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


def hints(ranker: object) -> RankerHints:
    return getattr(ranker, "hints", RankerHints())


#: A display name: it becomes part of file names and run tags, so it is kept to a safe set.
DISPLAY_NAME = re.compile(r"[A-Za-z][A-Za-z0-9._-]{0,63}")


def split_display_name(text: str) -> tuple[str, str]:
    """``wmd:glove@wmd`` → (``wmd:glove``, ``wmd``); a spec without a name → (spec, "").

    The name is what follows the last ``@`` when that holds none of ``/ : + =`` (so an
    ``@`` inside a URL or a path is not mistaken for one). A name that would not be safe in
    a file name is refused here, before anything is loaded.
    """
    head, at, tail = text.rpartition("@")
    if not at or any(c in tail for c in "/:+="):
        return text, ""
    tail = tail.strip()
    if not DISPLAY_NAME.fullmatch(tail):
        what = "is empty" if not tail else f"{tail!r} is not a valid name"
        raise ConfigError(f"ranker spec {text!r}: the display name after '@' {what}: it must "
                          "start with a letter and hold only letters, digits, '.', '_' or "
                          "'-' (at most 64; it names files)")
    return head.strip(), tail


@dataclass(frozen=True)
class RankerSpec:
    """A parsed ranker spec: ``family[:argument][+key=value…][@name]``.

    Examples: ``bm25``, ``bm25+k1=0.9+b=0.4``,
    ``cross-encoder:cross-encoder/ms-marco-MiniLM-L-6-v2``,
    ``biencoder:/models/sbert+similarity=dot``, ``wmd:glove@wmd``.

    ``display`` (after ``@``) is only a label for tables, run tags and file names: it is not
    part of :attr:`canonical`, which factories build the model and its fingerprint from, so
    one model under two names shares its cached scores.
    """

    family: str
    argument: str = ""
    params: tuple[tuple[str, str], ...] = ()
    display: str = ""

    @classmethod
    def parse(cls, text: str) -> RankerSpec:
        text, display = split_display_name(text.strip())
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
        return cls(family.strip().lower(), argument.strip(), tuple(params), display)

    @property
    def canonical(self) -> str:
        """The spec without its display name: what identifies the model."""
        out = self.family + (f":{self.argument}" if self.argument else "")
        return out + "".join(f"+{k}={v}" for k, v in self.params)

    @property
    def label(self) -> str:
        """The name results report: the display name, else the canonical spec."""
        return self.display or self.canonical

    @property
    def text(self) -> str:
        """The canonical spec with its display name, parseable back into this spec."""
        return self.canonical + (f"@{self.display}" if self.display else "")

    def wrapped(self, own: Collection[str] = ()) -> RankerSpec:
        """The spec of the ranker a wrapper family wraps (``maxp:<spec>``,
        ``listwise-of:<spec>``): the ``:`` argument, with the parameters not in ``own`` (the
        wrapper's own) passed on to it."""
        passed = "".join(f"+{k}={v}" for k, v in self.params if k not in own)
        return RankerSpec.parse(self.argument + passed)

    def param(self, key: str, default: str | None = None) -> str | None:
        return dict(self.params).get(key, default)

    def float_param(self, key: str, default: float, *, low: float | None = None,
                    high: float | None = None, low_open: bool = False) -> float:
        """A finite number in plain notation, checked against ``[low, high]`` when given."""
        from abnirml.strict_numbers import strict_float

        return checked_number(self.param(key), default, strict_float, self.canonical, key,
                              low=low, high=high, low_open=low_open)

    def int_param(self, key: str, default: int, *, low: int | None = None,
                  high: int | None = None) -> int:
        """An integer in plain decimal notation, checked against ``[low, high]`` when given."""
        from abnirml.strict_numbers import strict_int

        return checked_number(self.param(key), default, strict_int, self.canonical, key,
                              low=low, high=high)

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


def check_ranker_fields(obj: object, what: str) -> None:
    """Refuse an object that cannot be probed: a ``name`` and ``fingerprint`` that are
    non-empty strings, and ``score`` (pointwise), ``preferences`` (pairwise) or
    ``rank_windows`` (listwise) to call. Results, file names and the score cache all key on
    those two strings."""
    if not any(callable(getattr(obj, method, None))
               for method in ("score", "preferences", "rank_windows")):
        raise ConfigError(f"{what} gave {type(obj).__name__} {obj!r:.60}, which has no "
                          "score(pairs) (nor preferences(triples), nor rank_windows(windows)) "
                          "method")
    for field in ("name", "fingerprint"):
        value = getattr(obj, field, None)
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{what}: '{field}' must be a non-empty string, got {value!r}")


def file_label(name: str) -> str:
    """``name`` as it appears in run tags and file-name parts: a display-safe name as it is,
    any other name (a spec with ``:`` or ``/``) reduced to lowercase letters, digits and
    ``-`` as before display names existed."""
    if DISPLAY_NAME.fullmatch(name):
        return name
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower() or "x"


def digest(*parts: str) -> str:
    """A short, stable hex digest for fingerprints."""
    h = hashlib.blake2b(digest_size=10)
    for part in parts:
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


MAX_SCORE_MAGNITUDE = 1e100
"""Scores beyond ±this are refused: finite, but the statistics square score differences, and
(1.7e308 − −1.7e308) or (1e200)² is infinite. No real model's scores come near it."""


def checked_scores(ranker_name: str, scores: object, expected: int) -> np.ndarray:
    """Validate what a ranker returned: right count, finite float64."""
    if scores is None:
        raise ScoringError(f"ranker {ranker_name} returned None instead of {expected} scores "
                           "(does its score() end with a return?)")
    _reject_non_numbers(ranker_name, scores, expected)
    try:
        array = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise ScoringError(f"ranker {ranker_name} returned {type(scores).__name__} that is "
                           f"not a sequence of numbers (expected {expected} float scores)"
                           ) from None
    if array.ndim == 0 and expected != 1:
        raise ScoringError(f"ranker {ranker_name} returned {scores!r} instead of "
                           f"{expected} scores (an array with one float per pair)")
    if array.ndim != 1 and array.size == expected:   # a scalar, an (n, 1) column …
        array = array.reshape(-1)
    elif array.ndim > 1:
        raise ScoringError(f"ranker {ranker_name} returned an array of shape "
                           f"{array.shape} for {expected} pairs (expected one score per pair)")
    if array.shape[0] != expected:
        raise ScoringError(f"ranker {ranker_name} returned {array.shape[0]} scores "
                           f"for {expected} pairs")
    bad = ~np.isfinite(array)
    if bad.any():
        kind = "NaN" if np.isnan(array[bad]).any() else "infinite"
        raise ScoringError(f"ranker {ranker_name} returned {int(bad.sum())} {kind} score(s); "
                           "refusing to use them")
    huge = np.abs(array) > MAX_SCORE_MAGNITUDE
    if huge.any():
        first = float(array[huge][0])
        raise ScoringError(f"ranker {ranker_name} returned {int(huge.sum())} score(s) beyond "
                           f"±{MAX_SCORE_MAGNITUDE:g} (e.g. {first:.4g}): differences and "
                           "their variances would overflow to infinity; rescale the scores")
    return array


def _reject_non_numbers(ranker_name: str, scores: object, expected: int) -> None:
    """ScoringError for text or booleans among the scores: ``np.asarray(["1.5"], float)``
    would quietly parse strings, so a ranker returning labels or formatted numbers would
    be probed on whatever they happen to parse to. Integers and floats (also in an object
    array) are numbers; anything else stops the run, as it does for an HTTP service."""
    try:
        raw = np.asarray(scores)
    except (TypeError, ValueError):
        return              # ragged or odd: the float conversion names the problem
    if raw.dtype.kind in "iuf":
        return
    if raw.dtype.kind == "O":
        # None becomes NaN, refused as a missing score below
        wrong = [v for v in raw.reshape(-1) if v is not None and (
            isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Real, np.number)))]
        if not wrong:
            return
        bad = wrong[0]
        shown = f"{type(bad).__name__} {str(bad)[:40]!r}"
    elif raw.size:
        kind = {"U": "text", "S": "bytes", "b": "booleans"}.get(raw.dtype.kind,
                                                                 f"{raw.dtype} values")
        shown = f"{kind} such as {str(raw.reshape(-1)[0])[:40]!r}"
    else:
        shown = f"an empty {raw.dtype} array"
    raise ScoringError(f"ranker {ranker_name} returned {shown} among its scores; score() "
                       f"must return {expected} numbers (int or float), not text or booleans")


def checked_number(raw: str | None, default: Number, parse: Callable[[str], Number],
                   ranker: str, key: str, *, low: float | None = None,
                   high: float | None = None, low_open: bool = False) -> Number:
    """``raw`` read by ``parse`` (``strict_int``/``strict_float``: plain notation only) and
    checked against the range, or ``default`` when not given: one wording of every ranker
    parameter error, ``ranker NAME: key=VALUE must be >= 1``."""
    from abnirml.strict_numbers import describe_range, in_range

    if raw is None:
        return default
    try:
        value = parse(raw)
    except ValueError as exc:
        raise ConfigError(f"ranker {ranker}: {key}: {exc}") from None
    if not in_range(value, low=low, high=high, low_open=low_open):
        raise ConfigError(f"ranker {ranker}: {key}={raw} must be "
                          f"{describe_range(low, high, low_open=low_open)}")
    return value
