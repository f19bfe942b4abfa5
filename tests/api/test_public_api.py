"""What a user sees of the package: ``dir(abnirml)`` lists the notebook API without importing
it, and ``abnirml.plugin`` holds everything a plugin author registers with."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import abnirml

ROOT = Path(__file__).resolve().parents[2]


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
              "register_ranker", "axiom_probe", "RankerSpec", "RankerFamily", "Ranker", "Probe",
              "params_fingerprint", "scoped_registrations"}
    assert needed <= set(facade.__all__)
    for name in facade.__all__:
        assert getattr(facade, name) is not None


#: the modules a user or plugin author imports from; every other module is internal and may
#: be renamed between 0.x releases (docs/architecture.md, "Public API")
PUBLIC_MODULES = {"abnirml", "abnirml.plugin", "abnirml.expect", "abnirml.mechanism",
                  "abnirml.testing"}
_IMPORT = re.compile(r"^\s*(?:from\s+(abnirml[\w.]*)\s+import|import\s+(abnirml[\w.]*))", re.M)
_PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _user_pages() -> list[Path]:
    """The pages a user reads: README and the guide (the architecture page is for
    contributors and names internal modules on purpose)."""
    docs = ROOT / "docs"
    pages = [ROOT / "README.md", *sorted(docs.rglob("*.md"))]
    return [p for p in pages if p.name not in {"architecture.md", "changelog.md"}]


def test_user_pages_import_only_public_modules():
    found: dict[str, list[str]] = {}
    for page in _user_pages():
        for block in _PYTHON_BLOCK.findall(page.read_text(encoding="utf-8")):
            for match in _IMPORT.finditer(block):
                module = match.group(1) or match.group(2)
                found.setdefault(module, []).append(page.relative_to(ROOT).as_posix())
    assert found, "no Python examples found: the page scan is broken"
    internal = {module: pages for module, pages in found.items()
                if module not in PUBLIC_MODULES}
    assert internal == {}


def test_public_modules_list_their_api():
    import importlib

    for name in sorted(PUBLIC_MODULES - {"abnirml.expect"}):
        module = importlib.import_module(name)
        assert module.__all__, name
        assert set(module.__all__) <= set(dir(module)), name


def test_a_type_checker_sees_the_lazily_imported_api(tmp_path):
    """``import abnirml`` loads nothing heavy, yet a user's type checker sees what
    ``abnirml.RunConfig`` and the other lazy names really are: a wrong argument is caught."""
    import pytest

    pytest.importorskip("mypy", reason="mypy is not installed (the dev extra has it)")
    (tmp_path / "mypy.ini").write_text("[mypy]\n", encoding="utf-8")
    (tmp_path / "notebook.py").write_text(
        "import abnirml\nimport abnirml.mechanism\n\n"
        "abnirml.RunConfig(collection=3, nonsense=True)\n"
        "abnirml.mechanism.PatchConfig(ranker=1, probes=[])\n"
        "reveal_type(abnirml.load_results)\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "--follow-imports=silent",
         "--no-error-summary", "--cache-dir", str(tmp_path / "cache"), "notebook.py"],
        cwd=tmp_path, env={**os.environ, "MYPYPATH": str(ROOT / "src")}, capture_output=True,
        text=True, timeout=600)
    found = done.stdout
    assert 'Unexpected keyword argument "nonsense" for "RunConfig"' in found, found
    assert 'Argument "collection" to "RunConfig" has incompatible type "int"' in found
    assert 'Argument "ranker" to "PatchConfig" has incompatible type "int"' in found
    assert 'Revealed type is "def (path: ' in found
