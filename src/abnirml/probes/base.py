"""The Probe contract, the context probes read from, and the vectorised sample table.

A probe has a ``name`` (public, e.g. ``mmp:tf:length``), a ``family`` (the key of a
registered :class:`~abnirml.probes.family.Family`: ``mmp``, ``tmp``, ``dtp``, ``axiom`` or a
user's), ``symmetric`` (effect counts |diff| > δ only) and
``samples(context)``, an iterator of :class:`~abnirml.samples.Sample` (or
:class:`~abnirml.samples.Skip` for samples it could not build). Samples must be deterministic
for a given ``context.seed``.

Probes that produce millions of samples from few texts (measure-and-match) may also offer
``sample_table(context)``, which returns a :class:`SampleTable` of integer references into
a text pool; the engine uses it when present and :func:`table_from_samples` otherwise.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar, cast, overload, runtime_checkable

import numpy as np

from abnirml.errors import AbnirmlError, ConfigError, did_you_mean, user_line
from abnirml.probes.options import FamilyOptions
from abnirml.samples import Sample, Skip
from abnirml.text.analyzer import Analyzer

OptionsT = TypeVar("OptionsT")
MemoT = TypeVar("MemoT")

#: Default relevance bands for the breakdown subsets (TREC DL grading, 0–3).
DEFAULT_GRADE_BANDS: tuple[tuple[str, int, int], ...] = (
    ("non-relevant", 0, 1),
    ("relevant", 2, 3),
)


@runtime_checkable
class Probe(Protocol):
    # read-only members, so frozen dataclasses (most probes) satisfy the protocol
    @property
    def name(self) -> str: ...

    @property
    def family(self) -> str: ...

    @property
    def symmetric(self) -> bool: ...

    def samples(self, context: ProbeContext) -> Iterator[Sample | Skip]: ...


@dataclass(frozen=True)
class KeyedProbe:
    """The header the probes of a built-in family share: one family key per class, one-sided
    pairs (d1 is the text with the characteristic), and a name ``family:suffix``. A subclass
    is a frozen dataclass of what picks its probe out of the family (a manipulation, a
    variation, an axiom, a variable and its control), and says its ``suffix`` and ``label``.
    """

    family: ClassVar[str]
    symmetric: ClassVar[bool] = False

    @property
    def suffix(self) -> str:
        raise NotImplementedError

    @property
    def name(self) -> str:
        return f"{self.family}:{self.suffix}"


@dataclass
class ProbeContext:
    """Everything a probe may read: the collection, analysis, seed and options.

    ``settings`` holds each family's typed, validated options (family key → its options
    record, as :func:`~abnirml.probes.family_registry.resolve_options` builds them from
    ``FAMILY.KEY`` values); probes read them with :meth:`family_options` or
    :meth:`options`. Commands build
    their context through :meth:`abnirml.evaluation.execution.workspace.Workspace.probe_context`.
    ``ranker_env`` is the run's ranker environment (for probes that build a ranker, e.g.
    DocT5Query expansions, or share its collection statistics), None outside a run.
    """

    collection: Any
    analyzer: Analyzer = field(default_factory=Analyzer)
    seed: int = 0
    settings: dict[str, Any] = field(default_factory=dict)
    grade_bands: tuple[tuple[str, int, int], ...] = DEFAULT_GRADE_BANDS
    candidates: Callable[[], Mapping[str, list[str]]] | None = None
    #: qid → docno → the candidate run's own score (LB1 compares them); None: not known.
    candidate_scores: Callable[[], Mapping[str, Mapping[str, float]]] | None = None
    ranker_env: Any = None
    #: a ParseCache (probes/parse_cache.py) keeping spaCy-derived values across runs; None:
    #: parse every run
    parse_cache: Any = None
    _memo: dict[str, Any] = field(default_factory=dict, repr=False)
    _defaults: dict[type, Any] = field(default_factory=dict, repr=False)

    def rng(self, probe_name: str) -> np.random.Generator:
        """A generator seeded by (seed, probe name): independent of which probes run."""
        digest = hashlib.blake2b(f"{self.seed}\x00{probe_name}".encode(), digest_size=8)
        return np.random.default_rng(int.from_bytes(digest.digest(), "little"))

    @overload
    def family_options(self, family: str) -> Any: ...

    @overload
    def family_options(self, family: str, options_type: type[OptionsT]) -> OptionsT: ...

    def family_options(self, family: str, options_type: type | None = None) -> Any:
        """The typed options of ``family``.

        A run's context holds every registered family's options (a
        :class:`~abnirml.probes.options.FamilyOptions`): a key no family has, or a type
        other than the family's own, is refused naming the key, so a value given with
        ``--option`` can never be ignored. A context built by hand without them gives the
        defaults of ``options_type``.
        """
        if family not in self.settings:
            if isinstance(self.settings, FamilyOptions):
                hint = did_you_mean(family, sorted(self.settings))
                raise ConfigError(f"a probe asked for the options of probe family {family!r}, "
                                  f"which is not registered{hint}")
            if options_type is None:
                raise RuntimeError(f"no options for family {family!r} in this context")
            self.settings[family] = options_type()
        value = self.settings[family]
        if options_type is not None and not isinstance(value, options_type):
            raise ConfigError(f"a probe asked for the options of probe family {family!r} as "
                              f"{options_type.__name__}, but that family declares "
                              f"{type(value).__name__}")
        return value

    def options(self, options_type: type[OptionsT]) -> OptionsT:
        """The options whose type is ``options_type``, whichever key its family has: the
        lookup a probe cannot get wrong by misspelling its family's key. A run's context
        refuses a type no registered family declares; one built by hand gives its defaults.
        """
        owners = [key for key, value in self.settings.items() if type(value) is options_type]
        if len(owners) == 1:
            # settings maps keys to Any; the comprehension kept only values of this type
            return cast(OptionsT, self.settings[owners[0]])
        if owners:
            raise ConfigError(f"{options_type.__name__} is the options type of several probe "
                              f"families ({', '.join(sorted(owners))}): ask by key with "
                              "family_options")
        if isinstance(self.settings, FamilyOptions):
            raise ConfigError(f"no registered probe family declares options of type "
                              f"{options_type.__name__}")
        # _defaults holds, under each options type, an instance of that type
        return cast(OptionsT, self._defaults.setdefault(options_type, options_type()))

    def memo(self, key: str, build: Callable[[], MemoT]) -> MemoT:
        """Share expensive intermediate results (spaCy parses, term matrices) across probes."""
        if key not in self._memo:
            self._memo[key] = build()
        # a key names one kind of value: what its build returned when it was first asked
        return cast(MemoT, self._memo[key])

    def candidate_docnos(self) -> Mapping[str, list[str]]:
        """Each query's candidate documents (with text), best first."""
        if self.candidates is None:
            raise RuntimeError("this context has no candidate set")
        return self.candidates()


