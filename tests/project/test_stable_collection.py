"""Every test id is the same in every process that collects it.

The CI runs the suite with pytest-xdist, which refuses to start when two workers collected
different tests. A parameter computed from the clock, a random draw or an unordered set's
iteration order gives each worker its own ids, so the whole suite stops before a test runs.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

# Calls whose value differs between two processes started a second apart.
UNSTABLE_CALLS = frozenset({
    "time", "time_ns", "monotonic", "perf_counter", "now", "utcnow", "today",
    "formatdate", "uuid4", "uuid1", "random", "randint", "choice", "shuffle", "sample",
    "getpid", "urandom", "token_hex",
})


def _called_name(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _parametrize_calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called_name(node) == "parametrize":
            yield node


def _unstable_parts(call: ast.Call) -> list[str]:
    found = []
    for argument in [*call.args, *(keyword.value for keyword in call.keywords)]:
        for node in ast.walk(argument):
            if isinstance(node, ast.Call) and _called_name(node) in UNSTABLE_CALLS:
                found.append(_called_name(node))
            if isinstance(node, (ast.Set, ast.SetComp)):
                found.append("a set literal")
    return found


def test_no_parametrize_draws_its_values_from_the_clock_or_chance():
    problems = []
    for path in sorted(TESTS.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for call in _parametrize_calls(tree):
            parts = _unstable_parts(call)
            if parts:
                problems.append(f"{path.relative_to(TESTS.parent)}:{call.lineno}: "
                                f"{', '.join(sorted(set(parts)))}")
    assert not problems, "parameters that differ between processes:\n" + "\n".join(problems)


def test_the_check_finds_a_clock_value_in_parameters():
    tree = ast.parse('@pytest.mark.parametrize("x", [email.utils.formatdate(time.time())])\n'
                     'def test_x(x): pass\n')
    (call,) = _parametrize_calls(tree)
    assert set(_unstable_parts(call)) == {"formatdate", "time"}
