"""The settings of the axiomatic diagnostic datasets, read from ``ProbeContext.options``.

Keys (all optional; ``--option axiom.KEY=VALUE`` on the command line; the flat ``axiom_KEY``
names still work with a deprecation note):

``axiom.pool``              ``candidates`` (default: each query's candidate run, best first)
                            or ``judged`` (the query's judged documents with text).
``axiom.depth``             how many candidates per query (default 100; the candidate run's
                            own depth, ``--candidate-depth``, is an upper bound).
``axiom.length_tolerance``  δ_len in analysed tokens for TFC1, TFC2, M-TDC, TP and STMC3
                            (default 10, Câmara & Hauff); ``any`` accepts every length
                            difference, as Rennings et al. did for passages.
``axiom.cap``               instances kept per query and axiom (default 5000, a seeded
                            sample when more are found; ``0`` or ``none`` keeps all). The
                            uncapped count is always reported.
``axiom.lnc2_k``            duplication factors for LNC2 (default ``2,3,4``).
``axiom.lnc2_max_length``   largest duplicated document, in words (default: no limit;
                            Rennings et al. used 240).
``axiom.stmc2_threshold``   STMC2's minimum similarity between the non-query parts of the
                            two documents (default 0.2, Câmara & Hauff's δ).
``axiom.relevant_grade``    the lowest grade that counts as relevant for the relevance
                            agreement statistics (default: the lower bound of the grade band
                            named ``relevant``, else 2).
``axiom.stem``              ``1``/``0``: Porter-stem terms (default: as the run's analyzer).
``axiom.embeddings``        ``glove-6b-50d`` (default, the packaged GloVe vectors) or an object
                            with the :class:`~.semantics.TermVectors` interface (Python API).
``axiom.similarity``        ``cosine`` (default) or a callable ``(A, B) -> matrix`` of
                            similarities between the rows of ``A`` and of ``B``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from abnirml.errors import ConfigError
from abnirml.numbers import strict_int
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
    """Validate the axiom keys of a flat ``options`` dict (``axiom.depth`` or the deprecated
    ``axiom_depth``) through the family's typed settings, then derive the working values."""
    from abnirml.probes.options import options_from_flat

    return axiom_options(options_from_flat(AxiomFamilyOptions, "axiom", options), grade_bands)


def axiom_options(typed: AxiomFamilyOptions,
                  grade_bands: Sequence[tuple[str, int, int]] = ()) -> AxiomOptions:
    """The working settings from the family's validated options: ``cap`` 0 keeps all, the
    duplication factors become a sorted tuple, the relevant grade defaults to the grade band
    named ``relevant``."""
    lnc2_k = tuple(sorted({strict_int(str(p).strip()) for p in _parts(typed.lnc2_k)
                           if str(p).strip()}))
    if typed.relevant_grade is not None:
        relevant = typed.relevant_grade
    else:
        relevant = next((lo for name, lo, _ in grade_bands if name == "relevant"), 2)
    return AxiomOptions(pool=typed.pool, depth=typed.depth,
                        length_tolerance=float(typed.length_tolerance), cap=typed.cap or None,
                        lnc2_k=lnc2_k, lnc2_max_length=typed.lnc2_max_length,
                        stmc2_threshold=float(typed.stmc2_threshold),
                        relevant_grade=relevant, stem=typed.stem)


def _parts(value: Any) -> list[Any]:
    if isinstance(value, str):
        return value.split(",")
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _duplication_factors(value: Any, key: str) -> Any:
    parts = [p for p in _parts(value) if str(p).strip()]
    if not parts:
        raise ConfigError(f"{key}: no duplication factor given")
    for part in parts:
        try:
            number = part if isinstance(part, int) and not isinstance(part, bool) else \
                strict_int(str(part).strip())
        except ValueError as error:
            raise ConfigError(f"{key}: {error}") from None
        if number < 2:
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


def axiom_settings(context: Any) -> AxiomFamilyOptions:
    """The run's validated ``axiom.*`` settings from a :class:`~abnirml.probes.base.ProbeContext`
    (resolved up front in a run; parsed from the context's flat options otherwise)."""
    return context.family_options("axiom", AxiomFamilyOptions)
