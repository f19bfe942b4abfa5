"""A third party's plugin file, written as the README shows, used through the command: its
family is listed by ``abnirml probes``, runs in ``abnirml run`` with a validated option and
gets its own report section and CSV; an axiom with a precondition and a ranker class load
the same way; and every mistake a plugin author makes is one line, exit 2, no traceback."""

from __future__ import annotations

import csv
import json
import textwrap
from pathlib import Path

import pytest

from abnirml.cli import main
from abnirml.plugins import load_plugins, plugin_sources
from abnirml.probes.family_registry import family_keys, unregister_family
from abnirml.rankers import registry as ranker_registry
from abnirml.registry import scoped_registrations
from tests._contexts import probe_context

FAMILY = '''
from dataclasses import dataclass

from abnirml.probes.family import Family
from abnirml.probes.family_registry import register_family
from abnirml.settings import setting
from abnirml.samples import Sample, Skip


@dataclass(frozen=True)
class EchoOptions:
    queries: int = setting(5, minimum=1, help="how many queries to use")


class EchoProbe:
    name, family, symmetric = "echo:query-vs-noise", "echo", False

    def samples(self, context):
        n = context.family_options("echo", EchoOptions).queries
        for qid in sorted(context.collection.queries)[:n]:
            query = context.collection.queries[qid]
            yield Sample(query, query, "zzzq xxyq", {"qid": qid})
        yield Skip("not-applicable")


register_family(Family(key="echo", title="Echo probes", options=EchoOptions,
                       positive="Positive: the ranker prefers the query itself.",
                       probes=lambda: [EchoProbe()]))
'''

AXIOM = '''
from abnirml.probes.axioms.custom import axiom_probe
from abnirml.probes.probe_registry import register


def same_length_and_dominating(pool, i, j):
    return pool.lengths[i] == pool.lengths[j] and (pool.counts[i] >= pool.counts[j]).all()


def more_query_terms(pool, i, j):
    return int(pool.sums[i] > pool.sums[j]) - int(pool.sums[i] < pool.sums[j])


register(axiom_probe("more-terms", more_query_terms, precondition=same_length_and_dominating,
                     label="MORE", describe="equal lengths, d1 holds every query term at "
                     "least as often as d2: d1 holds more query terms"))
'''

RANKERS = '''
import numpy as np

from abnirml.rankers.registry import register


class QueryWords:
    """How many query words the document holds, times +weight."""

    def __init__(self, name, weight):
        self.name, self.weight = name, weight
        self.fingerprint = f"query-words-v1:{weight}"

    def score(self, pairs):
        return np.array([self.weight * sum(w in d.split() for w in q.split())
                         for q, d in pairs], dtype=float)


register("query-words", lambda spec, env: QueryWords(
    spec.canonical, spec.float_param("weight", 1.0, low=0)), "query-words[+weight=1]")
'''


@pytest.fixture(autouse=True)
def _clean_registries():
    """Plugins register into process-wide registries: undo everything a test loaded,
    including which plugins count as loaded."""
    with scoped_registrations():
        yield


def _write(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("abnirml: error:")]
    assert len(lines) == 1, err
    return lines[0]


def _first_record(plugin: str, out: Path, *args: str) -> dict:
    """``abnirml run --plugin PLUGIN ARGS`` into ``out`` (quiet, no effectiveness); its
    first results.jsonl record."""
    assert main(["run", "--plugin", plugin, *args, "--no-effectiveness", "--quiet",
                 "--out", str(out)]) == 0
    return json.loads((out / "results.jsonl").read_text().splitlines()[0])


def test_a_family_file_is_listed_run_and_reported(tmp_path, capsys):
    plugin = _write(tmp_path, "echo_family.py", FAMILY)
    assert main(["probes", "--plugin", plugin]) == 0
    listed = capsys.readouterr().out
    assert "echo:query-vs-noise\techo" in listed
    assert "echo.queries\t5\thow many queries to use" in listed

    out = tmp_path / "out"
    assert main(["run", "--plugin", plugin, "--probe", "echo", "--ranker", "bm25",
                 "--option", "echo.queries=3", "--no-effectiveness", "--quiet",
                 "--out", str(out)]) == 0
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    whole = next(r for r in records if r["subset"] == "all")
    # d1 is the query itself, d2 shares no term with it: BM25 prefers d1 on all 3 queries
    assert (whole["probe"], whole["n"], whole["pos"], whole["score"]) == \
        ("echo:query-vs-noise", 3, 3, 1.0)
    assert whole["skipped"] == {"not-applicable": 1}
    report = (out / "report.md").read_text()
    assert "## Echo probes" in report
    assert "Positive: the ranker prefers the query itself." in report
    rows = list(csv.DictReader((out / "tables" / "echo.csv").open()))
    assert rows[0]["Probe"] == "echo:query-vs-noise" and float(rows[0]["bm25"]) == 1.0
    run_info = json.loads((out / "run.json").read_text())
    assert run_info["options"]["echo.queries"] == 3


