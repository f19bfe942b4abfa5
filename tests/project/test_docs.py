"""The documentation site: it builds with warnings as errors, its generated reference is
up to date, and every name a page quotes exists in the code (and the other way round).

Every ``--flag`` a page writes is a flag of some ``abnirml`` subcommand (or of the pytest
plugin, a benchmark script, pip or the docs tools, named one by one); every
``abnirml SUB`` is a subcommand; every probe name or glob is registered, and the probe
guides' tables name every registered probe; every ranker family a page names is listed by
``abnirml rankers``, and the rankers guide describes every family and every parameter;
every ``ABNIRML_*`` variable is read by the code; every repository path exists; every
python block compiles; the plugin examples run as printed. No page a user reads carries
an issue number or a date, except the performance page's measurement dates and the
changelog.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest

from tests._docs_checks import (
    DOCS,
    EXAMPLE_RANKERS,
    ROOT,
    blocks,
    guide,
    probe_names,
    prose,
    quoted_repository_paths,
    ranker_families,
    ranker_families_named,
    run_abnirml,
    subcommands,
    unknown_flags,
    unknown_subcommands,
    unregistered_probes,
    user_pages,
)

PAGES = user_pages()
SITE_PAGES = {name: text for name, text in PAGES.items() if name != "README.md"}


# -- the site builds -------------------------------------------------------------------------

def test_the_site_builds_with_warnings_as_errors(tmp_path):
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (it is in the 'dev' extra)")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                          capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    for page in ("index.html", "reference/probes/index.html", "guide/report/index.html",
                 "performance/index.html", "changelog/index.html"):
        assert (tmp_path / "site" / page).is_file(), page


def test_every_page_is_in_the_navigation():
    yaml = pytest.importorskip("yaml", reason="PyYAML comes with mkdocs (the dev extra)")

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))

    def listed(node) -> set[str]:
        if isinstance(node, str):
            return {node}
        if isinstance(node, list):
            return set().union(*(listed(n) for n in node))
        if isinstance(node, dict):
            return set().union(*(listed(v) for v in node.values()))
        return set()

    in_nav = listed(config["nav"])
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert pages == in_nav, (sorted(pages - in_nav), sorted(in_nav - pages))
    # pages other parts of the project write into keep their place in the navigation
    assert {"performance.md", "reliability.md", "query-variations.md", "patching.md",
            "changelog.md", "architecture.md"} <= in_nav


def test_the_generated_reference_is_up_to_date():
    """A fresh interpreter, so only built-in probes and rankers are listed."""
    done = subprocess.run([sys.executable, str(DOCS / "gen_reference.py"), "--check"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr


def test_the_reference_lists_every_probe_ranker_and_option():
    probes = (DOCS / "reference" / "probes.md").read_text(encoding="utf-8")
    assert all(f"| `{name}` |" in probes for name in probe_names())
    rankers = (DOCS / "reference" / "rankers.md").read_text(encoding="utf-8")
    assert all(f"## `{family}`" in rankers for family in ranker_families())
    cli = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    for name, command in subcommands().items():
        assert f"## `abnirml {name}`" in cli
        for action in command._actions:
            for flag in action.option_strings:
                if flag.startswith("--") and flag != "--help":
                    assert f"`{flag}" in cli or f", {flag}" in cli, (name, flag)


@pytest.mark.slow
def test_every_results_field_is_documented_and_written(tmp_path):
    """A run over one probe of every built-in family writes exactly the documented fields
    (two need what the demo lacks: a pairwise ranker, a plugin axiom; the synonym fields need
    WordNet, whose absence leaves qvp:synonym out)."""
    from abnirml.result_fields import row_fields

    declared = {field.name for field in row_fields()}

    done = run_abnirml(["run", "--collection", "demo", "--ranker", "bm25", "--probe",
                        "mmp:tf:length", "--probe", "tmp:shuffle-words", "--probe",
                        "tmp:add-nonrel-sentence", "--probe", "dtp:fluency-jfleg", "--probe",
                        "axiom:rennings-tfc1", "--probe", "axiom:ir-tfc1", "--probe",
                        "qvp:shuffle-words", "--probe", "qvp:synonym", "--probe",
                        "bias:biased-foil", "--transfer-data",
                        "demo", "--no-cache",
                        "--quiet", "--out", "out"], tmp_path)
    assert done.returncode == 0, done.stderr
    written: set[str] = set()
    for line in (tmp_path / "out" / "results.jsonl").read_text(encoding="utf-8").splitlines():
        written |= set(json.loads(line))
    assert written - declared == set(), "fields results.jsonl has but the docs lack"
    # (the default test resamples queries, so test_rounds is written)
    need_more = {"position_bias", "position_bias_earlier", "axiom_label"}
    if not any(json.loads(line)["probe"] == "qvp:synonym" for line in
               (tmp_path / "out" / "results.jsonl").read_text(encoding="utf-8").splitlines()):
        need_more |= {"synonym_source", "synonym_rule", "synonym_content_words",
                      "synonym_words_without"}
    assert declared - written == need_more


# -- no history where a user reads ------------------------------------------------------------

MONTH = ("(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
         "Sep(?:tember)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2} " + MONTH + r"\b|\b" + MONTH + r" \d{1,2}\b")
ISSUE = re.compile(r"(?<![\w&/])#\d+\b")


@pytest.mark.parametrize("name", sorted(PAGES))
def test_no_issue_numbers_or_dates(name):
    if name == "docs/changelog.md":
        return                                   # a changelog may date its releases
    text = prose(PAGES[name])
    assert not ISSUE.findall(text), f"{name} names issues: {ISSUE.findall(text)}"
    dates = DATE.findall(text)
    if name == "docs/performance.md":          # each figure says when it was measured
        return
    assert not dates, f"{name} carries dates: {dates}"


def test_the_history_check_catches_what_it_should():
    assert ISSUE.findall(prose("measured before #18 on the demo")) == ["#18"]
    assert ISSUE.findall(prose("the header `Quality  #1 ID  #2 ID`")) == []
    assert DATE.findall("on 25 Nov, idle") and DATE.findall("2026-11-23")
    assert DATE.findall("November 23") and DATE.findall("3 March")
    assert not DATE.findall("Rennings et al. (ECIR 2019), 12 pairs; Decision 2; Mark 3")


# -- the pages agree with the code ------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(SITE_PAGES))
def test_every_flag_exists(name):
    unknown = unknown_flags(SITE_PAGES[name])
    assert not unknown, f"{name} names flags no abnirml subcommand has: {unknown}"


def test_every_subcommand_is_used_and_exists():
    used, unknown = unknown_subcommands("\n".join(SITE_PAGES.values()))
    assert not unknown, f"pages use subcommands abnirml lacks: {unknown}"
    # and the other way round: the guide shows every subcommand in use
    assert used >= set(subcommands()), sorted(set(subcommands()) - used)


@pytest.mark.parametrize("name", sorted(SITE_PAGES))
def test_every_quoted_probe_is_registered(name):
    _, missing = unregistered_probes(SITE_PAGES[name])
    assert not missing, f"{name} quotes probes that are not registered: {missing}"


def test_the_probe_guides_name_every_registered_probe():
    """Each family's table row in the probes, transfer and ranking-biases guides names every
    probe of the family, as the guides abbreviate them: `tmp:duplicate-k2`, `-k3`, `-k4`;
    `axiom:prox1` … `axiom:prox5`; `dtp:factuality-nq-{per,gpe,…}`; `-em`, `-fr`."""
    text = guide("probes", "transfer", "biases")
    quoted = set(re.findall(r"`((?:tmp|qvp|dtp|axiom|bias):[a-z0-9-]+)`", text))
    for name, rest in re.findall(r"`((?:tmp|dtp|axiom):[a-z0-9-]+)`((?:, `-[a-z0-9-]+`)+)",
                                 text):
        for suffix in re.findall(r"`(-[a-z0-9-]+)`", rest):   # a sibling, or a child
            quoted |= {name.rsplit("-", 1)[0] + suffix, name + suffix}
    for start, end in re.findall(r"`axiom:prox(\d)` … `axiom:prox(\d)`", text):
        quoted |= {f"axiom:prox{i}" for i in range(int(start), int(end) + 1)}
    for stem, kinds in re.findall(r"`(dtp:[a-z-]+)\{([a-z,]+)\}`", text):
        quoted |= {stem + kind for kind in kinds.split(",")}
    unlisted = sorted(n for n in probe_names() - quoted if not n.startswith("mmp:"))
    assert not unlisted, f"registered probes the guides never name: {unlisted}"


def test_every_ranker_family_named_exists_and_every_family_is_described():
    families = ranker_families()
    rankers = guide("rankers")
    for name, text in SITE_PAGES.items():
        # every page's --ranker specs; the rankers guide's table cells too
        named = ranker_families_named(text if name == "docs/guide/rankers.md" else
                                      "\n".join(re.findall(r".*--ranker.*", text)))
        unknown = sorted(named - families - EXAMPLE_RANKERS)
        assert not unknown, f"{name} names ranker families abnirml lacks: {unknown}"
    undescribed = sorted(f for f in families if f"`{f}" not in rankers)
    assert not undescribed, f"ranker families the rankers guide never names: {undescribed}"


def test_every_environment_variable_is_read():
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "src").rglob("*.py"))
    named = set(re.findall(r"\bABNIRML_[A-Z_]+[A-Z]\b", "\n".join(SITE_PAGES.values())))
    assert named
    unread = sorted(v for v in named if v not in source)
    assert not unread, f"pages name environment variables the code never reads: {unread}"


def test_every_quoted_repository_path_exists():
    missing = sorted({(name, p) for name, text in SITE_PAGES.items()
                      for p in quoted_repository_paths(text) if not (ROOT / p).exists()})
    assert not missing, f"pages quote paths that do not exist: {missing}"


PYTHON_BLOCKS = [(name, i) for name, text in sorted(SITE_PAGES.items())
                 for i in range(len(blocks(text, "python")))]


@pytest.mark.parametrize(("name", "number"), PYTHON_BLOCKS)
def test_python_block_compiles_and_its_abnirml_imports_resolve(name, number):
    code = blocks(SITE_PAGES[name], "python")[number]
    compile(code, f"{name} python block {number}", "exec")
    for module, names in re.findall(r"^from (abnirml[\w.]*) import (.+)$", code, flags=re.M):
        imported = importlib.import_module(module)
        for item in (n.strip() for n in names.split(",")):
            assert hasattr(imported, item) or importlib.util.find_spec(f"{module}.{item}"), (
                f"{name} block {number}: from {module} import {item}")


def _block_containing(text: str, marker: str) -> str:
    (block,) = [b for b in blocks(text, "python") if marker in b]
    return block


def test_plugin_blocks_run_as_printed(tmp_path):
    """The plugins guide's echo family, axiom and ranker plugins, used the way it says."""
    text = guide("plugins")
    (tmp_path / "echo.py").write_text(_block_containing(text, "register_family("),
                                      encoding="utf-8")
    (tmp_path / "axiom.py").write_text(_block_containing(text, "axiom_probe("),
                                       encoding="utf-8")
    (tmp_path / "rankers.py").write_text(_block_containing(text, 'key="query-words"'),
                                         encoding="utf-8")
    listed = run_abnirml(["probes", "--plugin", "echo.py"], tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "echo:query-vs-noise\techo" in listed.stdout and "echo.queries\t5" in listed.stdout

    run = run_abnirml(["run", "--plugin", "echo.py", "--plugin", "axiom.py", "--plugin",
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

    bad = run_abnirml(["run", "--plugin", "rankers.py", "--collection", "demo", "--probe",
                       "mmp:tf:length", "--ranker", "query-words+weight=heavy", "--no-cache",
                       "--quiet", "--out", "bad"], tmp_path)
    assert bad.returncode == 2
    # the guide quotes this message word for word
    message = "ranker query-words+weight=heavy: weight: 'heavy' is not a number"
    assert message in " ".join(text.split())
    assert bad.stderr.strip().endswith(message)
    for spec, quoted in (("query-words+weight=-1", "weight=-1 must be >= 0"),
                         ("query-words+wieght=2", "unknown parameter 'wieght' (did you mean "
                                                  "weight?)")):
        refused = run_abnirml(["run", "--plugin", "rankers.py", "--collection", "demo",
                               "--probe", "mmp:tf:length", "--ranker", spec, "--quiet",
                               "--out", "bad"], tmp_path)
        assert refused.returncode == 2 and quoted in refused.stderr, refused.stderr
        assert quoted in " ".join(text.split())


def test_device_choices_agree_with_the_code_and_the_help():
    """The rankers guide: ``--device cpu|cuda|mps|auto``; the help names every choice."""
    from abnirml.rankers.support.torch_support import _DEVICES

    (listed,) = re.findall(r"--device ([a-z]+(?:\|[a-z]+)+)`", guide("rankers"))
    assert set(listed.split("|")) == set(_DEVICES)
    run = subcommands()["run"]
    help_text = next(a.help for a in run._actions if "--device" in a.option_strings)
    assert all(device in help_text for device in _DEVICES), help_text


#: the rankers guide lists these as the learned families' hyperparameters
LEARNED_HYPERPARAMETERS = {"steps", "batch", "lr", "max_query_len", "max_doc_len", "rounds",
                           "leaves", "min_data", "folds", "seed"}


def test_every_parameter_abnirml_rankers_shows_is_documented():
    """`abnirml rankers` prints each family's parameters; the ranker reference describes
    each (the rankers guide says what each family is for and leaves the detail to it)."""
    done = run_abnirml(["rankers"], ROOT)
    assert done.returncode == 0, done.stderr
    lines = {line.split("\t")[0]: line.split("\t")[1] for line in done.stdout.splitlines()
             if "\t" in line}
    assert set(lines) >= ranker_families()
    for family in ("duot5", "lm-pairwise"):     # their lines once showed no parameters
        assert "+rerank_depth=" in lines[family], lines[family]
    text = (DOCS / "reference" / "rankers.md").read_text(encoding="utf-8")
    undocumented = sorted({(family, key) for family, line in lines.items()
                           for key in re.findall(r"\+([a-z_]+)=", line)
                           if f"+{key}=" not in text
                           and not (key in LEARNED_HYPERPARAMETERS and f"`{key}`" in text)})
    assert not undocumented, f"parameters the ranker reference never mentions: {undocumented}"


def test_install_commands_are_the_ones_a_checkout_uses():
    """abnirml is installed from a checkout: pages say `pip install -e '.[EXTRA]'`; only the
    install guide (and the changelog) mention the wheel form, saying when it applies."""
    for name, text in PAGES.items():
        if name in ("docs/guide/install.md", "docs/changelog.md"):
            continue
        assert "pip install 'abnirml[" not in text, name
    assert "pip install 'abnirml[EXTRA]'" in PAGES["docs/guide/install.md"]


def test_every_parameter_a_family_accepts_is_in_the_ranker_reference():
    """What each family's record declares (and so its check accepts), the ranker reference
    describes: no parameter is only discoverable by trial and error."""
    from abnirml.rankers.registry import lookup

    text = (DOCS / "reference" / "rankers.md").read_text(encoding="utf-8")
    missing = sorted((family, key) for family in ranker_families()
                     for key in lookup(family).param_names()
                     if f"+{key}=" not in text
                     and not (key in LEARNED_HYPERPARAMETERS and f"`{key}`" in text))
    assert not missing, f"parameters the ranker reference never mentions: {missing}"
