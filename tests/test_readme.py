"""README.md is the user's manual: the names it gives must exist under those names.

Every ``--flag`` it writes is a flag of some ``abnirml`` subcommand (or of the pytest
plugin, a benchmark script or pip, which are named here one by one); every ``abnirml SUB``
is a subcommand; every probe name or glob it quotes is registered; every ranker family it
puts after ``--ranker`` or in a ranker table is listed by ``abnirml rankers``; every
``ABNIRML_*`` variable is read by the code; every repository path it quotes exists; every
python block compiles and the ``abnirml`` names it imports are there. The blocks that run
(the notebook example, the plugins) are run by ``test_notebook_api.py`` and below.
"""

from __future__ import annotations

import argparse
import fnmatch
import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from abnirml.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")

#: Flags the README names that belong to something other than an ``abnirml`` subcommand,
#: each with the file that defines it (checked below), or pip's own.
OTHER_FLAGS = {
    "--abnirml": "src/abnirml/pytest_plugin.py",
    "--abnirml-collection": "src/abnirml/pytest_plugin.py",
    "--abnirml-refresh": "src/abnirml/pytest_plugin.py",
    "--prepare": "benchmarks/gpu.py",
    "--carried": "benchmarks/gpu.py",
    "--smoke": "benchmarks/gpu.py",
    "--install": "benchmarks/demo_timing.py",
    "--in-memory": "benchmarks/scale.py",
    "--computed-candidates": "benchmarks/scale.py",
}
PIP_FLAGS = {"--no-index", "--no-deps", "--no-compile", "--no-cache-dir", "--target",
             "--force-reinstall", "--index-url"}
#: The misspelling the README shows being answered with "did you mean --ranker?".
MISSPELT = "--rankers"

#: Names the README's own examples register (a plugin axiom, a user's pairs probe).
EXAMPLE_PROBES = {"axiom:early-term", "dtp:mine"}
EXAMPLE_RANKERS = {"query-words", "words"}


def _blocks(language: str | None = None) -> list[str]:
    """The README's fenced code blocks (of one language when given)."""
    found = re.findall(r"^```(\w*)\n(.*?)^```", README, flags=re.S | re.M)
    return [body for lang, body in found if language is None or lang == language]


def _code() -> str:
    """Everything the README writes as code: fenced blocks and inline spans."""
    inline = re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", README, flags=re.S | re.M))
    return "\n".join(_blocks() + inline)


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("abnirml's parser has no subcommands")


def _cli_flags() -> set[str]:
    flags = {"--help", "--version"}
    for command in _subcommands().values():
        flags |= {o for a in command._actions for o in a.option_strings if o.startswith("--")}
    return flags


def test_every_flag_exists():
    known = _cli_flags()
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", README))
    unknown = sorted(named - known - set(OTHER_FLAGS) - PIP_FLAGS - {MISSPELT})
    assert not unknown, f"README names flags no abnirml subcommand has: {unknown}"
    for flag, path in OTHER_FLAGS.items():
        if flag in named:
            assert f'"{flag}"' in (ROOT / path).read_text(encoding="utf-8"), (flag, path)
    assert MISSPELT not in known


def test_every_subcommand_exists():
    commands = set(_subcommands())
    used = set(re.findall(r"\babnirml ([a-z][a-z-]*)\b", _code()))
    assert used, "no `abnirml SUBCOMMAND` found in the README"
    assert used <= commands, f"README uses subcommands abnirml lacks: {sorted(used - commands)}"


