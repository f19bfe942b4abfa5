"""The package's layers stay acyclic: no import cycle (lazy imports inside functions count
too) and no import from a lower layer up into a higher one."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "src" / "abnirml"
#: bottom to top; a module may import its own layer and those below
LAYERS = ("samples", "errors", "files", "text", "data", "rankers", "probes", "evaluation", "report")


def _graph() -> dict[str, set[str]]:
    modules = {}
    for path in ROOT.rglob("*.py"):
        parts = ("abnirml", *path.relative_to(ROOT).with_suffix("").parts)
        modules[".".join(parts).removesuffix(".__init__")] = path
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                subs = [f"{node.module}.{a.name}" for a in node.names]
                targets = [t for t in subs if t in modules] or [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def _layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None


def test_no_import_cycles():
    assert _cycles(_graph()) == []


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_runs_up_the_layers():
    upward = [f"{m} -> {t}" for m, targets in _graph().items() for t in targets
              if _layer(m) is not None and _layer(t) is not None and _layer(t) > _layer(m)]
    assert upward == []


def test_collection_stats_sit_below_probes_and_rankers():
    """Probes (axioms, query variation) and rankers both need df/cf; neither layer should
    have to import the other to get them."""
    graph = _graph()
    assert "abnirml.data.stats" in graph
    users = {m for m, targets in graph.items() if "abnirml.data.stats" in targets}
    assert any(m.startswith("abnirml.probes.") for m in users)
    assert any(m.startswith("abnirml.rankers.") for m in users)
    probe_to_ranker = [f"{m} -> {t}" for m, targets in graph.items() for t in targets
                       if m.startswith("abnirml.probes.") and t.startswith("abnirml.rankers.")]
    assert not [edge for edge in probe_to_ranker if "stats" in edge]