def test_the_report_of_a_plugin_run_rebuilds_without_the_plugin(tmp_path, capsys):
    plugin = _write(tmp_path, "echo_family.py", FAMILY)
    out = tmp_path / "out"
    assert main(["run", "--plugin", plugin, "--probe", "echo", "--ranker", "bm25",
                 "--no-effectiveness", "--quiet", "--out", str(out)]) == 0
    unregister_family("echo")
    (out / "report.md").unlink()
    assert main(["report", str(out)]) == 0
    assert "## Echo probes" in (out / "report.md").read_text()


def test_plugins_come_from_the_environment_too(tmp_path, monkeypatch):
    first = _write(tmp_path, "echo_family.py", FAMILY)
    second = _write(tmp_path, "rankers.py", RANKERS)
    monkeypatch.setenv("ABNIRML_PLUGINS", f"{first}:{second}")
    assert plugin_sources(["x.py"]) == [first, second, "x.py"]
    load_plugins(plugin_sources(), entry_points=False)
    assert "echo" in family_keys() and "query-words" in ranker_registry.families()
    load_plugins([first], entry_points=False)      # a second load of one file: no-op


def test_an_option_of_the_wrong_type_or_range_is_one_line(tmp_path, capsys):
    plugin = _write(tmp_path, "echo_family.py", FAMILY)
    common = ["run", "--plugin", plugin, "--probe", "echo", "--out", str(tmp_path / "o")]
    assert main([*common, "--option", "echo.queries=three"]) == 2
    assert _one_line_error(capsys) == \
        "abnirml: error: echo.queries: 'three' is not a number"
    assert main([*common, "--option", "echo.queries=0"]) == 2
    assert "echo.queries must be ≥ 1, got 0" in _one_line_error(capsys)
    assert main([*common, "--option", "echo.querys=2"]) == 2
    assert "did you mean echo.queries" in _one_line_error(capsys)


def test_an_axiom_with_a_precondition_runs_as_an_axiom_probe(tmp_path, capsys):
    plugin = _write(tmp_path, "axiom.py", AXIOM)
    assert main(["probes", "--plugin", plugin]) == 0
    assert "axiom:more-terms\taxiom" in capsys.readouterr().out
    out = tmp_path / "out"
    record = _first_record(plugin, out, "--probe", "axiom:more-terms", "--ranker", "bm25")
    assert record["probe"] == "axiom:more-terms" and record["n"] > 0
    # equal lengths, every query term at least as often and one more often: BM25 (whose
    # query terms all have positive idf on the demo collection) can only agree
    assert record["violated"] == 0 and record["satisfied"] > 0
    report = (out / "report.md").read_text()
    assert "|  | MORE |\n" in report and "| Diagnostic dataset size |" in report


def test_the_axiom_precondition_is_applied(demo_collection):
    from abnirml.probes.axioms.custom import axiom_probe
    from abnirml.probes.base import build_table

    def prefer_first(pool, i, j):
        return 1 if i < j else -1

    everything = axiom_probe("first", prefer_first)
    nothing = axiom_probe("first", prefer_first, precondition=lambda pool, i, j: False)
    context = probe_context(collection=demo_collection, seed=0,
                            options={"axiom.cap": "none", "axiom.pool": "judged"})
    pools = build_table(everything, context).extra["features"]
    # every pool of n documents gives n(n−1)/2 ordered pairs with i < j
    assert len(build_table(everything, context)) == sum(f.size * (f.size - 1) // 2
                                                        for f in pools)
    assert len(build_table(nothing, context)) == 0