@functools.cache
def _built_in() -> dict[str, list[str]]:
    """The probe names and ranker families of a fresh interpreter: other tests register
    their own into the process-wide registries, which the README rightly never names."""
    code = ("import json; from abnirml.probes.registry import all_probes; "
            "from abnirml.rankers.registry import families; "
            "print(json.dumps({'probes': [p.name for p in all_probes()], "
            "'rankers': families()}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    return json.loads(done.stdout)


def _probe_names() -> set[str]:
    return set(_built_in()["probes"])


def test_every_quoted_probe_is_registered():
    names = _probe_names()
    # a name cut short by `|`, `{` or `<` is a pattern the README spells out, not a name
    pattern = r"\b((?:mmp|tmp|qvp|axiom|dtp):[a-z0-9*:-]*[a-z0-9*])(?![a-z0-9*:{|<-])"
    quoted = set(re.findall(pattern, _code()))
    assert len(quoted) > 50, quoted
    missing = []
    for name in sorted(quoted - EXAMPLE_PROBES):
        if "*" in name:
            if not fnmatch.filter(names, name):
                missing.append(name)
        elif name not in names:
            missing.append(name)
    assert not missing, f"README quotes probes that are not registered: {missing}"


def test_listed_probes_match_the_tables():
    """Each family's README table row names every probe of the family that is registered."""
    names = _probe_names()
    quoted = set(re.findall(r"`((?:tmp|qvp|dtp|axiom):[a-z0-9-]+)`", README))
    # the README abbreviates sibling probes: `tmp:duplicate-k2`, `-k3`, `-k4`;
    # `axiom:prox1` … `axiom:prox5`; `dtp:factuality-nq-{per,gpe,…}`; `-em`, `-fr`
    for name, rest in re.findall(r"`((?:tmp|dtp|axiom):[a-z0-9-]+)`((?:, `-[a-z0-9-]+`)+)",
                                 README):
        for suffix in re.findall(r"`(-[a-z0-9-]+)`", rest):   # a sibling, or a child
            quoted |= {name.rsplit("-", 1)[0] + suffix, name + suffix}
    for start, end in re.findall(r"`axiom:prox(\d)` … `axiom:prox(\d)`", README):
        quoted |= {f"axiom:prox{i}" for i in range(int(start), int(end) + 1)}
    for stem, kinds in re.findall(r"`(dtp:[a-z-]+)\{([a-z,]+)\}`", README):
        quoted |= {stem + kind for kind in kinds.split(",")}
    unlisted = sorted(n for n in names - quoted if not n.startswith("mmp:"))
    assert not unlisted, f"registered probes the README never names: {unlisted}"


def _ranker_families() -> set[str]:
    return set(_built_in()["rankers"])


def test_every_ranker_family_exists():
    families = _ranker_families()
    specs = re.findall(r"--ranker\s+'?([a-z][a-z0-9-]*)", README)
    # first cells of the ranker tables: | `bm25` (…) | …, | `cross-encoder:…`, `monot5:…`
    # (the probe tables' first cells are probe names, left out below)
    for row in re.findall(r"^\| (`[a-z][^|]*)\|", README, flags=re.M):
        specs += re.findall(r"`([a-z][a-z0-9-]*)(?=[:\[+`])", row)
    table = {s for s in specs if not s.startswith(("mmp", "tmp", "qvp", "axiom", "dtp"))}
    unknown = sorted(table - families - EXAMPLE_RANKERS)
    assert not unknown, f"README names ranker families abnirml lacks: {unknown}"
    # and the other way round: every family abnirml lists is described in the README
    undescribed = sorted(f for f in families if f"`{f}" not in README)
    assert not undescribed, f"ranker families the README never names: {undescribed}"


def test_every_environment_variable_is_read():
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "src").rglob("*.py"))
    named = set(re.findall(r"\bABNIRML_[A-Z_]+[A-Z]\b", README))
    assert named
    unread = sorted(v for v in named if v not in source)
    assert not unread, f"README names environment variables the code never reads: {unread}"


def test_every_quoted_repository_path_exists():
    paths = set(re.findall(r"`((?:src|tests|benchmarks|docs)/[^`\s]*[\w/])`", README))
    paths |= set(re.findall(r"\(`((?:src|tests|benchmarks|docs)/[^`\s]*[\w/])`", README))
    paths |= {m for m in re.findall(r"\b((?:benchmarks|tests)/\w+\.py)\b", README)}
    assert paths
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, f"README quotes paths that do not exist: {missing}"


