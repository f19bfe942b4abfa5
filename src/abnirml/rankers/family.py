"""One record per ranker family: its spec, its typed parameters, what it needs, what it is.

A :class:`RankerFamily` is to rankers what :class:`~abnirml.probes.family.Family` is to
probes. Its ``params`` is a frozen dataclass of :func:`~abnirml.settings.setting`
fields (type, range, choices, default, help), so every ``+key=value`` is checked once, here,
before a model is loaded, and ``abnirml rankers`` and the reference page list exactly what a
family takes. A family is one record: the registry, the background importer, the
availability listing and the docs all read it. This module imports nothing heavy, so records
of every family can be listed without importing their models.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from abnirml.errors import ConfigError, did_you_mean
from abnirml.rankers.base import Ranker, RankerSpec, checked_number
from abnirml.settings import NoSettings

#: The parameters of a ranker family that takes none (the settings layer's empty record,
#: under the name ranker code uses; an assignment so importers may take it from here)
NoParams = NoSettings

#: ``factory(spec, params, env) -> Ranker``: the parsed spec (its ``argument`` and
#: ``canonical`` name), the family's ``params`` dataclass already checked, and the registry's
#: ``RankerEnv``
Factory = Callable[[RankerSpec, Any, Any], Ranker]

#: ``factory(spec, env) -> Ranker``, the older form: such a factory reads its parameters
#: again itself; the registry still calls it (see :func:`factory_arity`)
LegacyFactory = Callable[[RankerSpec, Any], Ranker]


@dataclass(frozen=True)
class ParamInfo:
    """One parameter as listings show it."""

    name: str
    kind: str
    default: str
    allowed: str
    help: str


@dataclass(frozen=True, kw_only=True)
class RankerFamily:
    """Everything known about one ranker family before any of it is imported.

    Built with keywords, like :class:`~abnirml.probes.family.Family`. ``factory`` is
    ``"module:function"`` (imported only when a ranker is built) or a callable
    ``(spec, params, env) -> Ranker``: ``params`` is an instance of ``params``, checked once
    by the registry, so the factory never parses a value itself. ``argument`` names what
    goes after ``:`` (``NAME|DIR``; empty: the family takes none) and
    ``argument_required`` whether it must be given.
    ``open_params`` lets keys outside ``params`` through to the factory (adapters that pass
    them on). ``modules``/``extra`` say what must be installed and which extra installs it;
    ``eager_imports`` start in the background when the spec is named (the model loads when
    the ranker is built), ``scoring_imports`` when it is about to score (lazy loading).
    ``needs_network``: it always talks to another machine; ``offline`` says how it runs
    without a network. ``wraps``: the ``:`` argument is another ranker's spec (``maxp:``,
    ``listwise-of:``), so what that ranker imports, this one imports too.
    """

    key: str
    factory: str | Factory | LegacyFactory
    description: str
    params: type = NoParams
    argument: str = ""
    argument_required: bool = False
    open_params: bool = False
    modules: tuple[str, ...] = ()
    extra: str | None = None
    eager_imports: tuple[str, ...] = ()
    scoring_imports: tuple[str, ...] = ()
    needs_network: bool = False
    offline: str = "runs offline"
    wraps: bool = False

    def __post_init__(self) -> None:
        if not dataclasses.is_dataclass(self.params):
            raise ConfigError(f"ranker family {self.key!r}: params must be a dataclass of "
                              f"setting() fields, got {self.params!r}")

    def load_factory(self) -> Factory | LegacyFactory:
        """The factory itself, imported if it was given as ``"module:function"``."""
        if not isinstance(self.factory, str):
            return self.factory
        module_name, _, attr = self.factory.partition(":")
        factory: Factory | LegacyFactory = getattr(importlib.import_module(module_name), attr)
        return factory

    def param_names(self) -> list[str]:
        return [f.name for f in self._fields()]

    def _fields(self) -> list[dataclasses.Field[Any]]:
        """The parameters, the family's own first: fields a shared base class declares
        (revision, dtype, …) follow the ones that say what this family is."""
        own = inspect.get_annotations(self.params)
        return sorted(dataclasses.fields(self.params), key=lambda f: f.name not in own)

    def check(self, spec: RankerSpec) -> Any:
        """Refuse an unknown ``+key`` (closest names offered) or a value outside its type or
        range, before the factory runs; the checked values (:meth:`values`) otherwise."""
        if not self.argument and spec.argument:
            spec.check_no_argument()
        if not self.open_params:
            allowed = self.param_names()
            unknown = [k for k, _ in spec.params if k not in allowed]
            if unknown:
                raise ConfigError(f"ranker {spec.canonical}: unknown parameter {unknown[0]!r}"
                                  f"{did_you_mean(unknown[0], allowed)} "
                                  f"(allowed: {', '.join(sorted(allowed)) or 'none'})")
        return self.values(spec)

    def values(self, spec: RankerSpec) -> Any:
        """The declared parameters of ``spec`` as the ``params`` dataclass, typed and checked
        (defaults where not given)."""
        fields = {f.name: f for f in dataclasses.fields(self.params)}
        hints = typing.get_type_hints(self.params)
        given = {k: _converted(v, hints[k], fields[k], spec.canonical, k)
                 for k, v in spec.params if k in fields}
        return self.params(**given)

    def spec_form(self) -> str:
        """``cross-encoder:NAME|DIR[+output=logit|prob]…``: the spec's shape."""
        head = self.key
        if self.argument:
            head += f":{self.argument}" if self.argument_required else f"[:{self.argument}]"
        tail = "".join(f"[+{p.name}={_placeholder(p)}]" for p in self.parameters())
        return head + tail + ("[+key=value…]" if self.open_params else "")

    def parameters(self) -> list[ParamInfo]:
        """Each declared parameter: name, type, default, allowed values, help."""
        hints = typing.get_type_hints(self.params)
        out = []
        for f in self._fields():
            meta = f.metadata
            out.append(ParamInfo(f.name, _type_name(hints[f.name]), _shown(f.default),
                                 _allowed(meta), meta.get("help", "")))
        return out

    def fingerprint(self, params: Any, version: str = "1") -> str:
        """A fingerprint derived from the declared parameters: see :func:`params_fingerprint`
        (``version`` names the scoring code; raise it when that changes)."""
        return params_fingerprint(f"{self.key}-v{version}", params)

    def missing_modules(self) -> list[str]:
        """The modules this family imports that are not installed here."""
        return [m for m in self.modules if _absent(m)]