def test_a_ranker_class_from_a_plugin_reads_validated_parameters(tmp_path, capsys):
    plugin = _write(tmp_path, "rankers.py", RANKERS)
    assert main(["rankers", "--plugin", plugin]) == 0
    assert "query-words\tquery-words[+weight=1]" in capsys.readouterr().out
    out = tmp_path / "out"
    record = _first_record(plugin, out, "--ranker", "query-words+weight=2", "--probe",
                           "tmp:prepend-query")
    # prepending the query adds every query word: never a lower score
    assert record["ranker"] == "query-words+weight=2" and record["neg"] == 0
    assert main(["run", "--plugin", plugin, "--ranker", "query-words+weight=heavy",
                 "--probe", "tmp:prepend-query", "--out", str(tmp_path / "o2")]) == 2
    assert _one_line_error(capsys) == \
        "abnirml: error: ranker query-words+weight=heavy: weight: 'heavy' is not a number"


def test_a_pyterrier_style_function_ranker_runs_from_python(tmp_path):
    pt = pytest.importorskip("pyterrier")
    import abnirml

    def words(row):
        return float(len(set(row["query"].split()) & set(row["text"].split())))

    output = abnirml.run(abnirml.RunConfig(
        rankers=[abnirml.wrap_pyterrier(pt.apply.doc_score(words), name="words")],
        probes=["tmp:prepend-query"], out=str(tmp_path / "out"), effectiveness=False,
        session=abnirml.SessionSettings(progress=False)))
    record = next(r for r in output.result.records if r["subset"] == "all")
    assert record["ranker"] == "words" and record["neg"] == 0 and record["pos"] > 0


def test_a_function_ranker_from_a_plugin_runs_on_the_command_line(tmp_path):
    pytest.importorskip("pyterrier")
    plugin = _write(tmp_path, "words.py", """
        import pyterrier as pt

        import abnirml
        from abnirml.rankers.registry import register


        def words(row):
            return float(len(set(row["query"].split()) & set(row["text"].split())))


        register("words", lambda spec, env: abnirml.wrap_pyterrier(
            pt.apply.doc_score(words), name=spec.canonical, version="1"))
    """)
    out = tmp_path / "out"
    record = _first_record(plugin, out, "--ranker", "words", "--probe", "tmp:prepend-query")
    # the query prepended: every query word is then present, so never fewer shared words
    assert record["ranker"] == "words" and record["neg"] == 0 and record["pos"] > 0


@pytest.mark.parametrize("text, expected", [
    ("from abnirml.probes.family import Family\nx = (\n",
     r"^abnirml: error: .*broken\.py:2: plugin has a syntax error: '\(' was never closed$"),
    ("import abnirml\nraise RuntimeError('boom')\n",
     r"^abnirml: error: .*broken\.py:2: plugin failed while loading: RuntimeError: boom$"),
    ("import no_such_module_xyz\n",
     r"^abnirml: error: .*broken\.py:1: plugin could not import what it needs \(install "
     r"no_such_module_xyz\)"),
    ("from abnirml.probes.family import Family\n"
     "from abnirml.probes.family_registry import register_family\n"
     "register_family(Family(key='tmp', title='Mine', positive='x'))\n",
     r"broken\.py:3: probe family 'tmp' is built in \(Textual-manipulation probes\); give "
     r"yours another key$"),
    ("from abnirml.rankers.registry import register\nregister('bm25', lambda s, e: None)\n",
     r"broken\.py:2: ranker family 'bm25' is built in; give yours another name$"),
])
def test_a_broken_plugin_is_one_line_naming_file_and_line(tmp_path, capsys, text, expected):
    import re

    plugin = _write(tmp_path, "broken.py", text)
    assert main(["probes", "--plugin", plugin]) == 2
    assert re.search(expected, _one_line_error(capsys))


def test_a_missing_plugin_file_or_module_is_one_line(tmp_path, capsys):
    assert main(["probes", "--plugin", str(tmp_path / "nope.py")]) == 2
    assert _one_line_error(capsys).endswith("nope.py: plugin not found (give a Python file "
                                            "or a module name)")
    assert main(["probes", "--plugin", "no.such.module"]) == 2
    assert "no.such.module: no such module" in _one_line_error(capsys)


def test_duplicate_names_across_plugins_are_refused_by_name(tmp_path, capsys):
    first = _write(tmp_path, "echo_family.py", FAMILY)
    copy = _write(tmp_path, "echo_copy.py", FAMILY)
    assert main(["probes", "--plugin", first, "--plugin", copy]) == 2
    line = _one_line_error(capsys)
    # the line of the copy's register_family call, and the file that registered it first
    assert line.endswith("echo_copy.py:26: probe family 'echo' is already registered by "
                         f"{first}; give one of them another key")


