"""The settings of the axiomatic diagnostic datasets: one typed options record,
:class:`AxiomOptions`, which a probe reads with ``context.family_options("axiom")``.

Keys (all optional; ``--option axiom.KEY=VALUE`` on the command line):

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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from abnirml.errors import ConfigError
from abnirml.settings import setting
from abnirml.strict_numbers import strict_int

if TYPE_CHECKING:
    from abnirml.probes.base import ProbeContext

POOLS = ("candidates", "judged")
#: the lowest relevant grade when neither ``axiom.relevant_grade`` nor a band named
#: ``relevant`` says otherwise (TREC DL's "highly relevant" starts at 2)
DEFAULT_RELEVANT_GRADE = 2


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
class AxiomOptions:
    """The ``axiom.*`` options as the user gave them (validated), and the working values the
    probes derive from them (:attr:`instance_cap`, :attr:`duplication_factors`,
    :meth:`relevant_grade_in`): the fields keep what was given, so run.json shows it."""

    pool: str = setting("candidates", choices=POOLS,
                        help="each query's candidates or its judged documents")
    depth: int = setting(100, minimum=1, help="candidates per query")
    length_tolerance: float = setting(10.0, minimum=0.0, allow_inf=True,
                                      words={"any": math.inf, "inf": math.inf,
                                             "none": math.inf},
                                      help="δ_len in analysed tokens, or 'any'")
    cap: int | None = setting(5000, minimum=0,
                              help="instances kept per query and axiom (0 or none: all)")
    lnc2_k: Any = setting("2,3,4", check=_duplication_factors, help="duplication factors for LNC2")
    lnc2_max_length: int | None = setting(None, minimum=1,
                                          help="largest duplicated document, in words")
    stmc2_threshold: float = setting(0.2, minimum=-1.0, maximum=1.0,
                                     help="STMC2's minimum similarity of the non-query parts")
    relevant_grade: int | None = setting(None, help="lowest grade counted as relevant")
    stem: bool | None = setting(None, help="Porter-stem terms")
    embeddings: Any = setting(None, help="term vectors (glove-6b-50d or an object)")
    similarity: Any = setting(None, help="'cosine' or a callable (A, B) -> similarities")

    @property
    def instance_cap(self) -> int | None:
        """Instances kept per query and axiom; None keeps all (``cap`` 0 or none)."""
        return self.cap or None

    @property
    def duplication_factors(self) -> tuple[int, ...]:
        """LNC2's factors k, sorted, each once (``lnc2_k`` is text or a sequence)."""
        return tuple(sorted({strict_int(str(p).strip()) for p in _parts(self.lnc2_k)
                             if str(p).strip()}))

    def relevant_grade_in(self, grade_bands: Sequence[tuple[str, int, int]] = ()) -> int:
        """The lowest relevant grade: ``relevant_grade`` when given, else the lower bound of
        the grade band named ``relevant``, else :data:`DEFAULT_RELEVANT_GRADE`."""
        if self.relevant_grade is not None:
            return self.relevant_grade
        return next((lo for name, lo, _ in grade_bands if name == "relevant"),
                    DEFAULT_RELEVANT_GRADE)

    @property
    def length_tolerance_label(self) -> str:
        return "any" if math.isinf(self.length_tolerance) else f"{self.length_tolerance:g}"

    def features_key(self) -> str:
        """The part of the settings that changes per-query features (memo key)."""
        return f"{self.pool}:{self.depth}:{self.stem}"


def axiom_settings(context: ProbeContext) -> AxiomOptions:
    """The run's validated ``axiom.*`` options from a
    :class:`~abnirml.probes.base.ProbeContext` (the defaults in a context built without)."""
    return context.family_options("axiom", AxiomOptions)
