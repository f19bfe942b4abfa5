"""benchmarks/gpu.py's bare-machine setup: the GPU-image import guard that ``--smoke`` uses,
and the command ``--prepare`` prints for the GPU machine."""

from __future__ import annotations

import sys

import pytest
from benchmarks import _gpu_image
from benchmarks.gpu import gpu_command


@pytest.fixture
def guarded(monkeypatch):
    finder = _gpu_image._ImageOnly()
    monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
    return finder


def _import_from(package: str, module: str) -> None:
    """``import module`` executed as code of ``package`` (the guard looks at the importer)."""
    sys.modules.pop(module, None)
    exec(f"import {module}", {"__name__": f"{package}.somewhere"})


def test_abnirml_code_may_not_import_what_the_gpu_image_lacks(guarded, monkeypatch):
    pytest.importorskip("lightgbm")       # installed here, absent on the GPU image
    monkeypatch.delitem(sys.modules, "lightgbm", raising=False)
    with pytest.raises(ImportError, match=r"lightgbm \(lightgbm\) is not on the GPU machines"):
        _import_from("abnirml", "lightgbm")


def test_carried_wheels_image_packages_and_other_importers_pass(guarded, monkeypatch):
    pytest.importorskip("Stemmer")
    for module in ("Stemmer", "tqdm"):               # carried wheel; on the image
        monkeypatch.delitem(sys.modules, module, raising=False)
        _import_from("abnirml", module)
    pytest.importorskip("lightgbm")
    monkeypatch.delitem(sys.modules, "lightgbm", raising=False)
    _import_from("sklearn", "lightgbm")             # an image package's own dependency


def test_the_gpu_command_installs_the_carried_wheels_then_runs_on_the_carried_folder():
    command = gpu_command(".gpu")
    assert command.startswith("python3 -m pip install -q --no-index --no-deps")
    assert ".gpu/whl/*.whl && PYTHONPATH=/tmp/site" in command
    assert command.endswith("python3 benchmarks/gpu.py --carried .gpu")
