"""What identifies a Python scorer well enough to key cached scores by it.

A PyTerrier transformer built with ``pt.apply.doc_score(fn)`` has the same class whatever
``fn`` computes, so its class name alone would let one function's cached scores answer for
another's. :func:`scorer_identity` hashes what decides the scores instead: the code of every
function involved (bytecode, constants, referenced names), the values its closures, defaults
and referenced globals hold, and the object's plain-data attributes. Anything it cannot read
as data (an open model, a connection, an arbitrary object) makes the scorer unidentifiable,
and it returns ``None`` so the caller can refuse to cache rather than guess.
"""

from __future__ import annotations

import functools
import hashlib
import types
from typing import Any

_PLAIN = (type(None), bool, int, float, complex, str, bytes)
_MAX_DEPTH = 12


class _Unidentifiable(Exception):
    """Raised inside the walk when some value cannot be reduced to data."""


def scorer_identity(obj: Any) -> str | None:
    """A hex digest of what determines ``obj``'s behaviour, or ``None`` when unknowable."""
    h = hashlib.blake2b(digest_size=12)
    try:
        _feed(h, obj, depth=0, seen=set())
    except (_Unidentifiable, RecursionError):
        return None
    return h.hexdigest()


def _feed(h: Any, value: Any, depth: int, seen: set[int]) -> None:
    if depth > _MAX_DEPTH:
        raise _Unidentifiable
    if isinstance(value, _PLAIN):
        h.update(f"{type(value).__name__}:{value!r}\x00".encode("utf-8", "surrogatepass"))
        return
    if id(value) in seen:                     # recursion (a function naming itself)
        h.update(b"<seen>\x00")
        return
    seen = seen | {id(value)}
    nxt = depth + 1
    if isinstance(value, (tuple, list, frozenset, set)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        h.update(f"{type(value).__name__}[{len(items)}\x00".encode())
        for item in items:
            _feed(h, item, nxt, seen)
        return
    if isinstance(value, dict):
        h.update(f"dict[{len(value)}\x00".encode())
        for key in sorted(value, key=repr):
            _feed(h, key, nxt, seen)
            _feed(h, value[key], nxt, seen)
        return
    if isinstance(value, types.ModuleType):
        h.update(f"module:{value.__name__}\x00".encode())
        return
    if isinstance(value, (type, types.BuiltinFunctionType)):
        h.update(f"name:{getattr(value, '__module__', '')}."
                 f"{getattr(value, '__qualname__', '')}\x00".encode())
        return
    if isinstance(value, types.CodeType):
        _feed_code(h, value, nxt, seen)
        return
    if isinstance(value, types.FunctionType):
        _feed_function(h, value, nxt, seen)
        return
    if isinstance(value, types.MethodType):
        _feed(h, value.__func__, nxt, seen)
        _feed(h, value.__self__, nxt, seen)
        return
    if isinstance(value, functools.partial):
        _feed(h, (value.func, value.args, value.keywords), nxt, seen)
        return
    _feed_object(h, value, nxt, seen)


def _feed_code(h: Any, code: types.CodeType, depth: int, seen: set[int]) -> None:
    h.update(code.co_code)
    h.update(repr(code.co_names).encode())
    _feed(h, code.co_consts, depth, seen)


def _feed_function(h: Any, fn: types.FunctionType, depth: int, seen: set[int]) -> None:
    h.update(f"function:{fn.__module__}.{fn.__qualname__}\x00".encode())
    _feed_code(h, fn.__code__, depth, seen)
    _feed(h, fn.__defaults__, depth, seen)
    _feed(h, fn.__kwdefaults__, depth, seen)
    for cell in fn.__closure__ or ():
        try:
            contents = cell.cell_contents
        except ValueError:                    # an empty cell (not yet assigned)
            contents = None
        _feed(h, contents, depth, seen)
    builtins = {"__builtins__"}
    for name in _global_names(fn.__code__):
        if name in fn.__globals__ and name not in builtins:
            h.update(f"global:{name}\x00".encode())
            _feed(h, fn.__globals__[name], depth, seen)


def _global_names(code: types.CodeType) -> list[str]:
    """Names a function (and the functions defined inside it) may read as globals."""
    names = list(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names.extend(_global_names(const))
    return sorted(set(names))


def _feed_object(h: Any, obj: Any, depth: int, seen: set[int]) -> None:
    """An instance: its class (and that class's code) plus its attributes, all as data."""
    cls = type(obj)
    attributes = getattr(obj, "__dict__", None)
    if attributes is None:
        raise _Unidentifiable
    h.update(f"object:{cls.__module__}.{cls.__qualname__}\x00".encode())
    if not cls.__module__.startswith("pyterrier"):
        # A user-defined class: its methods decide the scores, so their code counts too.
        for name in sorted(vars(cls)):
            member = vars(cls)[name]
            if isinstance(member, types.FunctionType):
                h.update(f"method:{name}\x00".encode())
                _feed_code(h, member.__code__, depth, seen)
    _feed(h, dict(attributes), depth, seen)