@dataclass
class SampleTable:
    """Samples as integer references into ``texts``: compact for millions of samples.

    ``grade`` is the relevance grade that places a sample in the breakdown subsets (NaN when
    the probe has no such grade). ``meta(i)`` rebuilds sample ``i``'s metadata on demand.

    Optional, for probes whose claim is not about one pair of scores (TFC2 compares score
    differences of three documents): ``more_docs`` holds further document columns, scored
    like ``doc1`` and ``doc2``, and ``combine`` maps the score arrays
    ``[S(doc1), S(doc2), S(more_docs[0]), …]`` to the two arrays the engine compares as
    "score1" and "score2". ``extra["record"]`` (a dict of JSON values) is copied into every
    result record of the probe. Query-side probes set ``query1``: ``doc1`` is then scored
    with that query instead of ``query`` (the same document under a varied query).

    ``qids`` (optional, one collection qid or None per sample) names the judged query each
    sample belongs to; without it a sample belongs to the judged query whose text is its
    ``query``. Rankers with per-query state (learned fold models) score every pair of the
    sample as that query's — so a probe that rewrites the query keeps ``query`` the
    original text (and puts the rewrite in ``query1``) or sets ``qids``.
    """

    texts: list[str]
    query: np.ndarray
    doc1: np.ndarray
    doc2: np.ndarray
    grade: np.ndarray
    skipped: Counter[str] = field(default_factory=Counter)
    meta: Callable[[int], Mapping[str, Any]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    more_docs: tuple[np.ndarray, ...] = ()
    combine: Callable[[Sequence[np.ndarray]], tuple[np.ndarray, np.ndarray]] | None = None
    #: query-side probes (qvp): the query ``doc1`` is scored with (default: ``query``)
    query1: np.ndarray | None = None
    #: the judged query of each sample (object array of qid strings or None); None: by text
    qids: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.query.shape[0])

    def sample(self, i: int) -> Sample:
        meta = self.meta(i) if self.meta is not None else {}
        return Sample(self.texts[self.query[i]], self.texts[self.doc1[i]],
                      self.texts[self.doc2[i]], meta)


