"""Loading a user's own probe families, probes, axioms and ranker families into the command.

Registering from Python (``register_family``, ``register``, ``rankers.registry.register``)
only helps code that runs in the same process, and the ``abnirml`` command runs none of the
user's code. A plugin is a Python file or an importable module whose import registers what
it defines; the command imports it before it does anything else, from three places:

* ``--plugin FILE.py`` or ``--plugin package.module`` on any subcommand (repeatable);
* ``ABNIRML_PLUGINS``: the same, separated by the path separator (``:`` or ``;``);
* installed packages' entry points in the group ``abnirml.plugins`` (one ``name =
  "package.module"`` line in the package's ``pyproject.toml``), so ``pip install`` of a
  plugin package is all its users do.

A plugin that cannot be loaded is the user's own code failing, so it is reported as one
line naming the file and line (a syntax error, an import it lacks, an exception raised
while it registers) and the command stops with exit 2, never a traceback. Each plugin is
loaded as the owner of what it registers (:mod:`abnirml.registry`): two plugins that
register the same family key, probe name or ranker family are refused by name, since the
second would otherwise silently replace the first, and a plugin that fails leaves nothing
it registered behind.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
import traceback
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType

from abnirml.errors import AbnirmlError, ConfigError
from abnirml.registry import Registry, registering_as, scoped_registrations

#: The entry-point group installed plugin packages declare.
ENTRY_POINT_GROUP = "abnirml.plugins"
#: The environment variable listing plugins (files or modules, os.pathsep-separated).
ENVIRONMENT = "ABNIRML_PLUGINS"


#: The plugins loaded in this process, by resolved path or module name; a registry like the
#: others, so undoing registrations also forgets which plugins made them.
_LOADED: Registry[ModuleType] = Registry("plugin")
#: how the module of a plugin loaded from a file path is named (the rest comes from the path)
_FILE_MODULE_PREFIX = "abnirml_plugin_"


def file_plugin_modules() -> list[ModuleType]:
    """The modules of plugins loaded from a file path, in load order.

    Their names are made up from the path, so they exist only in this process: another
    process that unpickles one of their classes (a Ray worker given a plugin's ranker)
    cannot import them, and must be sent the module's code by value instead.
    """
    return [m for m in _LOADED.values() if m.__name__.startswith(_FILE_MODULE_PREFIX)]


def plugin_sources(flags: Sequence[str] | None = None,
                   environment: str | None = None) -> list[str]:
    """The plugins to load, in order: ``ABNIRML_PLUGINS`` first, then each ``--plugin``."""
    text = os.environ.get(ENVIRONMENT, "") if environment is None else environment
    sources = [part.strip() for part in text.split(os.pathsep) if part.strip()]
    return sources + [s for s in (flags or []) if s.strip()]


def load_plugins(sources: Iterable[str] = (), entry_points: bool = True) -> list[str]:
    """Import every plugin (entry points first, then ``sources``); the names loaded.

    A source already loaded in this process is not imported again.
    """
    loaded: list[str] = []
    if entry_points:
        for name, target in _entry_point_targets():
            loaded.append(_load(f"entry point {name!r} ({target})", target, module=target))
    for source in sources:
        loaded.append(_load(source, source, module=None if _is_file(source) else source))
    return loaded


def _entry_point_targets() -> list[tuple[str, str]]:
    from importlib.metadata import entry_points

    return sorted((ep.name, ep.value) for ep in entry_points(group=ENTRY_POINT_GROUP))


def _is_file(source: str) -> bool:
    return source.endswith(".py") or os.sep in source or "/" in source


def _load(label: str, source: str, module: str | None) -> str:
    key = module or str(Path(source).resolve())
    if key in _LOADED:
        return label
    with scoped_registrations() as scope, registering_as(label):
        loaded = _import_reporting(label, source, module)
        _LOADED.add(key, loaded)
        if {"probe", "probe family"} & scope.changed():
            _check_catalogue(label)
        scope.keep()           # only a plugin that loaded whole keeps what it registered
    return label


def _import_reporting(label: str, source: str, module: str | None) -> ModuleType:
    """Import the plugin; its failure as one line naming the plugin's file and line."""
    try:
        return _import_module(module) if module else _import_file(source)
    except AbnirmlError as exc:          # a registration the package refused: name the file
        raise ConfigError(f"{_where(label, exc)}: {exc}") from None
    except SyntaxError as exc:
        where = f"{exc.filename or source}:{exc.lineno}" if exc.lineno else source
        raise ConfigError(f"{where}: plugin has a syntax error: {exc.msg}") from None
    except ImportError as exc:
        missing = f" (install {exc.name})" if exc.name else ""
        raise ConfigError(f"{_where(label, exc)}: plugin could not import what it needs"
                          f"{missing}: {exc}") from None
    except Exception as exc:  # the user's own code: any error is theirs
        raise ConfigError(f"{_where(label, exc)}: plugin failed while loading: "
                          f"{type(exc).__name__}: {exc}") from None
    except SystemExit as exc:   # would end abnirml with the plugin's code and no message
        raise ConfigError(f"{_where(label, exc)}: plugin called sys.exit({exc.code!r}) while "
                          "loading; a plugin registers rankers and probes, it must not end "
                          "the process") from None


def _check_catalogue(label: str) -> None:
    """List every probe once, so a probe name this plugin's family shares with another
    family is reported against this plugin rather than later, without a file."""
    from abnirml.probes import probe_registry as registry

    try:
        registry.all_probes()
    except AbnirmlError as exc:
        raise ConfigError(f"{label}: {exc}") from None


def _import_module(name: str) -> ModuleType:
    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError):       # a parent package that does not exist
        found = None
    if found is None:
        raise ConfigError("no such module (give a .py file's path, or install the package "
                          "that provides it)")
    return importlib.import_module(name)


def _import_file(source: str) -> ModuleType:
    path = Path(source)
    if not path.is_file():
        what = "is a folder" if path.is_dir() else "not found"
        raise ConfigError(f"plugin {what} (give a Python file or a module name)")
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:10]
    name = f"{_FILE_MODULE_PREFIX}{''.join(c if c.isalnum() else '_' for c in path.stem)}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError("plugin is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module     # dataclasses and pickling look classes up by module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _where(label: str, exc: BaseException) -> str:
    """``file:line`` of the deepest traceback frame in the plugin's own file (else the
    plugin's label), so the message points at the user's line, not at abnirml's."""
    path = Path(label).resolve() if _is_file(label) else None
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if path is not None and Path(frame.filename).resolve() == path:
            line = frame.lineno
    return f"{label}:{line}" if line else label
