"""The report renders every probe family generically (from records alone)."""

from __future__ import annotations

import json
import re

import pytest

from abnirml.run_folder import RunFolder, write_jsonl


def _record(probe, family, ranker, score, significant=True, symmetric=False, subset="all",
            n=10, **extra):
    pos = max(0, round(score * n)) if not symmetric else round(score * n)
    return {"probe": probe, "family": family, "ranker": ranker, "subset": subset,
            "score": score, "n": n, "pos": pos, "neg": 0, "neutral": n - pos,
            "mean_diff": score, "p_value": 0.001 if significant else 0.5,
            "significant": significant, "delta": 0.1, "symmetric": symmetric, "skipped": {},
            **extra}


def test_tmp_dtp_axiom_tables_effectiveness_correlation_and_variance(tmp_path):
    rankers = ["r1", "r2", "r3"]
    records = []
    for i, ranker in enumerate(rankers):
        records.append(_record("tmp:shuffle-words", "tmp", ranker, -0.5 + 0.1 * i))
        records.append(_record("tmp:shuffle-words", "tmp", ranker, -0.2, subset="relevant"))
        records.append(_record("dtp:paraphrase", "dtp", ranker, 0.3, symmetric=True,
                               significant=False))
        records.append(_record("axiom:rennings-tfc1", "axiom", ranker, 0.2 * i, n=10,
                               satisfied=5 + i, violated=3, ties=2 - i))
    run_info = {
        "rankers": [{"name": r, "delta": 0.1, "delta_source": "calibrated",
                     "calibration_queries": 5, "fingerprint": f"fp-{r}"} for r in rankers],
        "effectiveness": {"measures": ["nDCG@10"], "queries": 5, "candidates": "run bm25",
                          "rankers": {"r1": {"nDCG@10": 0.3}, "r2": {"nDCG@10": 0.4},
                                      "r3": {"nDCG@10": 0.5}}},
        "variant_groups": {"g": ["r1", "r2", "r3"]},
    }
    write_jsonl(tmp_path / "results.jsonl", records)
    (tmp_path / "run.json").write_text(json.dumps(run_info))
    RunFolder(tmp_path).write_reports()
    html = (tmp_path / "report.html").read_text("utf-8")
    for key in ("family-tmp", "family-dtp", "family-axiom", "effectiveness", "variance"):
        assert f'<section id="{key}">' in html
    assert "family-mmp" not in html and "delta-sweep" not in html   # no such data
    tmp_rows = (tmp_path / "tables" / "tmp.csv").read_text().splitlines()
    # tidy CSV: merged label cells repeated, numbers bare, significance its own column
    assert tmp_rows[0] == ("Probe,Subset,r1,r1 significant,r2,r2 significant,r3,"
                           "r3 significant,Samples")
    assert tmp_rows[1] == "tmp:shuffle-words,all,-0.50,true,-0.40,true,-0.30,true,10"
    assert tmp_rows[2] == "tmp:shuffle-words,relevant,-0.20,true,-0.20,true,-0.20,true,10"
    # the symmetric paraphrase probe is unsigned, and marked not significant; the page and
    # its export use the transfer layout, with the Discarded column of report.md
    dtp_rows = (tmp_path / "tables" / "dtp.csv").read_text().splitlines()
    assert dtp_rows[0].endswith(",Samples,Discarded")
    assert dtp_rows[1] == "Paraphrase,dtp:paraphrase,0.30,false,0.30,false,0.30,false,10,0"
    counts = (tmp_path / "tables" / "axiom-counts.csv").read_text().splitlines()
    assert counts[0] == ("Probe,r1 satisfied,r1 violated,r1 ties,r2 satisfied,r2 violated,"
                         "r2 ties,r3 satisfied,r3 violated,r3 ties")
    assert counts[1] == "axiom:rennings-tfc1,5,3,2,6,3,1,7,3,0"          # one number per cell
    effectiveness = (tmp_path / "tables" / "effectiveness.csv").read_text().splitlines()
    assert effectiveness[0] == "Ranker,nDCG@10,Axiom fulfilment"
    assert effectiveness[1] == "r1,0.3000,0.5000"
    correlation = (tmp_path / "tables" / "axiom-effectiveness.csv").read_text().splitlines()
    assert correlation[1].startswith("nDCG@10,3,1.000,")          # perfectly concordant
    families = (tmp_path / "tables" / "variance-families.csv").read_text().splitlines()
    assert families[0] == "Family,g"
    assert families[1] == "tmp,0.100"       # std of −0.5, −0.4, −0.3
    assert families[2] == "dtp,0.000"
    md = (tmp_path / "report.md").read_text("utf-8")
    assert "## Textual-manipulation probes" in md and "## Effectiveness" in md
    assert "\\begin{tabular}" in (tmp_path / "tables" / "axiom.tex").read_text()


def test_without_matplotlib_and_ir_measures_the_report_still_builds(tmp_path, monkeypatch):
    import sys

    from abnirml.pipeline import RunConfig, SessionSettings, run
    from abnirml.report import plots

    def no_matplotlib(*args, **kwargs):
        raise ImportError("No module named 'matplotlib'")

    monkeypatch.setattr(plots, "_figure", no_matplotlib)
    monkeypatch.setitem(sys.modules, "ir_measures", None)       # import now fails
    output = run(RunConfig(rankers=["bm25"], probes=["mmp:tf:length"], out=str(tmp_path),
                           session=SessionSettings(cache=None, progress=False)))
    assert "ir_measures is not installed" in output.run_info["effectiveness"]["skipped"]
    html = (tmp_path / "report.html").read_text("utf-8")
    assert "Figures need matplotlib" in html and "<img" not in html
    assert '<section id="family-mmp">' in html and 'id="effectiveness"' not in html