@pytest.mark.parametrize("number", range(len(_blocks("python"))))
def test_python_block_compiles_and_its_abnirml_imports_resolve(number):
    import importlib

    code = _blocks("python")[number]
    compile(code, f"README.md python block {number}", "exec")
    for module, names in re.findall(r"^from (abnirml[\w.]*) import (.+)$", code, flags=re.M):
        imported = importlib.import_module(module)
        for name in (n.strip() for n in names.split(",")):
            assert hasattr(imported, name) or importlib.util.find_spec(f"{module}.{name}"), (
                f"README block {number}: from {module} import {name}")


def _block_containing(marker: str) -> str:
    (block,) = [b for b in _blocks("python") if marker in b]
    return block


def _abnirml(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "abnirml", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_plugin_blocks_run_as_printed(tmp_path):
    """The README's echo family, axiom and ranker plugins, used the way it says."""
    (tmp_path / "echo.py").write_text(_block_containing("register_family("), encoding="utf-8")
    (tmp_path / "axiom.py").write_text(_block_containing("axiom_probe("), encoding="utf-8")
    (tmp_path / "rankers.py").write_text(_block_containing('register("query-words"'),
                                         encoding="utf-8")
    listed = _abnirml(["probes", "--plugin", "echo.py"], tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "echo:query-vs-noise\techo" in listed.stdout and "echo.queries\t5" in listed.stdout

    run = _abnirml(["run", "--plugin", "echo.py", "--plugin", "axiom.py", "--plugin",
                    "rankers.py", "--collection", "demo", "--probe", "echo",
                    "--probe", "axiom:early-term", "--option", "echo.queries=3",
                    "--ranker", "query-words+weight=2", "--no-cache", "--quiet",
                    "--out", "out"], tmp_path)
    assert run.returncode == 0, run.stderr
    records = [json.loads(line) for line in
               (tmp_path / "out" / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    echo = next(r for r in records if r["probe"] == "echo:query-vs-noise")
    assert echo["n"] == 3 and echo["skipped"] == {"not-applicable": 1}
    assert any(r["probe"] == "axiom:early-term" and r["n"] > 0 for r in records)

    bad = _abnirml(["run", "--plugin", "rankers.py", "--collection", "demo", "--probe",
                    "mmp:tf:length", "--ranker", "query-words+weight=heavy", "--no-cache",
                    "--quiet", "--out", "bad"], tmp_path)
    assert bad.returncode == 2
    # the README quotes this message word for word
    assert ("ranker query-words+weight=heavy: weight: 'heavy' is not a number"
            in README.replace("\n", " "))
    assert bad.stderr.strip().endswith(
        "ranker query-words+weight=heavy: weight: 'heavy' is not a number")


def test_device_choices_agree_with_the_code_and_the_help():
    """README: ``--device cpu|cuda|mps|auto``; the help once left out ``auto``."""
    from abnirml.rankers.torch_support import _DEVICES

    (listed,) = re.findall(r"--device ([a-z]+(?:\|[a-z]+)+)`", README)
    assert set(listed.split("|")) == set(_DEVICES)
    run = _subcommands()["run"]
    help_text = next(a.help for a in run._actions if "--device" in a.option_strings)
    assert all(device in help_text for device in _DEVICES), help_text


def test_every_parameter_abnirml_rankers_shows_is_documented():
    """`abnirml rankers` prints each family's parameters; the README describes each one."""
    done = _abnirml(["rankers"], ROOT)
    assert done.returncode == 0, done.stderr
    listed = done.stdout
    lines = dict(line.split("\t", 1) for line in listed.splitlines() if "\t" in line)
    assert set(lines) >= _ranker_families()
    for family in ("duot5", "lm-pairwise"):     # their lines once showed no parameters
        assert "+rerank_depth=" in lines[family], lines[family]
    undocumented = sorted({(family, key) for family, line in lines.items()
                           for key in re.findall(r"\+([a-z_]+)=", line)
                           if f"+{key}=" not in README})
    assert not undocumented, f"parameters the README never mentions: {undocumented}"
