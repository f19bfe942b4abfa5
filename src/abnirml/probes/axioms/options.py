"""The settings of the axiomatic diagnostic datasets, read from ``ProbeContext.options``.

Keys (all optional; ``--option KEY=VALUE`` on the command line):

``axiom_pool``              ``candidates`` (default: each query's candidate run, best first)
                            or ``judged`` (the query's judged documents with text).
``axiom_depth``             how many candidates per query (default 100; the candidate run's
                            own depth, ``--candidate-depth``, is an upper bound).
``axiom_length_tolerance``  δ_len in analysed tokens for TFC1, TFC2, M-TDC and STMC3
                            (default 10, Câmara & Hauff); ``any`` accepts every length
                            difference, as Rennings et al. did for passages.
``axiom_cap``               instances kept per query and axiom (default 5000, a seeded
                            sample when more are found; ``0`` or ``none`` keeps all). The
                            uncapped count is always reported.
``axiom_lnc2_k``            duplication factors for LNC2 (default ``2,3,4``).
``axiom_lnc2_max_length``   largest duplicated document, in words (default: no limit;
                            Rennings et al. used 240).
``axiom_stmc2_threshold``   STMC2's minimum similarity between the non-query parts of the
                            two documents (default 0.2, Câmara & Hauff's δ).
``axiom_relevant_grade``    the lowest grade that counts as relevant for the relevance
                            agreement statistics (default: the lower bound of the grade band
                            named ``relevant``, else 2).
``axiom_stem``              ``1``/``0``: Porter-stem terms (default: as the run's analyzer).
``axiom_embeddings``        ``glove-6b-50d`` (default, the packaged GloVe vectors) or an object
                            with the :class:`~.semantics.TermVectors` interface (Python API).
``axiom_similarity``        ``cosine`` (default) or a callable ``(A, B) -> matrix`` of
                            similarities between the rows of ``A`` and of ``B``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from abnirml.errors import ConfigError
from abnirml.probes.options import setting

DEFAULT_DEPTH = 100
DEFAULT_LENGTH_TOLERANCE = 10.0
DEFAULT_CAP = 5000
DEFAULT_LNC2_K = (2, 3, 4)
DEFAULT_STMC2_THRESHOLD = 0.2
POOLS = ("candidates", "judged")


@dataclass(frozen=True)
class AxiomOptions:
    pool: str = "candidates"
    depth: int = DEFAULT_DEPTH
    length_tolerance: float = DEFAULT_LENGTH_TOLERANCE    # math.inf for "any"
    cap: int | None = DEFAULT_CAP
    lnc2_k: tuple[int, ...] = DEFAULT_LNC2_K
    lnc2_max_length: int | None = None
    stmc2_threshold: float = DEFAULT_STMC2_THRESHOLD
    relevant_grade: int = 2
    stem: bool | None = None                              # None: the context analyzer's

    @property
    def length_tolerance_label(self) -> str:
        return "any" if math.isinf(self.length_tolerance) else f"{self.length_tolerance:g}"

    def features_key(self) -> str:
        """The part of the settings that changes per-query features (memo key)."""
        return f"{self.pool}:{self.depth}:{self.stem}"


def parse_options(options: Mapping[str, Any],
                  grade_bands: Sequence[tuple[str, int, int]] = ()) -> AxiomOptions:
    """Validate the ``axiom_*`` keys of ``options`` (strings from the CLI, values from Python)."""
    pool = str(options.get("axiom_pool", "candidates")).strip().lower()
    if pool not in POOLS:
        raise ConfigError(f"axiom_pool must be one of {', '.join(POOLS)}, got {pool!r}")
    depth = _int(options.get("axiom_depth", DEFAULT_DEPTH), "axiom_depth", minimum=1)
    raw_tol = options.get("axiom_length_tolerance", DEFAULT_LENGTH_TOLERANCE)
    if isinstance(raw_tol, str) and raw_tol.strip().lower() in ("any", "inf", "none"):
        tolerance = math.inf
    else:
        tolerance = _float(raw_tol, "axiom_length_tolerance")
        if tolerance < 0:
            raise ConfigError("axiom_length_tolerance must be ≥ 0 or 'any'")
    raw_cap = options.get("axiom_cap", DEFAULT_CAP)
    if raw_cap is None or (isinstance(raw_cap, str) and raw_cap.strip().lower() == "none"):
        cap = None
    else:
        cap = _int(raw_cap, "axiom_cap", minimum=0) or None
    lnc2_k = _int_list(options.get("axiom_lnc2_k", DEFAULT_LNC2_K), "axiom_lnc2_k")
    if any(k < 2 for k in lnc2_k):
        raise ConfigError("axiom_lnc2_k: every duplication factor must be ≥ 2")
    raw_max = options.get("axiom_lnc2_max_length")
    max_length = None if raw_max in (None, "", "none") else _int(raw_max,
                                                                 "axiom_lnc2_max_length", 1)
    threshold = _float(options.get("axiom_stmc2_threshold", DEFAULT_STMC2_THRESHOLD),
                       "axiom_stmc2_threshold")
    if "axiom_relevant_grade" in options:
        relevant = _int(options["axiom_relevant_grade"], "axiom_relevant_grade")
    else:
        relevant = next((lo for name, lo, _ in grade_bands if name == "relevant"), 2)
    stem = options.get("axiom_stem")
    if stem is not None:
        stem = _bool(stem, "axiom_stem")
    return AxiomOptions(pool=pool, depth=depth, length_tolerance=tolerance, cap=cap,
                        lnc2_k=lnc2_k, lnc2_max_length=max_length, stmc2_threshold=threshold,
                        relevant_grade=relevant, stem=stem)


def _float(raw: Any, key: str) -> float:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{key}: {raw!r} is not a number") from None
    if math.isnan(value):
        raise ConfigError(f"{key}: {raw!r} is not a number")
    return value


def _int(raw: Any, key: str, minimum: int | None = None) -> int:
    value = _float(raw, key)
    if not value.is_integer():
        raise ConfigError(f"{key}: {raw!r} is not a whole number")
    if minimum is not None and value < minimum:
        raise ConfigError(f"{key} must be ≥ {minimum}, got {raw!r}")
    return int(value)


def _int_list(raw: Any, key: str) -> tuple[int, ...]:
    parts = raw.split(",") if isinstance(raw, str) else (
        list(raw) if isinstance(raw, (list, tuple)) else [raw])
    values = tuple(sorted({_int(p, key) for p in parts if str(p).strip()}))
    if not values:
        raise ConfigError(f"{key}: no value given")
    return values


def _bool(raw: Any, key: str) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{key}: {raw!r} is not a yes/no value")


def _duplication_factors(value: Any, key: str) -> Any:
    parts = value.split(",") if isinstance(value, str) else (
        list(value) if isinstance(value, (list, tuple)) else [value])
    for part in parts:
        try:
            number = float(part)
        except (TypeError, ValueError):
            raise ConfigError(f"{key}: {part!r} is not a whole number") from None
        if not math.isfinite(number) or not number.is_integer() or number < 2:
            raise ConfigError(f"{key}: every duplication factor must be a whole number ≥ 2, "
                              f"got {part!r}")
    return value


@dataclass(frozen=True)
class AxiomFamilyOptions:
    pool: str = setting("candidates", choices=("candidates", "judged"), legacy="axiom_pool",
                        help="each query's candidates or its judged documents")
    depth: int = setting(100, minimum=1, legacy="axiom_depth",
                         help="candidates per query")
    length_tolerance: float = setting(10.0, minimum=0.0, allow_inf=True,
                                      words={"any": math.inf, "inf": math.inf,
                                             "none": math.inf},
                                      legacy="axiom_length_tolerance",
                                      help="δ_len in analysed tokens, or 'any'")
    cap: int | None = setting(5000, minimum=0, legacy="axiom_cap",
                              help="instances kept per query and axiom (0 or none: all)")
    lnc2_k: Any = setting("2,3,4", legacy="axiom_lnc2_k", check=_duplication_factors,
                          help="duplication factors for LNC2")
    lnc2_max_length: int | None = setting(None, minimum=1, legacy="axiom_lnc2_max_length",
                                          help="largest duplicated document, in words")
    stmc2_threshold: float = setting(0.2, minimum=-1.0, maximum=1.0,
                                     legacy="axiom_stmc2_threshold",
                                     help="STMC2's minimum similarity of the non-query parts")
    relevant_grade: int | None = setting(None, legacy="axiom_relevant_grade",
                                         help="lowest grade counted as relevant")
    stem: bool | None = setting(None, legacy="axiom_stem", help="Porter-stem terms")
    embeddings: Any = setting(None, legacy="axiom_embeddings",
                              help="term vectors (glove-6b-50d or an object)")
    similarity: Any = setting(None, legacy="axiom_similarity",
                              help="'cosine' or a callable (A, B) -> similarities")
