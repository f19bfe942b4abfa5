"""A ranker keeps its identity: the spec is read by one parser, the registry's record
(``BuiltRanker``) keeps spec and family beside the ranker, device settings come from the
checked parameters, and ``--device`` is resolved once per run."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from abnirml.errors import ConfigError
from abnirml.rankers.registry import RankerEnv
from abnirml.rankers.support.device_batching import DeviceSettings

SRC = Path(__file__).resolve().parents[2] / "src" / "abnirml"
PARSER = SRC / "rankers" / "base.py"                  # RankerSpec and its display-name split
SPEC_SEPARATORS = set("+:@")


def _modules() -> list[tuple[Path, ast.AST]]:
    return [(path, ast.parse(path.read_text(encoding="utf-8")))
            for path in sorted(SRC.rglob("*.py"))]


def _regex_splits_on_spec_separators(node: ast.Call) -> bool:
    """``re.split(r"[+:@]", …)`` and the like: a character class holding two or more of a
    spec's separators is a second spec parser."""
    func = node.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
            and func.value.id == "re" and node.args):
        return False
    pattern = node.args[0]
    if not (isinstance(pattern, ast.Constant) and isinstance(pattern.value, str)):
        return False
    return any(len(SPEC_SEPARATORS & set(group)) >= 2
               for group in re.findall(r"\[([^\]]*)\]", pattern.value))


def test_no_module_reads_spec_text_outside_the_spec_parser():
    found = []
    for path, tree in _modules():
        if path == PARSER:
            continue
        where = path.relative_to(SRC)
        for node in ast.walk(tree):
            if isinstance(node, ast.Name | ast.Attribute):
                name = node.id if isinstance(node, ast.Name) else node.attr
                if name == "split_display_name":        # half of the parser, used alone
                    found.append(f"{where}:{node.lineno}: split_display_name")
            if isinstance(node, ast.Constant) and node.value == "canonical_spec":
                found.append(f"{where}:{node.lineno}: 'canonical_spec'")
            if isinstance(node, ast.Attribute) and node.attr == "canonical_spec":
                found.append(f"{where}:{node.lineno}: .canonical_spec")
            if isinstance(node, ast.Call):
                func = node.func
                # spec.param("dtype"): a parameter read back as raw text, past its record
                if isinstance(func, ast.Attribute) and func.attr == "param" and node.args \
                        and isinstance(node.args[0], ast.Constant):
                    found.append(f"{where}:{node.lineno}: .param({node.args[0].value!r})")
                if _regex_splits_on_spec_separators(node):
                    found.append(f"{where}:{node.lineno}: a regex on spec separators")
    assert not found, "spec text read outside RankerSpec:\n" + "\n".join(found)


def test_the_parser_scan_finds_what_it_looks_for():
    """The scan above is not blind: each kind of second parser it refuses is recognised."""
    tree = ast.parse('re.split(r"[+:@]", spec, maxsplit=1)\nre.split(r",\\s+", cell)')
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert [_regex_splits_on_spec_separators(c) for c in calls] == [True, False]


class _Slotted:
    """A plugin ranker whose class takes no attribute beyond those it declares."""

    __slots__ = ("fingerprint", "name")

    def __init__(self, name: str):
        self.name = name
        self.fingerprint = "slotted-v1"

    def score(self, pairs):
        return np.array([float(len(d.split())) for _, d in pairs])


def test_a_display_named_rankers_run_json_spec_comes_from_its_record():
    from abnirml.pipeline import RunConfig, SessionSettings, run
    from abnirml.plugin import RankerFamily, register_ranker
    from abnirml.registry import scoped_registrations

    with scoped_registrations():
        register_ranker(RankerFamily(key="slotted", factory=lambda spec, p, env: _Slotted(
            spec.canonical), description="document length"))
        output = run(RunConfig(rankers=["slotted@short", "bm25"], probes=["mmp:tf:length"],
                               effectiveness=False,
                               session=SessionSettings(cache=None, progress=False)))
    shown = {r["name"]: r for r in output.run_info["rankers"]}
    assert shown["short"]["spec"] == "slotted"
    assert "spec" not in shown["bm25"]                   # no display name: as always
    assert {r["ranker"] for r in output.result.records} == {"short", "bm25"}


def test_the_workspace_keeps_each_rankers_spec_and_family():
    from abnirml.evaluation.execution.workspace import SessionSettings, Workspace
    from abnirml.rankers.families.lexical import BM25

    workspace = Workspace("demo", SessionSettings(cache=None, progress=False))
    given = BM25(workspace.env.collection_stats(), name="mine")
    named, wrapped, obj = workspace.build_rankers(["bm25+k1=0.9@okapi",
                                                   "maxp:bm25+passage_length=80", given])
    record = workspace.built(named)
    assert (record.name, record.identity) == ("okapi", "bm25+k1=0.9")
    assert record.spec is not None and record.spec.display == "okapi"
    assert record.family is not None and record.family.key == "bm25"
    assert not hasattr(named, "canonical_spec")
    inner = workspace.built(wrapped)
    assert inner.family is not None and inner.family.key == "maxp"
    assert inner.identity == inner.name == "maxp:bm25+passage_length=80"
    bare = workspace.built(obj)
    assert (bare.spec, bare.family, bare.identity) == (None, None, "mine")
    with pytest.raises(ValueError, match="not built by this workspace"):
        workspace.built(BM25(workspace.env.collection_stats()))