def test_a_plugin_that_fails_while_loading_leaves_nothing_registered(tmp_path, capsys):
    half = _write(tmp_path, "half.py", RANKERS + FAMILY + "\nraise RuntimeError('late')\n")
    assert main(["rankers", "--plugin", half]) == 2
    last = len(Path(half).read_text(encoding="utf-8").splitlines())
    assert _one_line_error(capsys).endswith(
        f"half.py:{last}: plugin failed while loading: RuntimeError: late")
    assert "query-words" not in ranker_registry.families() and "echo" not in family_keys()
    assert load_plugins([_write(tmp_path, "echo_family.py", FAMILY)], entry_points=False)
    assert "echo" in family_keys()


def test_a_plugin_family_is_listed_with_the_file_that_registered_it(tmp_path, capsys):
    plugin = _write(tmp_path, "rankers.py", RANKERS)
    assert main(["rankers", "--plugin", plugin]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines()
                if line.startswith("query-words\t"))
    assert line.endswith(f"\tregistered by {plugin}")
    assert ranker_registry.owner_of("query-words") == plugin
    assert ranker_registry.owner_of("bm25") == "abnirml"


def test_a_probe_name_of_another_family_is_refused(tmp_path, capsys):
    clash = FAMILY.replace('"echo:query-vs-noise", "echo"', '"tmp:typos", "echo"')
    plugin = _write(tmp_path, "clash.py", clash)
    assert main(["probes", "--plugin", plugin]) == 2
    assert _one_line_error(capsys).endswith(
        "clash.py: probe tmp:typos: listed by family 'tmp' and by family 'echo'; probe "
        "names must be unique")
    assert "echo" not in family_keys()          # the refused plugin left nothing behind
    single = _write(tmp_path, "single.py", AXIOM.replace('"more-terms"', '"rennings-tfc1"'))
    assert main(["probes", "--plugin", single]) == 2
    assert "probe axiom:rennings-tfc1: that name is already a probe of family 'axiom'" in \
        _one_line_error(capsys)


def test_a_ranker_with_the_wrong_number_of_scores_or_an_exception_is_one_line(tmp_path,
                                                                              capsys):
    plugin = _write(tmp_path, "bad_rankers.py", '''
        import numpy as np
        from abnirml.rankers.registry import register

        class Short:
            name, fingerprint = "short", "short-v1"
            def score(self, pairs):
                return np.zeros(len(pairs) - 1)

        class Raising:
            name, fingerprint = "raising", "raising-v1"
            def score(self, pairs):
                return {}["missing"]

        register("short", lambda spec, env: Short())
        register("raising", lambda spec, env: Raising())
        register("bad-factory", lambda spec, env: spec.params.get("x"))
    ''')
    common = ["run", "--plugin", plugin, "--probe", "tmp:prepend-query", "--no-cache",
              "--no-effectiveness", "--quiet"]
    assert main([*common, "--ranker", "short", "--out", str(tmp_path / "a")]) == 2
    assert "abnirml: error: ranker short returned " in _one_line_error(capsys)
    assert main([*common, "--ranker", "raising", "--out", str(tmp_path / "b")]) == 2
    assert _one_line_error(capsys).endswith(
        f"ranker raising: score() failed ({plugin}:13): KeyError: 'missing'")
    assert main([*common, "--ranker", "bad-factory", "--out", str(tmp_path / "c")]) == 2
    assert _one_line_error(capsys).endswith(
        f"ranker bad-factory: its factory failed ({plugin}:17): AttributeError: 'tuple' "
        "object has no attribute 'get'")


WORKER_RANKERS = '''
    from abnirml.errors import ConfigError
    from abnirml.rankers.registry import register

    class Raising:
        name, fingerprint = "raising", "raising-v1"
        def score(self, pairs):
            return {}["missing"]

    class Refusing:
        name, fingerprint = "refusing", "refusing-v1"
        def score(self, pairs):
            raise ConfigError("refusing: this ranker needs a GPU")

    register("raising", lambda spec, env: Raising())
    register("refusing", lambda spec, env: Refusing())
'''


def test_a_plugin_ranker_failing_in_a_worker_names_its_own_line(tmp_path, capsys):
    """multiprocessing re-raises a worker's exception with its own frames: the line named
    must still be the plugin's, and abnirml's own errors stay their one line (the same on
    Ray: tests/evaluation/test_ray_in_process.py)."""
    assert_worker_failures_name_their_line(tmp_path, capsys, ["--workers", "2"])


