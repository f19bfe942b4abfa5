"""The analysis subcommands of ``abnirml``: ``rank-origin`` and ``compare``.

Kept apart from :mod:`abnirml.cli` so that the main command module only registers them.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abnirml.counts import counted
from abnirml.errors import ConfigError
from abnirml.files.output_folders import check_output_folder, check_owned_files, write_owned_files

if TYPE_CHECKING:
    from abnirml.data.trec import Qrels, Run
    from abnirml.evaluation.analyses.compare import ProbeComparison
    from abnirml.evaluation.execution.score_file import ScoreStore
    from abnirml.evaluation.stats.significance import StatsConfig
    from abnirml.report.tables import Table


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser],
                scoring: argparse.ArgumentParser) -> None:
    """Register ``rank-origin`` and ``compare`` on the ``abnirml`` subparsers; ``scoring``
    is the CLI's parent parser of session flags (collection, cache, device, …)."""
    origin = sub.add_parser(
        "rank-origin", parents=[scoring],
        help="where the documents of RUN came from in REFERENCE_RUN (Rau & Kamps, fig. 1)")
    origin.add_argument("reference", metavar="REFERENCE_RUN", help="TREC run file (e.g. bm25)")
    origin.add_argument("run", metavar="RUN", nargs="?",
                        help="TREC run file; omit with --rerank to re-rank REFERENCE_RUN")
    origin.add_argument("--qrels", help="TREC qrels: adds one matrix per relevance grade")
    origin.add_argument("--ranges",
                        help="contiguous rank ranges from 1 (default: those of "
                             "1-10,11-100,101-500,501-1000 the runs are deep enough to fill)")
    origin.add_argument("--rerank", metavar="SPEC",
                        help="produce RUN by re-ranking REFERENCE_RUN with this ranker")
    origin.add_argument("--depth", type=int, default=1000, help="documents re-ranked per query")
    origin.add_argument("--out", default="abnirml-out",
                        help="output directory (default: abnirml-out, like run)")

    compare = sub.add_parser(
        "compare", help="per probe: did behaviour change between two rankers or two runs?")
    compare.add_argument("dir_a", metavar="DIR_A", help="output directory of 'abnirml run'")
    compare.add_argument("dir_b", metavar="DIR_B", nargs="?",
                         help="a second output directory (default: DIR_A)")
    compare.add_argument("--a", dest="ranker_a", metavar="RANKER", help="ranker of DIR_A")
    compare.add_argument("--b", dest="ranker_b", metavar="RANKER", help="ranker of DIR_B")
    compare.add_argument("--alpha", type=float, help="significance level (default: the run's)")
    compare.add_argument("--subsets", default="all",
                         help="comma-separated subsets to compare (default: all)")
    compare.add_argument("--out", help="write compare.csv and compare.md here")
    from abnirml.evaluation.stats.significance import add_arguments as add_stats_arguments

    add_stats_arguments(compare, inherit=True)


