"""From spec strings to rankers.

Every family is one :class:`~abnirml.rankers.family.RankerFamily` record (the built-in ones
in :mod:`abnirml.rankers.built_in`); its factory is imported only when used, so naming a
neural family never costs a torch import unless that ranker is built. Before a factory runs,
the record checks the spec's parameters; the factory receives the parsed
:class:`~abnirml.rankers.base.RankerSpec` and the shared :class:`RankerEnv`, and reads typed
values with :func:`parameters`.

To add a family from outside the package, call :func:`register_family` (or :func:`register`
with a bare factory).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from abnirml.errors import AbnirmlError, ConfigError, did_you_mean, user_line
from abnirml.rankers.base import Ranker, RankerSpec, check_ranker_fields
from abnirml.rankers.built_in import BUILT_IN
from abnirml.rankers.family import NoParams, RankerFamily
from abnirml.registry import Registry
from abnirml.text.analyzer import Analyzer

Factory = Callable[[RankerSpec, "RankerEnv"], Ranker]

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


def register(family: str, factory: str | Factory, description: str = "") -> None:
    """Make ``family`` available as a ranker spec (``factory`` or ``"module:function"``),
    with no declared parameters: the factory checks its own. ``description`` is the line
    ``abnirml rankers`` shows for it. A :class:`RankerFamily` with typed parameters is
    registered with :func:`register_family`."""
    register_family(RankerFamily(family.lower(), factory, description, argument="ARGUMENT",
                                 open_params=True, offline=""))


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


def factory_of(family: str) -> str | Factory | None:
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


def _check_factory(family: str, factory: Factory, spec: RankerSpec, env: RankerEnv) -> None:
    """A registered factory is called as ``factory(spec, env)``; one that cannot take those
    two arguments is named here rather than failing with a TypeError about a lambda."""
    import inspect

    try:
        inspect.signature(factory).bind(spec, env)
    except TypeError:
        raise ConfigError(f"ranker factory for {family!r} "
                          f"({getattr(factory, '__qualname__', factory)!s}) must take two "
                          "arguments, (spec: RankerSpec, env: RankerEnv)") from None
    except ValueError:        # no signature to read (a builtin): let the call decide
        pass


def build_ranker(spec_text: str, env: RankerEnv) -> Ranker:
    spec = RankerSpec.parse(spec_text)
    record = _RANKERS.find(spec.family)
    if record is None:
        raise ConfigError(f"unknown ranker {spec.family!r}{did_you_mean(spec.family, families())}"
                          f"; known: {', '.join(families())}")
    record.check(spec)
    target = record.load_factory()
    from abnirml.rankers.hf import set_pickle_policy

    set_pickle_policy(env.allow_pickle)
    _check_factory(spec.family, target, spec, env)
    if _RANKERS.is_built_in(spec.family):
        ranker = target(spec, env)
    else:
        ranker = _call_user_factory(target, spec, env)
    check_ranker_fields(ranker, f"ranker factory for {spec.family!r}")
    if spec.display:
        name_ranker(ranker, spec.display, spec.canonical)
    return ranker


def _call_user_factory(factory: Factory, spec: RankerSpec, env: RankerEnv) -> Ranker:
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
    the score cache) stays the model's, and ``canonical_spec`` keeps what the name stands
    for (run.json's ``spec``, seeds that must not depend on a label)."""
    try:
        ranker.name = display
        ranker.canonical_spec = canonical  # type: ignore[attr-defined]
    except AttributeError:
        raise ConfigError(f"ranker {canonical}: its class does not allow a display name "
                          f"(@{display})") from None


def _bm25(spec: RankerSpec, env: RankerEnv) -> Ranker:
    from abnirml.rankers.lexical import BM25

    p = parameters(spec)
    return BM25(env.collection_stats(), k1=p.k1, b=p.b, k3=p.k3, name=spec.canonical)


def _ql(spec: RankerSpec, env: RankerEnv) -> Ranker:
    from abnirml.rankers.lexical import QueryLikelihood

    return QueryLikelihood(env.collection_stats(), mu=parameters(spec).mu, name=spec.canonical)


def _tfidf(spec: RankerSpec, env: RankerEnv) -> Ranker:
    from abnirml.rankers.lexical import TFIDF

    p = parameters(spec)
    return TFIDF(env.collection_stats(), k1=p.k1, b=p.b, name=spec.canonical)
