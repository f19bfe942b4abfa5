"""From spec strings to rankers.

Every family is one :class:`~abnirml.rankers.family.RankerFamily` record (the built-in ones
in :mod:`abnirml.rankers.built_in`); its factory is imported only when used, so naming a
neural family never costs a torch import unless that ranker is built. Before a factory runs,
the record checks the spec's parameters once; the factory receives the parsed
:class:`~abnirml.rankers.base.RankerSpec` (its argument and canonical name), those checked
values (an instance of the family's ``params`` dataclass) and the shared :class:`RankerEnv`.
A factory of the older two-argument form ``(spec, env)`` is still called, and reads its
values with :func:`parameters`.

To add a family from outside the package, call :func:`register_family` (or :func:`register`
with a bare factory).
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from abnirml.errors import AbnirmlError, ConfigError, did_you_mean, user_line
from abnirml.rankers.base import Ranker, RankerSpec, check_ranker_fields
from abnirml.rankers.built_in import BUILT_IN, BM25Params, QLParams, TFIDFParams
from abnirml.rankers.family import BuiltRanker, LegacyFactory, NoParams, RankerFamily
from abnirml.rankers.family import Factory as FamilyFactory
from abnirml.registry import Registry
from abnirml.text.analyzer import Analyzer

if TYPE_CHECKING:
    from abnirml.rankers.support.device_batching import DeviceSettings

#: ``factory(spec, params, env) -> Ranker``; a bare factory (:func:`register`) takes no
#: declared parameters, so its ``params`` is an empty :class:`NoParams`
Factory = Callable[[RankerSpec, Any, "RankerEnv"], Ranker]

#: Every ranker family by lower-case key; the built-in ones can be neither replaced nor removed.
_RANKERS: Registry[RankerFamily] = Registry(
    "ranker family", built_ins=lambda: [(family.key, family) for family in BUILT_IN])


@dataclass
class RankerEnv:
    """What factories may need: the collection (for statistics), analysis, device, seed."""

    collection: Any = None
    analyzer: Analyzer = field(default_factory=Analyzer)
    device: str = "cpu"
    batch_size: int | None = None
    seed: int = 0
    allow_pickle: bool = False
    progress: bool = False
    #: ``tokens.sqlite`` beside the score cache: token ids kept between runs (None: in memory)
    token_store: Path | None = None
    _memo: dict[str, Any] = field(default_factory=dict, repr=False)
    #: ``device`` resolved: "checked" (auto chosen, an accelerator found) and "named" (a
    #: named accelerator not yet checked, see :meth:`device_for`)
    _devices: dict[str, str] = field(default_factory=dict, repr=False)

    def device_for(self, ranker: str, *, lazy: bool = False) -> str:
        """The device every ranker of this environment runs on, resolved once
        (:func:`~abnirml.rankers.support.torch_support.resolve_device`): ``auto`` becomes the best
        one available and a named accelerator is checked, both importing torch, on the
        first call; later calls (every other ranker of the run) reuse the answer.

        ``lazy=True`` is for a ranker that loads its model only when it scores: a named
        accelerator is then returned unchecked, without importing torch (the model's load
        checks it), so a fully cached rerun never imports torch. ``auto`` needs torch
        either way. ``ranker`` names the ranker in an error (an unknown device, a missing
        accelerator)."""
        from abnirml.rankers.support.torch_support import check_deferred, resolve_device

        if "checked" in self._devices:
            return self._devices["checked"]
        if lazy and "named" in self._devices:
            return self._devices["named"]
        device = resolve_device(self.device, ranker, lazy=lazy)
        self._devices["named" if lazy and check_deferred(self.device) else "checked"] = device
        return device

    def device_settings(self, params: Any, ranker: str, *, lazy: bool = False,
                        accelerator_tokens: int | None = None) -> DeviceSettings:
        """How a token-budget ranker uses this environment's device: its family's checked
        ``dtype``, ``max_tokens`` and ``batch_size`` (``params``), on the device resolved
        once (:meth:`device_for`, ``lazy`` as there), with ``--batch-size`` as the default
        cap (:meth:`DeviceSettings.for_params
        <abnirml.rankers.support.device_batching.DeviceSettings.for_params>`)."""
        from abnirml.rankers.support.device_batching import ACCELERATOR_MAX_TOKENS, DeviceSettings

        device = self.device_for(ranker, lazy=lazy)
        return DeviceSettings.for_params(
            params, device, ranker, default_batch=self.batch_size,
            checked=self.device_checked,
            accelerator_tokens=accelerator_tokens or ACCELERATOR_MAX_TOKENS)

    @property
    def device_checked(self) -> bool:
        """Whether :meth:`device_for` has checked the device (``auto`` resolved, a named
        accelerator found), so a model's load need not check it again."""
        return "checked" in self._devices

    def collection_stats(self) -> Any:
        """Statistics over the collection's documents, computed once per environment."""
        if "stats" not in self._memo:
            from abnirml.data.stats import CollectionStats

            if self.collection is None:
                raise ConfigError("lexical rankers need a collection for their statistics")
            texts = self.collection.doc_texts()
            if self.progress:
                import sys

                from tqdm.auto import tqdm

                texts = tqdm(texts, total=len(self.collection), desc="collection statistics",
                             unit="doc", file=sys.stderr, leave=False, mininterval=1.0)
            self._memo["stats"] = CollectionStats.build(texts, self.analyzer)
        return self._memo["stats"]

    def memo(self, key: str, build: Callable[[], Any]) -> Any:
        if key not in self._memo:
            self._memo[key] = build()
        return self._memo[key]