def test_device_settings_come_from_the_checked_parameters():
    from abnirml.rankers.built_in import CrossEncoderParams, SpladeParams

    assert DeviceSettings.for_params(CrossEncoderParams(), "cpu", "r") == DeviceSettings(
        "cpu", "fp32", 8_192, None)
    given = CrossEncoderParams(dtype="half", max_tokens=500, batch_size=3)
    assert DeviceSettings.for_params(given, "cpu", "r", default_batch=7) == DeviceSettings(
        "cpu", "fp16", 500, 3)
    # --batch-size caps the rows where +batch_size does not
    assert DeviceSettings.for_params(CrossEncoderParams(), "cpu", "r",
                                     default_batch=7).max_batch == 7
    # off CPU, the family's budget (an explicit dtype needs no torch to choose one)
    on_gpu = DeviceSettings.for_params(SpladeParams(dtype="bf16"), "cuda", "r",
                                       accelerator_tokens=16_384)
    assert (on_gpu.dtype, on_gpu.max_tokens) == ("bf16", 16_384)
    with pytest.raises(ConfigError, match=r"^ranker r: dtype must be fp32, fp16 or bf16, "
                                          r"got 'fp8'$"):
        DeviceSettings.for_params(CrossEncoderParams(dtype="fp8"), "cpu", "r")


_DEVICE_RUN = """
import importlib, json, sys
sys.path[:0] = sys.argv[3:5]
for module in ("cross_encoder", "monot5"):    # imported first: their names patched too
    importlib.import_module(f"abnirml.rankers.families.{module}")
from abnirml.rankers.support import torch_support
calls = []
real = torch_support.resolve_device

def counting(*args, **kwargs):
    calls.append(repr(args))
    return real(*args, **kwargs)

for module in list(sys.modules.values()):
    if getattr(module, "__name__", "").startswith("abnirml") \\
            and getattr(module, "resolve_device", None) is real:
        module.resolve_device = counting
from abnirml.pipeline import RunConfig, SessionSettings, run
ce, t5 = sys.argv[1], sys.argv[2]
output = run(RunConfig(
    rankers=[f"cross-encoder:{ce}", f"cross-encoder:{ce}+dtype=fp32@ce32",
             f"monot5:{t5}+max_length=64"],
    probes=["mmp:tf:length"], effectiveness=False,
    session=SessionSettings(cache=None, progress=False, device="auto")))
print(json.dumps({"calls": calls,
                  "devices": sorted(d["device"] for d in
                                    output.run_info["device"]["rankers"].values())}))
"""


def test_the_device_is_resolved_once_for_every_torch_ranker_of_a_run(tmp_path):
    """In a process of its own: a run that loads models leaves this one as it was."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests._tiny_models import save_cross_encoder, save_t5

    ce, t5 = save_cross_encoder(tmp_path / "ce", num_labels=2), save_t5(tmp_path / "t5")
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", _DEVICE_RUN, str(ce), str(t5),
                           str(root / "src"), str(root)],
                          capture_output=True, text=True, timeout=900, check=False,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(found["calls"]) == 1, found["calls"]
    assert found["devices"] == ["cuda" if torch.cuda.is_available() else "cpu"] * 3


def test_device_for_resolves_once_and_keeps_the_lazy_rule(monkeypatch):
    from abnirml.rankers.support import torch_support
    calls: list[tuple[str, bool]] = []

    def fake(requested, ranker, lazy=False):
        calls.append((ranker, lazy))
        return "cuda" if requested == "auto" else requested

    monkeypatch.setattr(torch_support, "resolve_device", fake)
    env = RankerEnv(device="cuda")
    # a ranker loading its model when it scores: the named device is not checked yet
    assert env.device_for("a", lazy=True) == env.device_for("b", lazy=True) == "cuda"
    assert calls == [("a", True)]
    # a ranker loading its model now: checked once, and then for every ranker
    assert env.device_for("c") == env.device_for("d", lazy=True) == env.device_for("e")
    assert calls == [("a", True), ("c", False)]
    calls.clear()
    auto = RankerEnv(device="auto")        # auto needs torch whatever the ranker: once
    assert auto.device_for("a", lazy=True) == auto.device_for("b") == "cuda"
    assert calls == [("a", True)]


def test_device_errors_name_the_ranker_as_before():
    with pytest.raises(ConfigError, match=re.escape(
            "ranker x: unknown device 'tpu' (use cpu, cuda, cuda:N, mps or auto)")):
        RankerEnv(device="tpu").device_for("x", lazy=True)
    assert RankerEnv().device_for("x") == "cpu"


def test_a_checked_device_is_not_checked_again_when_the_model_loads(monkeypatch):
    """The run's check stands for every model it loads; a named accelerator left unchecked
    (``lazy``) is checked by the load, as before."""
    from abnirml.rankers.built_in import CrossEncoderParams
    from abnirml.rankers.support import device_batching, torch_support

    checks: list[str] = []
    monkeypatch.setattr(torch_support, "resolve_device",
                        lambda requested, ranker, lazy=False: requested)
    monkeypatch.setattr(device_batching, "resolve_device",
                        lambda device, ranker: checks.append(device))
    monkeypatch.setattr(device_batching, "torch_dtype", lambda name: name)

    class Model:
        def to(self, device, dtype):
            return self

        def eval(self):
            return self

    lazy = RankerEnv(device="cuda").device_settings(CrossEncoderParams(dtype="bf16"), "a",
                                                    lazy=True)
    assert not lazy.checked
    device_batching.cast_model(Model(), lazy, "a")
    assert checks == ["cuda"]
    eager = RankerEnv(device="cuda").device_settings(CrossEncoderParams(dtype="bf16"), "b")
    assert eager.checked and eager == lazy            # the same settings, checked once
    device_batching.cast_model(Model(), eager, "b")
    assert checks == ["cuda"]
