"""One registry type for everything users can add: probe families, probes, ranker families.

A :class:`Registry` maps keys to values and remembers, for each entry, who registered it
(its *owner*). Three rules hold for every registry alike, so each kind of extension behaves
the same way:

* **Built-ins are protected.** The entries the package defines are loaded on first use and
  can be neither replaced nor removed by registration.
* **A key has one owner.** Registering a key again from the same owner replaces the entry (a
  notebook cell run twice); from another owner it is refused, naming the first, because the
  second would otherwise silently replace what the first relies on.
* **Registration can be undone.** :func:`scoped_registrations` restores every registry to
  its state on entry when the block ends (tests, notebooks), unless the block calls
  :meth:`Scope.keep`; loading a plugin uses it so that a plugin that fails halfway leaves
  nothing of itself behind.

The owner is whoever :func:`registering_as` names (the plugin loader names the plugin),
else the module of the code that called into abnirml to register.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from types import FrameType, MappingProxyType
from typing import Generic, TypeVar

from abnirml.errors import ConfigError, did_you_mean

T = TypeVar("T")

#: the owner of the entries the package itself defines
BUILT_IN = "abnirml"

_OWNER: ContextVar[str | None] = ContextVar("abnirml_registry_owner", default=None)
#: every registry alive, so one scope can restore them all
_LIVE: weakref.WeakSet[Registry[object]] = weakref.WeakSet()


@dataclass(frozen=True)
class _Entry(Generic[T]):
    value: T
    owner: str


@dataclass(frozen=True)
class _State(Generic[T]):
    """What a scope restores: whether the built-ins were loaded, and every entry in order."""

    loaded: bool
    entries: dict[str, _Entry[T]]
    revision: int


class Registry(Generic[T]):
    """Entries by key, with protected built-ins, an owner per entry and scoped undo.

    ``kind`` names what is registered in messages (``"ranker family"``); ``built_ins``
    returns the package's own ``(key, value)`` pairs and is called on first use, so a
    registry whose built-ins import much costs nothing until it is read; ``called`` is what
    a key is called in "give yours another …"; ``describe`` adds a short description of a
    built-in entry to the message refusing to replace it.
    """

    def __init__(self, kind: str, *,
                 built_ins: Callable[[], Iterable[tuple[str, T]]] = tuple,
                 called: str = "name", describe: Callable[[T], str] | None = None) -> None:
        self.kind = kind
        self._built_ins = built_ins
        self._called = called
        self._describe = describe
        self._loaded = False
        self._entries: dict[str, _Entry[T]] = {}
        self._built_in_keys: frozenset[str] = frozenset()
        self._revision = 0
        _LIVE.add(self)  # type: ignore[arg-type]

    # -- reading ----------------------------------------------------------------------------

    def _all(self) -> dict[str, _Entry[T]]:
        if not self._loaded:
            self._loaded = True
            loaded = {key: _Entry(value, BUILT_IN) for key, value in self._built_ins()}
            self._built_in_keys = frozenset(loaded)
            self._entries = {**loaded, **self._entries}
        return self._entries

    def __contains__(self, key: object) -> bool:
        return key in self._all()

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._all()))

    def __len__(self) -> int:
        return len(self._all())

    def keys(self) -> list[str]:
        """Every key: built-ins first, then in registration order."""
        return list(self._all())

    def values(self) -> list[T]:
        return [entry.value for entry in self._all().values()]

    def mapping(self) -> Mapping[str, T]:
        """A read-only copy of the entries, in :meth:`keys` order."""
        return MappingProxyType({key: entry.value for key, entry in self._all().items()})

    def find(self, key: str) -> T | None:
        """The entry of ``key``, None when there is none."""
        entry = self._all().get(key)
        return None if entry is None else entry.value

    def get(self, key: str) -> T:
        """The entry of ``key``; an unknown key is a :class:`ConfigError` with a guess."""
        entry = self._all().get(key)
        if entry is None:
            raise ConfigError(f"unknown {self.kind} {key!r}{did_you_mean(key, self.keys())}")
        return entry.value

    def owner(self, key: str) -> str | None:
        """Who registered ``key`` (:data:`BUILT_IN` for the package's own), None if nobody."""
        entry = self._all().get(key)
        return None if entry is None else entry.owner

    def is_built_in(self, key: str) -> bool:
        self._all()
        return key in self._built_in_keys

    @property
    def revision(self) -> int:
        """A number that changes whenever an entry is added, replaced or removed."""
        return self._revision

    # -- changing ---------------------------------------------------------------------------

    def add(self, key: str, value: T, owner: str | None = None) -> None:
        """Register ``value`` under ``key`` for ``owner`` (default: :func:`current_owner`).

        Registering a built-in's own value again is a no-op; anything else under a built-in
        key, or a key another owner holds, is refused with one line."""
        entries = self._all()
        owner = owner or current_owner()
        if key in self._built_in_keys:
            if entries[key].value is value:
                return
            raise ConfigError(f"{self.kind} {key!r} is built in{self._about(key)}; give "
                              f"yours another {self._called}")
        held = entries.get(key)
        if held is not None and held.owner != owner:
            raise ConfigError(f"{self.kind} {key!r} is already registered by {held.owner}; "
                              f"give one of them another {self._called}")
        entries[key] = _Entry(value, owner)
        self._revision += 1

    def remove(self, key: str) -> None:
        """Forget a registered entry. Built-ins cannot be removed; forgetting a key that is
        not registered does nothing, so cleanup code may run twice."""
        entries = self._all()
        if key in self._built_in_keys:
            raise ConfigError(f"{self.kind} {key!r} is built in{self._about(key)}; it cannot "
                              "be removed")
        if entries.pop(key, None) is not None:
            self._revision += 1

    def _about(self, key: str) -> str:
        if self._describe is None:
            return ""
        return f" ({self._describe(self._entries[key].value)})"

    # -- undo -------------------------------------------------------------------------------

    @contextmanager
    def scoped(self) -> Iterator[Scope]:
        """Restore this registry alone to its present state when the block ends."""
        scope = Scope([self], restore_new=False)  # type: ignore[list-item]
        try:
            yield scope
        finally:
            scope.end()

    def _state(self) -> _State[T]:
        return _State(self._loaded, dict(self._entries), self._revision)

    def _restore(self, state: _State[T] | None) -> None:
        """Back to ``state``; None: as new (built-ins only, loaded again on first use)."""
        if state is None:
            state = _State(False, {}, self._revision)
        # entries are compared by identity: a value's own == may be costly or refuse
        changed = state.loaded != self._loaded or list(state.entries) != list(self._entries) \
            or any(self._entries[key] is not entry for key, entry in state.entries.items())
        self._loaded, self._entries = state.loaded, dict(state.entries)
        if changed:
            self._revision += 1

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {len(self._entries)} entries)"