def cmd_rank_origin(args: argparse.Namespace) -> int:
    from abnirml.data.trec import read_qrels, read_run, run_text
    from abnirml.evaluation.analyses.rank_origin import (
        csv_text,
        parse_ranges,
        ranges_for_depth,
        rank_origin,
        rerank_in_workspace,
        run_depth,
    )
    from abnirml.report import plots
    from abnirml.report.html import Figure, Section, page

    out = Path(args.out)
    check_output_folder(out, RANK_ORIGIN_FILES,
                        inputs=[p for p in (args.reference, args.run, args.qrels) if p])
    reference = read_run(args.reference)
    if args.rerank:
        if args.run:
            raise ConfigError("give either RUN or --rerank, not both")
        from abnirml.rankers.base import RankerSpec

        spec = RankerSpec.parse(args.rerank)     # before any work: a bad @name stops here
        from abnirml.evaluation.execution.workspace import SessionSettings

        run = rerank_in_workspace(reference, args.rerank, args.collection,
                                  SessionSettings.from_args(args), args.depth)
        run_label = spec.label
    elif args.run:
        run = read_run(args.run)
        run_label = Path(args.run).name
    else:
        raise ConfigError("give RUN, or --rerank SPEC to produce it")
    qrels = read_qrels(args.qrels) if args.qrels else None
    _check_runs_match(args, reference, run, qrels)
    ranges = (parse_ranges(args.ranges) if args.ranges
              else ranges_for_depth(run_depth(reference, run)))
    origin = rank_origin(reference, run, qrels, ranges)
    contents: dict[str, bytes] = {}
    if args.rerank:
        from abnirml.rankers.base import file_label

        # the ranker's name as the run's tag
        contents["reranked.run"] = run_text(run, tag=file_label(spec.label)).encode("utf-8")
    contents["rank_origin.csv"] = csv_text(origin).encode("utf-8")
    meta = {"reference": Path(args.reference).name, "run": run_label,
            "ranges": [r.label for r in ranges], "queries": origin.queries,
            "skipped": origin.skipped}
    contents["rank_origin.json"] = (json.dumps(meta, indent=2, allow_nan=False)
                                    + "\n").encode("utf-8")
    section = Section("rank-origin", f"Rank origin: {run_label} vs {meta['reference']}",
                      f"{counted(origin.queries, 'query')}.")
    for subset in origin.subsets():
        rows = origin.rows(subset)
        if not rows:
            continue
        title = f"{run_label} vs {meta['reference']} ({subset})"
        png = plots.heatmap(origin.matrix(subset), rows, origin.columns, title,
                            "reference rank", "run rank")
        name = "rank_origin_" + "".join(c if c.isalnum() else "-" for c in subset) + ".png"
        contents[name] = png
        section.figures.append(Figure(title, png, title))
    contents["rank_origin.html"] = page("abnirml rank origin", [section]).encode("utf-8")
    from abnirml.files.ownership import write_recorded

    # into an ``abnirml run`` folder: recorded in its manifest before and after writing, so
    # the next run replaces them like its own whenever this command is killed
    out.mkdir(parents=True, exist_ok=True)
    write_recorded(out, contents)
    skipped = origin.skipped.get("queries_missing_from_reference", 0)
    print(f"abnirml: rank origin over {counted(origin.queries, 'query')}"
          + (f" ({counted(skipped, 'query')} absent from the reference run left out)"
             if skipped else "")
          + f" → {out / 'rank_origin.csv'}")
    return 0


def _check_runs_match(args: argparse.Namespace, reference: Run, run: Run,
                      qrels: Qrels | None) -> None:
    """Refuse a run or qrels of another collection before writing anything: with no query
    in common the counts are empty (or every document 'unjudged'), which would read as a
    result rather than the mistake it is."""
    shared = run.keys() & reference.keys()
    if not shared:
        what = f"--rerank {args.rerank}" if args.rerank else args.run
        raise ConfigError(
            f"{what} and {args.reference} share no query id ({len(run)} vs "
            f"{len(reference)} queries): are they runs of one collection?")
    if qrels is not None and not shared & qrels.keys():
        raise ConfigError(
            f"{args.qrels}: the qrels judge none of the {len(shared)} queries the runs share "
            "(qrels of another collection?)")


def _check_same_collection(dir_a: Path, dir_b: Path) -> None:
    """Refuse folders run on different collections: their probes' samples cannot pair up."""
    from abnirml.files.run_names import RUN_INFO
    from abnirml.report.run_outputs import read_run_info

    def identity(folder: Path) -> dict[str, Any] | None:
        path = folder / RUN_INFO
        if not path.is_file():
            return None
        info = read_run_info(path).get("collection")
        if not isinstance(info, dict):
            return None
        return {k: info.get(k) for k in ("source", "queries", "documents", "judgments")}

    a, b = identity(dir_a), identity(dir_b)
    if a is not None and b is not None and a != b:
        raise ConfigError(f"{dir_a} and {dir_b} were run on different collections "
                          f"({a['source']}, {a['documents']} documents vs {b['source']}, "
                          f"{b['documents']} documents); compare runs of one collection")


