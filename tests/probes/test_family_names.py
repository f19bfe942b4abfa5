"""Nothing outside the probe families names a family: the engine, the report and the
exporters decide by what a family or probe declares (its layout, ``prefers``, ``finding``,
``record_fields``), so a user's family is treated the way a built-in one is.

The check reads every module of the package outside ``abnirml/probes/`` (where the families
are defined) and looks at each string literal that is not a docstring: one equal to a
built-in family key, or beginning with ``KEY:`` (a probe name) or ``KEY.`` (a family
option), is a decision by name unless it is listed in :data:`ALLOWED` with its reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

import abnirml
from abnirml.probes.built_in import BUILTIN_FAMILIES

PACKAGE = Path(abnirml.__file__).parent
KEYS = tuple(family.key for family in BUILTIN_FAMILIES)

#: (module path under the package, literal) → why it is not a decision by family name
ALLOWED: dict[tuple[str, str], str] = {
    ("cli.py", "dtp:NAME"): "the metavar of --name in the help text",
    ("cli.py", "mmp.tolerance"): "--mmp-tolerance is a shortcut that sets this family option",
    ("cli.py", "dtp.data"): "--transfer-data is a shortcut that sets this family option",
    ("rankers/families/doc2query.py", "tmp.doct5query_source: expected a doc2query model name, "
                             "directory or spec, got "):
        "an error message naming the option the user gave",
}


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the constant nodes that are docstrings (module, class, function)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _names_a_family(text: str) -> bool:
    return text in KEYS or text.startswith(tuple(f"{k}{sep}" for k in KEYS for sep in ":."))


def family_literals() -> list[tuple[str, int, str]]:
    """(module, line, literal) for every family-naming literal outside abnirml/probes/."""
    found: list[tuple[str, int, str]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module.startswith("probes/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and id(node) not in skip and _names_a_family(node.value)):
                found.append((module, node.lineno, node.value))
    return found


def test_nothing_outside_the_probe_families_names_a_family():
    offending = [f"{module}:{line}: {text!r}" for module, line, text in family_literals()
                 if (module, text) not in ALLOWED]
    assert not offending, ("decided by family name; let the Family or Probe declare it "
                           "instead:\n" + "\n".join(offending))


def test_every_allowance_is_still_needed():
    """An allowance whose literal is gone would hide the next one added in its place."""
    present = {(module, text) for module, _, text in family_literals()}
    assert set(ALLOWED) <= present, sorted(set(ALLOWED) - present)


def test_the_check_finds_a_decision_by_name():
    """The scan itself works: it sees comparisons, probe-name prefixes and f-string parts,
    and leaves docstrings alone."""
    source = ('"""A docstring may say axiom."""\n'
              'def f(r, a):\n'
              '    """tmp probes too."""\n'
              '    return r["family"] == "axiom" or a.startswith("tmp:") or f"qvp:{a}"\n')
    tree = ast.parse(source)
    skip = _docstrings(tree)
    seen = sorted(node.value for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and id(node) not in skip and _names_a_family(node.value))
    assert seen == ["axiom", "qvp:", "tmp:"]