def register_family(family: RankerFamily) -> None:
    """Make ``family`` (a :class:`RankerFamily` record) available as a ranker spec."""
    if not isinstance(family, RankerFamily):
        raise ConfigError(f"register_family expects a RankerFamily, got {type(family).__name__}")
    _RANKERS.add(family.key.lower(), family)


def register(family: str, factory: str | Factory | LegacyFactory,
             description: str = "") -> None:
    """Make ``family`` available as a ranker spec (``factory`` or ``"module:function"``),
    with no declared parameters: the factory checks its own (``(spec, env)`` is enough
    for it; ``(spec, params, env)`` is accepted too). ``description`` is the line
    ``abnirml rankers`` shows for it. A :class:`RankerFamily` with typed parameters is
    registered with :func:`register_family`."""
    register_family(RankerFamily(key=family.lower(), factory=factory, description=description,
                                 argument="ARGUMENT", open_params=True, offline=""))


def unregister(family: str) -> None:
    """Forget a ranker family added with :func:`register` (notebooks; tests use
    :func:`abnirml.registry.scoped_registrations`). A built-in family cannot be removed."""
    _RANKERS.remove(family.lower())


def lookup(family: str) -> RankerFamily | None:
    """The record of ``family``, None if none is registered."""
    return _RANKERS.find(family.lower())


def is_built_in(family: str) -> bool:
    """Whether ``family`` is one this package defines."""
    return _RANKERS.is_built_in(family.lower())


def owner_of(family: str) -> str | None:
    """Who registered ``family``: ``abnirml`` for a built-in one, a plugin's file or module,
    or the module that called :func:`register`; None if it is not registered."""
    return _RANKERS.owner(family.lower())


def factory_of(family: str) -> str | Factory | LegacyFactory | None:
    """The factory (or ``"module:function"``) registered for ``family``, None if none is."""
    record = lookup(family)
    return None if record is None else record.factory


def families() -> list[str]:
    return sorted(_RANKERS)


def describe_family(family: str) -> str:
    """The spec form and one-line description of a family ('' for an unknown one)."""
    record = lookup(family)
    if record is None:
        return ""
    if record.params is NoParams and record.open_params:   # a bare factory: its own words
        return record.description
    return f"{record.spec_form()} — {record.description or '(no description)'}"


def parameters(spec: RankerSpec) -> Any:
    """The typed, checked parameters of ``spec`` as its family declares them."""
    record = lookup(spec.family)
    if record is None:
        raise ConfigError(f"unknown ranker {spec.family!r}")
    return record.values(spec)


def factory_arity(family: str, factory: Callable[..., Ranker]) -> Literal[2, 3]:
    """How ``factory`` is called: ``(spec, params, env)`` (3), or the older ``(spec, env)``
    (2) a family registered before factories received their parameters still has. A
    factory that takes neither is named here rather than failing with a TypeError about a
    lambda."""
    try:
        signature = inspect.signature(factory)
    except ValueError:        # no signature to read (a builtin): the current form
        return 3
    for arity in (3, 2):
        try:
            signature.bind(*range(arity))
        except TypeError:
            continue
        return 3 if arity == 3 else 2
    raise ConfigError(f"ranker factory for {family!r} "
                      f"({getattr(factory, '__qualname__', factory)!s}) must take three "
                      "arguments, (spec: RankerSpec, params, env: RankerEnv)")


