"""The package is type-checked strictly: ``make lint`` runs mypy with the settings in
pyproject.toml, and those settings must stay ``strict`` with at most a few named, narrow
relaxations for abnirml's own modules (the package ships ``py.typed``, so whatever mypy lets
through here reaches users' checkers)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"

#: settings that switch checking off wholesale: never allowed for abnirml's own modules
_WHOLESALE = {"strict", "ignore_errors", "follow_imports", "disallow_untyped_defs",
              "disallow_incomplete_defs", "check_untyped_defs"}


def _mypy_settings() -> dict[str, Any]:
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["mypy"]


def _own_relaxations(settings: dict[str, Any]) -> dict[str, set[str]]:
    """abnirml module → the settings its overrides change."""
    relaxed: dict[str, set[str]] = {}
    for override in settings.get("overrides", []):
        modules = override["module"]
        for module in [modules] if isinstance(modules, str) else modules:
            if module == "abnirml" or module.startswith("abnirml."):
                relaxed.setdefault(module, set()).update(set(override) - {"module"})
    return relaxed


def test_mypy_runs_strict_on_the_package():
    settings = _mypy_settings()
    assert settings.get("strict") is True, "pyproject's [tool.mypy] must set strict = true"
    assert settings["files"] == ["src/abnirml"]


def test_own_modules_have_few_and_narrow_relaxations():
    relaxed = _own_relaxations(_mypy_settings())
    assert len(relaxed) < 10, f"{len(relaxed)} abnirml modules relax strict checking: {relaxed}"
    for module, keys in relaxed.items():
        assert not keys & _WHOLESALE, f"{module} switches checking off wholesale: {keys}"


def test_relaxation_finder_sees_an_override():
    found = _own_relaxations({"overrides": [
        {"module": ["abnirml.a", "numpy"], "warn_return_any": False},
        {"module": "abnirml.b", "ignore_errors": True}]})
    assert found == {"abnirml.a": {"warn_return_any"}, "abnirml.b": {"ignore_errors"}}