@dataclass(frozen=True)
class BuiltRanker:
    """A built ranker and what it was built from: the parsed spec and its family's record.

    The registry makes one for every spec it builds, and a workspace keeps them, so whoever
    needs the spec behind a display name (run.json's ``spec``, seeds that must not depend on
    a label) or the family (the libraries to import before scoring) asks this record rather
    than reading the ranker's name back. ``spec`` and ``family`` are None for a ranker
    object or a PyTerrier transformer given directly.
    """

    #: a pointwise Ranker, or a pairwise or listwise one (``preferences``/``rank_windows``)
    ranker: Any
    spec: RankerSpec | None = None
    family: RankerFamily | None = None

    @property
    def name(self) -> str:
        """The name results report: the display name where one was given."""
        return str(self.ranker.name)

    @property
    def identity(self) -> str:
        """What the ranker's name stands for: the canonical spec of a ranker given a display
        name, else its name. Seeds key on it, so a display name changes no result."""
        if self.spec is not None and self.spec.display:
            return self.spec.canonical
        return self.name


def params_fingerprint(name: str, params: Any) -> str:
    """``name(k1=v1,k2=v2)``: every parameter that can change a score, in declared order,
    each value as Python writes it (``1.0``, ``'fold'``, ``None``). Fields declared with
    ``setting(..., scoring=False)`` are left out, so a batch size or a timeout never
    invalidates cached scores, while any other parameter a family adds is in its cache key
    without anyone remembering to put it there."""
    if not dataclasses.is_dataclass(params) or isinstance(params, type):
        raise ConfigError(f"params_fingerprint: expected parameter values (a dataclass "
                          f"instance), got {params!r}")
    shown = ",".join(f"{f.name}={getattr(params, f.name)!r}"
                     for f in dataclasses.fields(params) if f.metadata.get("scoring", True))
    return f"{name}({shown})"


def _placeholder(param: ParamInfo) -> str:
    """What a spec form shows after ``+name=``: the choices, else the default, else a
    placeholder of the parameter's type."""
    if "|" in param.allowed:
        return param.allowed
    if param.default != "—":
        return param.default
    return {"int": "N", "float": "X"}.get(param.kind, "…")


def _absent(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):
        return True


def _converted(raw: str, hint: Any, field: dataclasses.Field[Any], ranker: str,
               key: str) -> Any:
    """``raw`` as the field's type, in the ranker parameters' one wording
    (``ranker NAME: key=VALUE must be ≥ 1``)."""
    from abnirml.strict_numbers import strict_float, strict_int

    meta = field.metadata
    base = _base_type(hint)
    if base is int or base is float:
        low = meta.get("minimum")
        above = meta.get("above")
        default: Any = field.default          # every setting() field has one
        value = checked_number(raw, default, strict_int if base is int else strict_float,
                               ranker, key, low=above if above is not None else low,
                               high=meta.get("maximum"), low_open=above is not None)
    elif base is bool:
        from abnirml.switches import switch_value

        value = switch_value(raw)
        if value is None:
            raise ConfigError(f"ranker {ranker}: {key} must be yes or no, got {raw!r}")
    else:
        value = raw
    choices = meta.get("choices") or ()
    if choices and value not in choices:
        raise ConfigError(f"ranker {ranker}: {key} must be {_or_list(choices)}, got {raw!r}"
                          f"{did_you_mean(str(raw), list(choices))}")
    check = meta.get("check")
    return check(value, f"ranker {ranker}: {key}") if check is not None else value


def _base_type(hint: Any) -> Any:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if typing.get_args(hint) and len(args) == 1 else hint


def _type_name(hint: Any) -> str:
    base = _base_type(hint)
    return getattr(base, "__name__", str(base))


def _shown(default: Any) -> str:
    if default is None or default == "":
        return "—"
    if isinstance(default, bool):
        return "yes" if default else "no"
    if isinstance(default, float) and default.is_integer():
        return f"{default:g}"
    return str(default)


def _allowed(meta: Any) -> str:
    if meta.get("choices"):
        return "|".join(meta["choices"])
    low, high, above = meta.get("minimum"), meta.get("maximum"), meta.get("above")
    parts = []
    if above is not None:
        parts.append(f"> {above:g}")
    elif low is not None:
        parts.append(f"≥ {low:g}")
    if high is not None:
        parts.append(f"≤ {high:g}")
    return ", ".join(parts)


def _or_list(choices: tuple[str, ...]) -> str:
    return " or ".join(choices) if len(choices) <= 2 else f"one of {', '.join(choices)}"
