"""What a user sees of the package: ``dir(abnirml)`` lists the notebook API without importing
it, and ``abnirml.plugin`` holds everything a plugin author registers with."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import abnirml

ROOT = Path(__file__).resolve().parents[1]


def test_dir_lists_the_lazy_public_api():
    names = dir(abnirml)
    assert set(abnirml.__all__) <= set(names)
    for name in ("run", "RunConfig", "load_results", "load_samples", "load_scores",
                 "wrap_pyterrier", "expect", "__version__", "__name__", "__doc__"):
        assert name in names
    # helpers of the module itself are not API
    assert "Any" not in names and "annotations" not in names and "_LAZY" not in names
    assert names == sorted(names)


def test_dir_imports_nothing():
    """Listing the API must not load what it lists (tab completion in a notebook)."""
    code = ("import sys, abnirml\n"
            "names = dir(abnirml)\n"
            "assert 'run' in names, names\n"
            "print(sorted(m for m in ('abnirml.pipeline', 'abnirml.frames', 'abnirml.expect') "
            "if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"


def test_the_plugin_facade_has_what_a_plugin_author_registers_with():
    import abnirml.plugin as facade

    needed = {"Family", "setting", "Sample", "Skip", "register_family", "register_probe",
              "register_ranker", "axiom_probe", "RankerSpec", "RankerFamily",
              "scoped_registrations"}
    assert needed <= set(facade.__all__)
    for name in facade.__all__:
        assert getattr(facade, name) is not None