def assert_worker_failures_name_their_line(tmp_path, capsys, executor):
    plugin = _write(tmp_path, "worker_rankers.py", WORKER_RANKERS)
    common = ["run", "--plugin", plugin, "--probe", "tmp:prepend-query", "--no-cache",
              "--no-effectiveness", "--quiet", "--batch-size", "50", *executor]
    assert main([*common, "--ranker", "raising", "--out", str(tmp_path / "a")]) == 2
    assert _one_line_error(capsys) == (
        f"abnirml: error: ranker raising: score() failed ({plugin}:8): KeyError: "
        "'missing'")
    assert main([*common, "--ranker", "refusing", "--out", str(tmp_path / "b")]) == 2
    assert _one_line_error(capsys) == \
        "abnirml: error: refusing: this ranker needs a GPU"


def test_a_plugin_probe_that_raises_names_the_probe_and_line(tmp_path, capsys):
    plugin = _write(tmp_path, "raising.py", FAMILY.replace(
        "n = context.family_options", "n = 1 // 0 + context.family_options"))
    assert main(["run", "--plugin", plugin, "--probe", "echo", "--no-effectiveness",
                 "--quiet", "--out", str(tmp_path / "o")]) == 2
    assert _one_line_error(capsys).endswith(
        f"probe echo:query-vs-noise: building its samples failed ({plugin}:19): "
        "ZeroDivisionError: integer division or modulo by zero")


def test_an_installed_package_is_loaded_through_its_entry_point(tmp_path, monkeypatch):
    """What `pip install` of a plugin package leaves behind: a module and a dist-info whose
    entry_points.txt names it under abnirml.plugins."""
    _write(tmp_path, "echo_plugin_pkg.py", FAMILY)
    info = tmp_path / "echo_plugin_pkg-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-plugin-pkg\n"
                                   "Version: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[abnirml.plugins]\necho = echo_plugin_pkg\n",
                                           encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "echo" not in family_keys()
    assert load_plugins([]) == ["entry point 'echo' (echo_plugin_pkg)"]
    assert "echo" in family_keys()


RANKER_FAMILY = '''
from dataclasses import dataclass

import numpy as np

from abnirml.plugin import RankerFamily, register_ranker, setting


@dataclass(frozen=True)
class OverlapParams:
    a: int = setting(1, minimum=1, maximum=5, help="points per shared word")
    unit: str = setting("words", choices=("words", "chars"), help="what is compared")


class Overlap:
    def __init__(self, name, a, unit):
        self.name, self.a, self.unit = name, a, unit
        self.fingerprint = f"overlap-v1:{a}:{unit}"

    def score(self, pairs):
        def parts(text):
            return set(text.split()) if self.unit == "words" else set(text)
        return np.array([self.a * len(parts(q) & parts(d)) for q, d in pairs], dtype=float)


def build(spec, p, env):
    return Overlap(spec.canonical, p.a, p.unit)


register_ranker(RankerFamily(key="myfam", factory=build,
                             description="shared query words, times +a", params=OverlapParams))
'''


def test_a_ranker_family_from_the_plugin_facade_is_listed_with_its_parameters(tmp_path,
                                                                              capsys):
    assert main(["rankers", "--plugin", _write(tmp_path, "myfam.py", RANKER_FAMILY)]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("myfam\t"))
    assert lines[at].split("\t")[1] == ("myfam[+a=1][+unit=words|chars] — shared query "
                                        "words, times +a")
    assert lines[at + 1] == "  +a\tint (≥ 1, ≤ 5), default 1\tpoints per shared word"
    assert lines[at + 2] == "  +unit\tstr (words|chars), default words\twhat is compared"


@pytest.mark.parametrize(("spec", "expected"), [
    ("myfam+a=9", "ranker myfam+a=9: a=9 must be in [1, 5]"),
    ("myfam+a=two", "ranker myfam+a=two: a: 'two' is not"),
    ("myfam+unit=char", "ranker myfam+unit=char: unit must be words or chars, got 'char'"),
    ("myfam+aa=1", "ranker myfam+aa=1: unknown parameter 'aa' (did you mean a?) "
                   "(allowed: a, unit)"),
])
def test_a_bad_ranker_parameter_or_unknown_key_is_one_line(tmp_path, capsys, spec, expected):
    plugin = _write(tmp_path, "myfam.py", RANKER_FAMILY)
    assert main(["run", "--plugin", plugin, "--ranker", spec, "--probe", "tmp:prepend-query",
                 "--quiet", "--out", str(tmp_path / "o")]) == 2
    assert _one_line_error(capsys).startswith(f"abnirml: error: {expected}")
    assert not (tmp_path / "o" / "results.jsonl").exists()


