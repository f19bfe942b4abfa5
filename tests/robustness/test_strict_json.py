"""Every JSON file abnirml writes is strict JSON: Python's ``json`` writes NaN and Infinity
as bare words no other reader accepts, so each ``json.dump``/``json.dumps`` in the source
says ``allow_nan=False`` — but for the few whose text never reaches a file, listed here
with the reason."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[2] / "src" / "abnirml"

NOT_WRITTEN = {
    "data/trec.py": "re-encodes a value read from a user's file, to find lone surrogates",
    "result_fields.py": "quotes a bad value in an error message",
    "run_record.py": "quotes a bad value in an error message",
    "frames.py": "a cell of an in-memory data frame",
    "pytest_plugin.py": "a cache key and an in-memory copy",
    "rankers/families/learned/train.py": "a cache key",
}


def _json_writes() -> list[tuple[str, int, bool]]:
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in ("dump", "dumps") and \
                    isinstance(node.func.value, ast.Name) and node.func.value.id == "json":
                strict = any(k.arg == "allow_nan" and isinstance(k.value, ast.Constant)
                             and k.value.value is False for k in node.keywords)
                found.append((path.relative_to(SOURCE).as_posix(), node.lineno, strict))
    return found


def test_every_json_text_the_tool_writes_is_strict():
    writes = _json_writes()
    assert len(writes) > 10
    loose = [f"{path}:{line}" for path, line, strict in writes
             if not strict and path not in NOT_WRITTEN]
    assert loose == []
    assert {path for path, _, strict in writes if not strict} == set(NOT_WRITTEN), \
        "an exemption no longer needed stays listed"


def test_the_shared_writers_refuse_nan(tmp_path):
    from abnirml.files.derived_values import store_json_quietly
    from abnirml.report.run_outputs import json_text, jsonl_text

    for write in (json_text, lambda v: jsonl_text([v])):
        with pytest.raises(ValueError):
            write({"x": float("nan")})
    assert json.loads(json_text({"x": 1.5})) == {"x": 1.5}
    store_json_quietly(tmp_path / "kept.json", {"x": 1.5})
    store_json_quietly(tmp_path / "nan.json", {"x": float("inf")})    # computed again
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.json"]
