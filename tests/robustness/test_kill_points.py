"""A command killed (SIGKILL) at any step of a folder swap or of a report rewrite never
leaves a folder abnirml refuses to own, nor one of its folders unmarked: the next command
completes the swap or rolls it back (docs/reliability.md, "A killed command").

Fault injection, not timing: :data:`abnirml.files.ownership.fault_point` is called at each
named step; a child process first lists the steps, then one child per step kills itself
there, and the test checks the folder and runs the next command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from abnirml.files import ownership

from .fs_snapshot import Guard

RUN = ("run", "--probe", "mmp:tf:length", "--ranker", "bm25", "--no-cache", "--quiet")

_CHILD = r"""
import os, shutil, signal, sys
from pathlib import Path
from abnirml.files import ownership

kill_at = int(sys.argv[1])
steps = []

def hook(step):
    steps.append(step)
    print("STEP", step, flush=True)
    if len(steps) - 1 == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)

ownership.fault_point = hook
if sys.argv[2] in ("swap", "nested"):    # a new folder swapped in for the old one
    target, source = Path(sys.argv[3]), Path(sys.argv[4])
    # nested: ``patch`` into a run folder, recording intent in the run's manifest
    intent = ownership.intent_in(target.parent.parent, target) if sys.argv[2] == "nested" \
        else None
    with ownership.replacing_folder(target, lambda: None, intent) as staging:
        for path in sorted(source.rglob("*")):
            rel = path.relative_to(source)
            if path.is_dir():
                (staging / rel).mkdir()
            elif path.name != ownership.MANIFEST:
                shutil.copyfile(path, staging / rel)
        (staging / "version.txt").write_text(str(os.getpid()))    # the new output differs
    if sys.argv[2] == "nested":
        ownership.record_written(target.parent.parent,
                                 [p for p in target.rglob("*") if p.is_file()])
else:
    from abnirml.cli import main
    sys.exit(main(sys.argv[3:]))
"""


def _child(tmp_path: Path, kill_at: int, *args: str | Path) -> list[str]:
    """Run the child; the steps it reached (the last is where it was killed)."""
    source = str(Path(ownership.__file__).parents[2])    # this abnirml, wherever it runs
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [source, *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(kill_at), *map(str, args)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    if kill_at < 0:
        assert done.returncode == 0, done.stderr
    else:
        assert done.returncode == -9, (done.returncode, done.stderr)
    return [line[5:] for line in done.stdout.splitlines() if line.startswith("STEP ")]


def _tool_folders(parent: Path) -> list[Path]:
    return sorted(p for p in parent.iterdir()
                  if p.name.startswith((ownership.STAGING_PREFIX, ownership.RETIRED_PREFIX)))


def _assert_recognisable(parent: Path, out: Path) -> None:
    """Right after the kill: every folder of the swap is still recognisably the tool's."""
    for folder in _tool_folders(parent):
        assert ownership._is_leftover(folder), f"{folder.name} is not recognisably abnirml's"
    if out.is_dir():
        assert ownership.first_foreign(out, ownership.read_ownership(out)) is None


def _assert_owned_and_clean(parent: Path, out: Path) -> None:
    """After the next command: --out is a folder the tool owns, nothing else is left."""
    assert _tool_folders(parent) == []
    assert out.is_dir() and not (out / ownership.STAGING_MARK).exists()
    manifest = ownership.read_ownership(out)
    assert manifest is not None and ownership.first_foreign(out, manifest) is None
    ownership.check_replaceable_folder(out, "--out")     # the next run may replace it


@pytest.fixture
def run_folder(tmp_path, capsys) -> Path:
    template = tmp_path / "template"
    assert Guard(tmp_path, capsys)(*RUN, "--out", template, may_change=[template]).code == 0
    return template


def _fresh(tmp_path: Path, template: Path, name: str) -> Path:
    import shutil

    parent = tmp_path / name
    parent.mkdir()
    shutil.copytree(template, parent / "out")
    return parent


@pytest.mark.slow
def test_a_swap_killed_at_any_step_is_completed_or_rolled_back(tmp_path, run_folder, capsys):
    parent = _fresh(tmp_path, run_folder, "listing")
    steps = _child(parent, -1, "swap", parent / "out", run_folder)
    assert {"staging made", "staging marked", "retired", "swapped", "unmarked",
            "emptied"} <= set(steps), steps
    old = ownership.read_manifest(run_folder)
    rolled = steps.index("retired")      # from here on the next command completes the swap
    for kill_at, step in enumerate(steps):
        parent = _fresh(tmp_path, run_folder, f"kill-{kill_at}")
        out = parent / "out"
        assert _child(parent, kill_at, "swap", out, run_folder)[-1] == step
        _assert_recognisable(parent, out)
        cli = Guard(tmp_path, capsys)
        outcome = cli("report", out, may_change=[parent])
        assert outcome.code == 0, (step, outcome.err)
        _assert_owned_and_clean(parent, out)
        new = ownership.read_manifest(out)        # the old output whole, or the new one
        assert new is not None and ("version.txt" in new) == (steps.index(step) >= rolled)
        assert {k: v for k, v in new.items() if not k.startswith(("report", "tables/"))} \
            .keys() - {"version.txt"} == {k for k in old if not k.startswith(("report", "tables/"))}
    outcome = Guard(tmp_path, capsys)(*RUN, "--out", parent / "out", may_change=[parent])
    assert outcome.code == 0, outcome.err


@pytest.mark.slow
def test_report_killed_at_any_step_leaves_a_folder_the_tool_owns(tmp_path, run_folder, capsys):
    parent = _fresh(tmp_path, run_folder, "listing")
    steps = _child(parent, -1, "cli", "report", parent / "out")
    assert steps[1] == "intent recorded" and steps[-1] == "recorded", steps
    assert "wrote report.md" in steps and "wrote .abnirml-tmp-report.md" in steps
    for kill_at, step in enumerate(steps):
        parent = _fresh(tmp_path, run_folder, f"kill-{kill_at}")
        out = parent / "out"
        assert _child(parent, kill_at, "cli", "report", out)[-1] == step
        _assert_recognisable(parent, out)
        ownership.check_replaceable_folder(out, "--out")          # run --out would take it
        outcome = Guard(tmp_path, capsys)("report", out, may_change=[out])
        assert outcome.code == 0, (step, outcome.err)
        _assert_owned_and_clean(parent, out)
        assert "pending" not in json.loads((out / ownership.MANIFEST).read_text())


@pytest.mark.slow
def test_patch_killed_at_any_step_inside_a_run_folder_leaves_it_the_tools(
        tmp_path, run_folder, capsys):
    """``patch`` swaps ``OUT/patching/RANKER`` inside a run folder and records it in the
    run's manifest: killed at any step, the next run still replaces the run folder."""
    parent = _fresh(tmp_path, run_folder, "listing")
    nested = parent / "out" / "patching" / "r"
    steps = _child(parent, -1, "nested", nested, run_folder / "tables")
    assert "intent recorded" in steps and "swapped" in steps, steps
    for kill_at, step in enumerate(steps):
        parent = _fresh(tmp_path, run_folder, f"kill-{kill_at}")
        out = parent / "out"
        assert _child(parent, kill_at, "nested", out / "patching" / "r",
                      run_folder / "tables")[-1] == step
        ownership.check_replaceable_folder(out, "--out")      # the run folder: still owned
        outcome = Guard(tmp_path, capsys)(*RUN, "--out", out, may_change=[parent])
        assert outcome.code == 0, (step, outcome.err)
        _assert_owned_and_clean(parent, out)