@pytest.mark.parametrize("layout", ["table", "transfer", "axiom"])
def test_a_user_family_gets_its_table_in_every_layout(tmp_path, layout):
    """A family registered by a user renders in report.md and report.html whatever layout it
    asks for: the transfer layout reads the family's own records, not only ``dtp``'s."""
    from collections.abc import Iterator
    from dataclasses import dataclass

    from abnirml.pipeline import RunConfig, SessionSettings, run
    from abnirml.probes.family import Family
    from abnirml.probes.family_registry import register_family
    from abnirml.registry import scoped_registrations
    from abnirml.samples import Sample
    from abnirml.settings import setting

    @dataclass(frozen=True)
    class EchoOptions:
        queries: int = setting(12, minimum=1, help="how many queries to use")

    @dataclass
    class EchoProbe:
        name: str = "echo:query-vs-noise"
        family: str = "echo"
        symmetric: bool = False
        characteristic: str = "Echo"          # the transfer layout's row labels
        dataset: str = "Queries"

        def samples(self, context) -> Iterator[Sample]:
            limit = context.family_options("echo").queries
            for qid in sorted(context.collection.queries)[:limit]:
                query = context.collection.queries[qid]
                yield Sample(query, query, "zzzq xxyq wwvq", {"qid": qid})

    from abnirml.probes.built_in import AXIOMS as AXIOM_FAMILY

    shaped = {"transfer": {"row_header": ("Characteristic", "Dataset"),
                           "row_label": lambda probe: [probe.characteristic, probe.dataset]},
              # an axiomatic family counts satisfied instances the way the built-in one does
              "axiom": {"record_fields": AXIOM_FAMILY.record_fields}}
    family = Family(key="echo", title="Echo probes", options=EchoOptions,
                    positive="Positive: the ranker prefers the query itself.",
                    probes=lambda: [EchoProbe()], layout=layout, **shaped.get(layout, {}))
    with scoped_registrations():
        register_family(family)
        out = tmp_path / layout
        output = run(RunConfig(collection="demo", rankers=["bm25", "ql"], probes=["echo"],
                               out=str(out), effectiveness=False,
                               session=SessionSettings(cache=None, progress=False)))
    (record, *_) = [r for r in output.result.records if r["subset"] == "all"]
    assert record["n"] == 12 and record["score"] == 1.0 and record["significant"]
    md = (out / "report.md").read_text("utf-8")
    html = (out / "report.html").read_text("utf-8")
    assert md.count("## Echo probes") == 1 and "Positive: the ranker prefers the query" in md
    row = ("| Echo | Queries | +1.00* | +1.00* | 12 | 0 |" if layout == "transfer"
           else "| echo:query-vs-noise | +1.00* | +1.00* | 12 |")
    assert row in md
    section = html[html.index('<section id="family-echo">'):]
    section = section[:section.index("</section>")]
    assert '<table data-table="echo">' in section and "+1.00" in section
    assert (out / "tables" / "echo.csv").is_file()
    if layout == "axiom":
        # the axiom layout's own tables follow the layout, not the family's name
        counts = (out / "tables" / "axiom-counts.csv").read_text().splitlines()
        assert counts[1] == "echo:query-vs-noise,12,0,0,12,0,0"
        assert 'data-table="axiom-satisfied"' in section
    # the first screen says it in words, once for both: they prefer d1, the query itself
    findings = html[html.index('<section id="findings"'):]
    findings = re.sub(r">\s+<", "><", findings[:findings.index("</section>")])
    assert "<b>Shared:</b> both rankers prefer d1 on echo:query-vs-noise (the ranker " \
        "prefers the query itself) (" in findings


def test_a_user_transfer_family_says_where_its_missing_data_was_looked_for():
    """The missing-data caveat reads the probe's own ``data_folder`` through its family, so
    a user's transfer-layout family names its folder as ``dtp``'s probes do."""
    from dataclasses import dataclass

    from abnirml.probes.family import TRANSFER_LAYOUT, Family
    from abnirml.probes.family_registry import register_family
    from abnirml.registry import scoped_registrations
    from abnirml.report.transfer_table import missing_data_lines

    @dataclass
    class EchoPairs:
        name: str = "echo:pairs"
        family: str = "echo"
        symmetric: bool = False
        characteristic: str = "Echo"
        dataset: str = "Pairs"
        data_folder: str = "echo-pairs"

    record = _record("echo:pairs", "echo", "bm25", 0.0, n=0, skipped={"no-data": 1})
    with scoped_registrations():
        register_family(Family(key="echo", title="Echo", positive="", layout=TRANSFER_LAYOUT,
                               probes=lambda: [EchoPairs()]))
        lines = missing_data_lines([record], {"options": {"echo.data": "/d"}}, "echo")
    assert lines == ["data not found: /d/echo-pairs — echo:pairs"]