def build_ranker(spec_text: str, env: RankerEnv) -> Ranker:
    """The ranker ``spec_text`` names (see :func:`build` for the record of what it is)."""
    ranker: Ranker = build(spec_text, env).ranker
    return ranker


def build(spec: str | RankerSpec, env: RankerEnv) -> BuiltRanker:
    """Build the ranker ``spec`` names, with the parsed spec and its family's record: the
    spec is parsed here once, its parameters checked once by the record, and a display name
    given to the ranker's ``name`` alone."""
    if isinstance(spec, str):
        spec = RankerSpec.parse(spec)
    record = _RANKERS.find(spec.family)
    if record is None:
        raise ConfigError(f"unknown ranker {spec.family!r}{did_you_mean(spec.family, families())}"
                          f"; known: {', '.join(families())}")
    params = record.check(spec)
    factory = _called(spec.family, record, params)
    if _RANKERS.is_built_in(spec.family):
        ranker = factory(spec, env)
    else:
        ranker = _call_user_factory(factory, spec, env)
    check_ranker_fields(ranker, f"ranker factory for {spec.family!r}")
    if spec.display:
        name_ranker(ranker, spec.display, spec.canonical)
    return BuiltRanker(ranker, spec, record)


def family_records(spec: RankerSpec) -> list[RankerFamily]:
    """The records of the families ``spec`` builds: its own, then, for a wrapper
    (``maxp:<spec>``, ``listwise-of:<spec>``), the wrapped ranker's, and so on. An unknown
    family or a wrapped spec that does not parse ends the list without an error: the
    registry reports it when the ranker is built."""
    records: list[RankerFamily] = []
    current = spec
    while (record := lookup(current.family)) is not None:
        records.append(record)
        if not record.wraps or not current.argument:
            break
        try:
            current = current.wrapped()     # the argument is shorter each time: this ends
        except ConfigError:
            break
    return records


def _called(family: str, record: RankerFamily,
            params: Any) -> Callable[[RankerSpec, RankerEnv], Ranker]:
    """The record's factory as ``(spec, env) -> Ranker`` with its checked ``params`` bound:
    the current three-argument form gets them, the older two-argument one (which reads them
    again with :func:`parameters`) is still called as it was."""
    target = record.load_factory()
    if factory_arity(family, target) == 3:
        current: FamilyFactory = target   # type: ignore[assignment]
        return lambda spec, env: current(spec, params, env)
    if record.params is not NoParams:
        warnings.warn(f"ranker family {family!r}: a factory (spec, env) reads its parameters "
                      "again; write it as (spec, params, env) to receive them checked",
                      DeprecationWarning, stacklevel=3)
    legacy: LegacyFactory = target        # type: ignore[assignment]
    return legacy


def _call_user_factory(factory: Callable[[RankerSpec, RankerEnv], Ranker], spec: RankerSpec,
                       env: RankerEnv) -> Ranker:
    """A registered (user's) factory's own failure as one line naming its file and line:
    it is the user's code, and a traceback through abnirml would hide where."""
    try:
        return factory(spec, env)
    except AbnirmlError:
        raise
    except Exception as exc:  # the user's code: any error is theirs
        raise ConfigError(f"ranker {spec.canonical}: its factory failed{user_line(exc)}: "
                          f"{type(exc).__name__}: {exc}") from None


def name_ranker(ranker: Ranker, display: str, canonical: str) -> None:
    """Give a built ranker its display name. Only ``name`` changes: the fingerprint (and so
    the score cache) stays the model's, and what the name stands for is the spec the
    :class:`~abnirml.rankers.family.BuiltRanker` record keeps."""
    try:
        ranker.name = display
    except AttributeError:
        raise ConfigError(f"ranker {canonical}: its class does not allow a display name "
                          f"(@{display})") from None


def _bm25(spec: RankerSpec, p: BM25Params, env: RankerEnv) -> Ranker:
    from abnirml.rankers.families.lexical import BM25

    return BM25(env.collection_stats(), k1=p.k1, b=p.b, k3=p.k3, name=spec.canonical)


def _ql(spec: RankerSpec, p: QLParams, env: RankerEnv) -> Ranker:
    from abnirml.rankers.families.lexical import QueryLikelihood

    return QueryLikelihood(env.collection_stats(), mu=p.mu, name=spec.canonical)


def _tfidf(spec: RankerSpec, p: TFIDFParams, env: RankerEnv) -> Ranker:
    from abnirml.rankers.families.lexical import TFIDF

    return TFIDF(env.collection_stats(), k1=p.k1, b=p.b, name=spec.canonical)