def cmd_compare(args: argparse.Namespace) -> int:
    from abnirml.evaluation.analyses.compare import compare, pick_ranker
    from abnirml.evaluation.execution.score_file import load_scores
    from abnirml.evaluation.stats.statistics import check_alpha
    from abnirml.files.run_names import SCORES
    from abnirml.report.export import to_csv
    from abnirml.report.tables import to_markdown

    dir_a = Path(args.dir_a)
    dir_b = Path(args.dir_b) if args.dir_b else dir_a
    if args.out:     # before any work: a hand-edited compare.md is never replaced
        check_owned_files(Path(args.out), COMPARE_FILES)
    store_a = load_scores(dir_a / SCORES)
    store_b = store_a if dir_b == dir_a else load_scores(dir_b / SCORES)
    if dir_b != dir_a:
        _check_same_collection(dir_a, dir_b)
    if dir_b == dir_a and args.ranker_a is None and args.ranker_b is None:
        names = store_a.ranker_names
        if len(names) != 2:
            raise ConfigError(f"{dir_a} holds {len(names)} rankers; name them with --a and --b")
        ranker_a, ranker_b = names
    else:
        ranker_a = pick_ranker(store_a, args.ranker_a, "a")
        ranker_b = pick_ranker(store_b, args.ranker_b, "b")
    if args.alpha is not None:
        check_alpha(args.alpha)
    subsets = _checked_subsets(args.subsets, store_a)
    from abnirml.evaluation.stats.significance import from_arguments

    stats = from_arguments(args, store_a.stats)
    rows = compare(store_a, ranker_a, store_b, ranker_b, args.alpha, subsets, stats)
    if not any(r.p_value is not None for r in rows):
        reasons = sorted({r.note for r in rows if r.note})
        untested = _untested(rows, store_a, ranker_a)
        if untested:
            reasons.append(untested)
        raise ConfigError(f"nothing to compare between {dir_a} and {dir_b}: "
                          f"{'; '.join(reasons or ['no probe in common'])}")
    table = comparison_table(rows, f"A: {ranker_a} ({dir_a})", f"B: {ranker_b} ({dir_b})",
                             stats, (ranker_a, ranker_b), run_labels(dir_a, dir_b))
    print(to_markdown(table))
    changed = sum(1 for r in rows if r.significant)
    print(f"\n{changed} of {sum(1 for r in rows if r.p_value is not None)} probe tests differ "
          f"significantly ({_test_words(stats)} on per-sample effects).")
    if args.out:
        from abnirml.markup import escape_md

        out = Path(args.out)
        check_owned_files(out, COMPARE_FILES)      # again: nobody put one there meanwhile
        write_owned_files(out, {
            "compare.csv": to_csv(table),
            "compare.md": f"# {table.title}\n\n{escape_md(table.note)}\n\n"
                          f"{to_markdown(table)}\n"})
    return 0


def _checked_subsets(given: str, store: ScoreStore) -> list[str]:
    """``--subsets``' names, each one the runs have (``all`` and their grade bands): an
    unknown name would otherwise match no sample and read as "nothing in common"."""
    from abnirml.errors import did_you_mean
    from abnirml.evaluation.execution.experiment import ALL

    known = [ALL, *(name for name, _, _ in store.grade_bands)]
    subsets = [s.strip() for s in given.split(",") if s.strip()]
    if not subsets:
        raise ConfigError(f"--subsets {given!r} names no subset (these runs have: "
                          f"{', '.join(known)})")
    for subset in subsets:
        if subset not in known:
            raise ConfigError(f"--subsets: no subset {subset!r}{did_you_mean(subset, known)} "
                              f"(these runs have: {', '.join(known)})")
    return subsets


def _untested(rows: Sequence[ProbeComparison], store: ScoreStore, ranker: str) -> str:
    """Why the probes both runs have got no test, when they did not (their samples come
    from fewer queries than a test needs), in a few words; '' when no probe is shared."""
    import numpy as np

    shared = [r for r in rows if not r.note]
    if not shared:
        return ""
    queries: set[int] = set()
    for probe in {r.probe for r in shared}:
        scores = store.scores.get((probe, ranker))
        if scores is not None and scores.cluster is not None and scores.cluster.size:
            queries.add(int(np.unique(scores.cluster).size))
    probes = len({r.probe for r in shared})
    if queries and max(queries) < 2:
        return (f"{probes} probe(s) in common, whose samples come from 1 query each; a test "
                "needs samples from at least 2 queries")
    if all(r.n == 0 for r in shared):
        return f"{probes} probe(s) in common, with no samples in the subsets asked for"
    return (f"{probes} probe(s) in common, and no test is defined for them (too few samples "
            "or queries)")