class Scope:
    """The saved state of some registries; restored when its block ends unless kept."""

    def __init__(self, registries: Iterable[Registry[object]], restore_new: bool) -> None:
        self._saved = {registry: registry._state() for registry in registries}
        self._restore_new = restore_new
        self._kept = False

    def keep(self) -> None:
        """Keep what the block registered: nothing is undone when it ends."""
        self._kept = True

    def changed(self) -> set[str]:
        """The kinds of the registries whose entries changed since the scope began."""
        changed = {registry.kind for registry, state in self._saved.items()
                   if registry.revision != state.revision}
        if self._restore_new:
            changed |= {registry.kind for registry in list(_LIVE)
                        if registry not in self._saved and registry.revision}
        return changed

    def end(self) -> None:
        """Restore the saved state (unless kept): what the end of the block does."""
        if self._kept:
            return
        for registry, state in self._saved.items():
            registry._restore(state)
        if self._restore_new:            # a registry first created inside the block
            for registry in list(_LIVE):
                if registry not in self._saved:
                    registry._restore(None)


@contextmanager
def scoped_registrations() -> Iterator[Scope]:
    """Restore every registry to its state on entry when the block ends (tests, notebooks,
    a plugin that fails while loading); ``scope.keep()`` inside the block keeps instead.
    Scopes nest: each restores what it saw on entry."""
    scope = Scope(list(_LIVE), restore_new=True)
    try:
        yield scope
    finally:
        scope.end()


@contextmanager
def registering_as(owner: str) -> Iterator[None]:
    """Record ``owner`` as the owner of everything registered inside the block."""
    token = _OWNER.set(owner)
    try:
        yield
    finally:
        _OWNER.reset(token)


def current_owner() -> str:
    """The owner :func:`registering_as` names, else the module of the nearest caller outside
    abnirml (``__main__`` in a script or notebook)."""
    named = _OWNER.get()
    if named is not None:
        return named
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__") or ""
        if module != "abnirml" and not module.startswith("abnirml."):
            return module or "?"
        frame = frame.f_back
    return BUILT_IN