def test_a_ranker_family_from_the_plugin_facade_runs_end_to_end(tmp_path):
    record = _first_record(_write(tmp_path, "myfam.py", RANKER_FAMILY), tmp_path / "out",
                           "--ranker", "myfam+a=1", "--probe", "tmp:prepend-query")
    # prepending the query adds every query word: the overlap never falls
    assert record["ranker"] == "myfam+a=1" and record["neg"] == 0 and record["pos"] > 0


def test_the_plugin_facade_re_exports_the_objects_the_package_uses():
    """``abnirml.plugin`` holds no copies: registering through it is registering."""
    import abnirml.plugin as facade
    from abnirml.probes import base as probe_base
    from abnirml.probes import family, family_registry
    from abnirml.probes import probe_registry as registry
    from abnirml.probes.axioms import custom
    from abnirml.rankers import base
    from abnirml.rankers import family as ranker_family
    from abnirml.samples import Sample, Skip

    assert facade.Family is family.Family and facade.Requirement is family.Requirement
    assert facade.register_family is family_registry.register_family
    assert facade.register_probe is registry.register
    assert facade.axiom_probe is custom.axiom_probe
    assert facade.Sample is Sample and facade.Skip is Skip
    assert facade.RankerSpec is base.RankerSpec
    assert facade.RankerFamily is ranker_family.RankerFamily
    assert facade.register_ranker is ranker_registry.register_family
    assert facade.ranker_parameters is ranker_registry.parameters
    assert facade.Ranker is base.Ranker and facade.Probe is probe_base.Probe
    public = {n for n in vars(facade) if n.isidentifier() and not n.startswith("_")}
    assert set(facade.__all__) == public - {"annotations"}


def test_the_plugins_guide_imports_only_from_the_facade():
    guide = Path(__file__).resolve().parents[2] / "docs" / "guide" / "plugins.md"
    imports = [line for line in guide.read_text(encoding="utf-8").splitlines()
               if line.startswith("from abnirml")]
    # a plugin registers through the facade; its own tests may use the conformance suite
    assert imports and all(line.startswith(("from abnirml.plugin import ",
                                            "from abnirml.testing import "))
                           for line in imports)


def test_a_probe_asking_for_a_family_key_nobody_registered_is_refused_naming_it(tmp_path,
                                                                                capsys):
    """The probe reads ``"echoes"`` while its family is ``"echo"``: quietly handing it the
    defaults would ignore ``--option echo.queries=3``; the run stops naming the key."""
    plugin = _write(tmp_path, "echo_family.py", FAMILY.replace(
        'context.family_options("echo", EchoOptions)',
        'context.family_options("echoes", EchoOptions)'))
    assert main(["run", "--plugin", plugin, "--probe", "echo", "--ranker", "bm25",
                 "--option", "echo.queries=3", "--no-effectiveness", "--quiet",
                 "--out", str(tmp_path / "o")]) == 2
    line = _one_line_error(capsys)
    assert "probe family 'echoes', which is not registered" in line
    assert "did you mean echo" in line


def test_a_probe_may_look_its_options_up_by_type(tmp_path):
    plugin = _write(tmp_path, "echo_family.py", FAMILY.replace(
        'context.family_options("echo", EchoOptions)', 'context.options(EchoOptions)'))
    record = _first_record(plugin, tmp_path / "o", "--probe", "echo", "--ranker", "bm25",
                           "--option", "echo.queries=2")
    assert (record["probe"], record["n"]) == ("echo:query-vs-noise", 2)


def test_a_run_context_refuses_options_of_another_type_or_of_no_family(demo_collection):
    from abnirml.errors import ConfigError
    from abnirml.probes.manipulation.probes import ManipulationOptions
    from abnirml.probes.query_variation.probes import QueryVariationOptions

    context = probe_context(demo_collection, {"tmp.sample": 4})
    assert context.options(ManipulationOptions).sample == 4
    assert context.family_options("tmp", ManipulationOptions).sample == 4
    with pytest.raises(ConfigError, match="declares ManipulationOptions"):
        context.family_options("tmp", QueryVariationOptions)

    class Unregistered:
        pass

    with pytest.raises(ConfigError, match="no registered probe family declares options of "
                                          "type Unregistered"):
        context.options(Unregistered)