COMPARE_FILES = ("compare.csv", "compare.md")
"""The files ``compare --out`` writes (recorded in the folder's manifest)."""

RANK_ORIGIN_FILES = {"rank_origin.csv": b"subset,run_range,", "rank_origin.json": b"{",
                     "rank_origin.html": b"<!DOCTYPE html>", "rank_origin_*.png": b"\x89PNG",
                     "reranked.run": b""}
"""The files ``rank-origin --out`` writes (``reranked.run``: any run, unless it is an input)."""


def _test_words(stats: StatsConfig) -> str:
    from abnirml.evaluation.stats.corrections import correction_label
    from abnirml.evaluation.stats.stat_tests import get_test

    correction = correction_label(stats.correction)
    return (f"two-sided {get_test(stats.test).label}, {correction} correction "
            "over the probes compared")


def run_labels(dir_a: Path, dir_b: Path) -> tuple[str, str]:
    """Short names that tell two run folders apart: their folder names, with as many parent
    folders as it takes (``runs/v1/out`` and ``runs/v2/out``: ``v1/out``, ``v2/out``); one
    folder given twice is ``A: out`` and ``B: out``."""
    a, b = Path(dir_a).resolve().parts, Path(dir_b).resolve().parts
    if a == b:
        return f"A: {a[-1] if len(a) > 1 else dir_a}", f"B: {b[-1] if len(b) > 1 else dir_b}"
    for depth in range(1, max(len(a), len(b)) + 1):
        tail_a, tail_b = "/".join(a[-depth:]), "/".join(b[-depth:])
        if tail_a != tail_b:
            return tail_a.lstrip("/") or "/", tail_b.lstrip("/") or "/"
    return str(dir_a), str(dir_b)


def comparison_table(rows: Sequence[ProbeComparison], label_a: str, label_b: str,
                     stats: StatsConfig | None = None,
                     names: tuple[str, str] = ("A", "B"),
                     runs: tuple[str, str] = ("A", "B")) -> Table:
    """The comparison as a table whose columns name the two rankers (``names``; the same
    ranker of two runs is named with its run, ``runs``: ``bm25 (v1)`` and ``bm25 (v2)``,
    from :func:`run_labels`). Differs: ``yes`` when the
    corrected test rejects, ``interval only`` when only the difference's interval excludes
    0 (it is per probe, not corrected), ``no`` when neither says so."""
    from abnirml.evaluation.stats.significance import StatsConfig
    from abnirml.report.tables import Table, signed_text

    stats = stats if stats is not None else StatsConfig()
    name_a, name_b = names
    if name_a == name_b:
        name_a, name_b = f"{name_a} ({runs[0]})", f"{name_b} ({runs[1]})"

    def fmt(value: float | None) -> str:
        return "–" if value is None else signed_text(value)

    def interval(r: ProbeComparison) -> str:
        if r.diff_ci_low is None or r.diff_ci_high is None:
            return "–"
        return f"[{signed_text(r.diff_ci_low)}, {signed_text(r.diff_ci_high)}]"

    def differs(r: ProbeComparison) -> str:
        if r.significant:
            return "yes"
        excludes = (r.diff_ci_low is not None and r.diff_ci_high is not None
                    and (r.diff_ci_low > 0 or r.diff_ci_high < 0))
        return "interval only" if excludes else "no"

    body = [[r.probe, r.subset, str(r.n), fmt(r.score_a), fmt(r.score_b), interval(r),
             f"{r.changed:,}", "–" if r.p_value is None else f"{r.p_value:.3g}",
             differs(r), r.note] for r in rows]
    return Table("Behaviour comparison", ["Probe", "Subset", "Samples", name_a, name_b,
                                          f"{name_b} − {name_a} interval", "Effects changed",
                                          "p", "Differs", "Note"], body,
                 f"{label_a}; {label_b}. Differs: yes when the {_test_words(stats)} over "
                 "the per-sample effects rejects; interval only when the difference's "
                 "interval excludes 0 but the corrected test does not reject. "
                 f"{name_b} − {name_a} interval: {100 * stats.ci_level:g} % query-clustered "
                 "bootstrap interval (of zero width when every sample has the same effect "
                 "under both).")
