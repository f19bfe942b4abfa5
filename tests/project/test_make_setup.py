"""The Makefile's install steps agree with pyproject.toml.

The Makefile installs torch's CPU build ahead of the extras (PyPI's Linux wheels are CUDA
builds); if its version drifted from pyproject's pin, pip would replace that build with
whatever PyPI offers for the pin, which is what the step exists to avoid.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _torch_pins() -> set[str]:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    return {m.group(1) for deps in extras.values() for dep in deps
            if (m := re.fullmatch(r"torch==([\w.]+)", dep))}


def test_makefile_torch_version_is_pyprojects_only_torch_pin():
    pins = _torch_pins()
    assert len(pins) == 1, f"extras pin torch differently: {sorted(pins)}"
    found = re.search(r"^TORCH_VERSION := (\S+)$", (ROOT / "Makefile").read_text(), re.M)
    assert found, "the Makefile no longer sets TORCH_VERSION"
    assert found.group(1) == pins.pop()


def test_both_installs_go_through_the_torch_step():
    makefile = (ROOT / "Makefile").read_text()
    for stamp in (".installed", ".demo-installed"):
        rule = re.search(rf"^\$\(VENV\)/{re.escape(stamp)}: (.*)$", makefile, re.M)
        assert rule and "$(VENV)/.torch" in rule.group(1).split(), stamp