def table_from_samples(items: Iterator[Sample | Skip], probe: str = "") -> SampleTable:
    """Intern the texts of iterated samples into a :class:`SampleTable`; anything but a
    Sample or Skip (a plain tuple from a user's probe) is one ConfigError naming ``probe``."""
    pool: dict[str, int] = {}
    query: list[int] = []
    doc1: list[int] = []
    doc2: list[int] = []
    grade: list[float] = []
    metas: list[Mapping[str, Any]] = []
    qids: list[str | None] = []
    skipped: Counter[str] = Counter()
    for item in items:
        if isinstance(item, Skip):
            skipped[item.reason] += 1
            continue
        if not isinstance(item, Sample):
            raise ConfigError(f"probe {probe or '?'}: samples() yielded {type(item).__name__} "
                              f"{item!r:.60}; expected abnirml.samples.Sample(query, doc1, "
                              "doc2, meta) or Skip(reason)")
        query.append(pool.setdefault(item.query, len(pool)))
        doc1.append(pool.setdefault(item.doc1, len(pool)))
        doc2.append(pool.setdefault(item.doc2, len(pool)))
        g = item.meta.get("grade")
        grade.append(float("nan") if g is None else float(g))
        metas.append(item.meta)
        qid = item.meta.get("qid")
        qids.append(None if qid is None else str(qid))
    return SampleTable(
        texts=list(pool), query=np.asarray(query, dtype=np.int64),
        doc1=np.asarray(doc1, dtype=np.int64), doc2=np.asarray(doc2, dtype=np.int64),
        grade=np.asarray(grade, dtype=np.float64), skipped=skipped, meta=metas.__getitem__,
        qids=np.asarray(qids, dtype=object) if any(q is not None for q in qids) else None)


def build_table(probe: Probe, context: ProbeContext) -> SampleTable:
    """The probe's samples as a table. A user's (plugin) probe that raises is reported as
    one line naming the probe and the file and line that raised; abnirml's own probes keep
    their tracebacks, which are bug reports."""
    try:
        fast: Callable[[ProbeContext], SampleTable] | None = getattr(probe, "sample_table", None)
        if fast is not None:
            return fast(context)
        return table_from_samples(probe.samples(context), probe.name)
    except Exception as exc:
        if isinstance(exc, AbnirmlError) or type(probe).__module__.startswith("abnirml."):
            raise
        raise ConfigError(f"probe {probe.name}: building its samples failed"
                          f"{user_line(exc)}: {type(exc).__name__}: {exc}") from None


def table_samples(table: SampleTable) -> Iterator[Sample]:
    for i in range(len(table)):
        yield table.sample(i)
