"""The ``abnirml`` command.

Subcommands: ``run`` (probe rankers on a collection), ``report`` (rebuild the report from a
results directory), ``probes`` and ``rankers`` (list what is available), ``masking``
(query-term masking analysis), ``rank-origin`` and ``compare`` (see
:mod:`abnirml.analysis_cli`). Errors in the input
or options print one line ``abnirml: error: …`` and exit with status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from abnirml.counts import counted
from abnirml.errors import AbnirmlError, ConfigError

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def parse_number_map(text: str, what: str) -> tuple[float | None, dict[str, float]]:
    """``0.5`` (one value for all) or ``name=value`` → (value, {}) or (None, {name: value})."""
    if "=" in text:
        name, _, raw = text.rpartition("=")
        return None, {name: _float(raw, what)}
    return _float(text, what), {}


def _float(raw: str, what: str) -> float:
    """A finite number in plain notation (no ``nan``, ``1_0`` or full-width digits)."""
    from abnirml.strict_numbers import strict_float

    try:
        return strict_float(raw.strip())
    except ValueError as exc:
        raise ConfigError(f"{what}: {exc}") from None


def parse_grade_bands(text: str) -> tuple[tuple[str, int, int], ...]:
    """``non-relevant=0-1,relevant=2-3`` → bands."""
    from abnirml.strict_numbers import strict_int

    bands: list[tuple[str, int, int]] = []
    for part in text.split(","):
        name, sep, span = part.partition("=")
        # the first '-' after a digit separates the bounds, so negative grades read: -2--1
        split = next((i for i in range(1, len(span)) if span[i] == "-" and span[i - 1].isdigit()),
                     -1)
        try:
            if not sep or split < 0:
                raise ValueError
            band = (name.strip(), strict_int(span[:split].strip()),
                    strict_int(span[split + 1:].strip()))
        except ValueError:
            raise ConfigError(f"--grade-bands: {part!r} is not NAME=LOW-HIGH") from None
        if band[1] > band[2] or not band[0] or band[0] == "all":
            raise ConfigError(f"--grade-bands: invalid band {part!r}")
        if any(band[0] == seen for seen, _, _ in bands):
            raise ConfigError(f"--grade-bands: band name {band[0]!r} is given twice (each "
                              "band is one row of results)")
        bands.append(band)
    return tuple(bands)


def parse_tolerance(text: str) -> float | dict[str, float]:
    """A tolerance ≥ 0 for all controls, or ``control=value,…`` for named controls."""
    from abnirml.errors import did_you_mean
    from abnirml.probes.measure_match import CHARACTERISTICS

    def checked(raw: str) -> float:
        value = _float(raw, "--mmp-tolerance")
        if value < 0:
            raise ConfigError(f"--mmp-tolerance: {raw.strip()} must be ≥ 0")
        return value

    if "=" not in text:
        return checked(text)
    out = {}
    for part in text.split(","):
        name, _, raw = part.partition("=")
        name = name.strip()
        if name not in CHARACTERISTICS:
            raise ConfigError(f"--mmp-tolerance: unknown control {name!r}"
                              f"{did_you_mean(name, CHARACTERISTICS)}; known: "
                              f"{', '.join(CHARACTERISTICS)}")
        out[name] = checked(raw)
    return out


def _check_count(value: int, name: str, low: int) -> None:
    """Integer options argparse accepted but whose range it does not know."""
    if value < low:
        raise ConfigError(f"{name} must be ≥ {low}, got {value}")


def parse_option(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` with the value kept as text: each family's typed options convert it
    (strictly, through :mod:`abnirml.strict_numbers`) and name the key when it is not valid."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--option {text!r} is not KEY=VALUE")
    return key.strip().replace("-", "_"), raw


def scoring_flags() -> argparse.ArgumentParser:
    """The flags of every command that loads a collection and scores it with rankers
    (``run``, ``expect``-style sessions, ``masking``, ``rank-origin``), defined once."""
    flags = argparse.ArgumentParser(add_help=False)
    flags.add_argument("--collection", default="demo",
                       help="'demo' (shipped), a directory of TREC files, or irds:<id>")
    flags.add_argument("--queries", metavar="N|FILE",
                       help="only these queries: N judged queries drawn with --seed, or a "
                            "file of query ids, one a line (recorded in run.json)")
    flags.add_argument("--cache", default="default",
                       help="score cache file (default: $ABNIRML_CACHE, else "
                            "$XDG_CACHE_HOME/abnirml/scores.sqlite, ~/.cache/abnirml/scores.sqlite "
                            "without XDG_CACHE_HOME)")
    flags.add_argument("--no-cache", action="store_true", help="keep scores in memory only")
    flags.add_argument("--batch-size", type=int, help="pairs per ranker call")
    flags.add_argument("--device", default="cpu",
                       help="cpu, cuda[:N], mps or auto (the best available); neural rankers")
    flags.add_argument("--stopwords", default="default", help="default, spacy, none or a file")
    flags.add_argument("--allow-pickle", action="store_true",
                       help="allow loading pickled model files from user paths (unsafe)")
    flags.add_argument("--quiet", action="store_true", help="no progress bars")
    return flags


def session_flags() -> argparse.ArgumentParser:
    """:func:`scoring_flags` plus the output directory and the candidate set (``run``,
    ``masking``); ``rank-origin`` takes its candidates from the reference run instead."""
    flags = argparse.ArgumentParser(add_help=False, parents=[scoring_flags()])
    flags.add_argument("--out", default="abnirml-out", help="output directory")
    flags.add_argument("--candidates", metavar="NAME|FILE",
                       help="run giving each query's candidates (default: the collection's "
                            "bm25 run, else a BM25 top 100 computed over the collection)")
    flags.add_argument("--candidate-depth", type=int, default=100)
    return flags


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="abnirml", description="abnirml: probe how ranking models behave (run, report, "
        "compare; 'abnirml COMMAND --help' for each command)")
    from abnirml import __version__

    parser.add_argument("--version", action="version", version=f"abnirml {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    session = session_flags()
    run = sub.add_parser("run", parents=[session],
                         help="probe rankers on a collection and write a report")
    run.add_argument("--ranker", action="append", dest="rankers", metavar="SPEC",
                     help="ranker spec, repeatable (default: bm25, ql, tfidf); "
                          "pyterrier:MODULE:FACTORY imports MODULE and runs its code, "
                          "as --plugin does")
    run.add_argument("--probe", action="append", dest="probes", metavar="PATTERN",
                     help="probe name, glob (mmp:*) or family; repeatable (default: all)")
    run.add_argument("--delta", action="append", default=[], metavar="[RANKER=]VALUE",
                     help="fixed δ for all rankers or one ranker (skips calibration)")
    from abnirml.evaluation.stats.significance import STATISTICS_DEFAULTS
    from abnirml.evaluation.stats.significance import add_arguments as add_stats_arguments

    run.add_argument("--alpha", type=float, default=STATISTICS_DEFAULTS.alpha,
                     help="significance level (%(default)s)")

    add_stats_arguments(run)
    run.add_argument("--seed", type=int, default=0, help="seed for every random choice")
    run.add_argument("--grade-bands", type=parse_grade_bands,
                     help="breakdown subsets, e.g. non-relevant=0-1,relevant=2-3")
    run.add_argument("--mmp-tolerance", type=parse_tolerance,
                     help="control tolerance: a number or control=value,…")
    run.add_argument("--option", action="append", default=[], metavar="FAMILY.KEY=VALUE",
                     help="probe option, e.g. tmp.typo_rate=0.2 (each family's options: "
                          "docs/reference/probes.md), repeatable")
    run.add_argument("--transfer-data", metavar="DIR",
                     help="folder holding the dataset-transfer corpora (mrpc/, jfleg/, "
                          "turkcorpus/, asset/, gyafc/, wnc/, xsum/, cnndm/, nq/); "
                          "or demo for the shipped demo corpus; transfer probes without "
                          "data are skipped as no-data")
    run.add_argument("--pairs", metavar="FILE",
                     help="add a transfer probe over a TSV/JSONL file of text pairs "
                          "(columns doc1, doc2, optional query, id)")
    run.add_argument("--name", metavar="dtp:NAME",
                     help="name of the --pairs probe (default dtp:<file stem>)")
    run.add_argument("--pairs-symmetric", action="store_true",
                     help="the --pairs probe is symmetric (count |diff| > δ only)")
    run.add_argument("--examples", type=int, default=3, help="example samples per probe")
    run.add_argument("--workers", type=int, default=1,
                     help="score each ranker's batches in N worker processes")
    run.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                     help="score batches as Ray tasks ('local' or a cluster address)")
    run.add_argument("--ray-tasks", type=int, metavar="N",
                     help="Ray tasks in flight (default: one per CPU of the cluster, or per "
                          "GPU share for a GPU ranker)")
    run.add_argument("--ray-gpus", type=float, metavar="F",
                     help="GPUs each Ray task asks for, a fraction shares one (default: 1 "
                          "with --device cuda, else none)")
    run.add_argument("--variant-group", action="append", default=[], metavar="NAME=SPEC,SPEC,…",
                     help="rankers that are seeds/checkpoints of one model (variance table)")
    run.add_argument("--no-effectiveness", action="store_true",
                     help="skip re-ranking the candidates for nDCG@10 / MAP / MRR")
    run.add_argument("--significance-mark", choices=("significant", "not-significant"),
                     default="significant",
                     help="what the report's * marks: significant scores (default, +0.40*) "
                          "or, as ABNIRML printed them, scores that are not (* +0.40)")
    run.add_argument("--keep", action="store_true",
                     help="stop instead of replacing an --out folder that holds a run of "
                          "other rankers or probes (without it, the replacement is named "
                          "in one line)")
    run.add_argument("--skip-unavailable", action="store_true",
                     help="run the probes whose optional dependencies are installed and list "
                          "the others as left out (default: stop, naming what is missing)")

    report = sub.add_parser("report", help="rebuild report.md, report.html and tables/ "
                                           "from a results directory")
    report.add_argument("directory")
    report.add_argument("--significance-mark", choices=("significant", "not-significant"),
                        help="what the * marks (default: the run's choice, else "
                             "significant scores)")

    from abnirml.analysis_cli import add_parsers

    add_parsers(sub, scoring_flags())

    from abnirml.triples import add_parser as add_triples_parser

    add_triples_parser(sub)

    from abnirml.mechanism.cli import add_parser as add_patch_parser

    add_patch_parser(sub, scoring_flags())

    masking = sub.add_parser("masking", parents=[session],
                             help="query-term masking: rank candidates with original, Only-Q "
                                  "and Drop-Q documents (Rau & Kamps)")
    masking.add_argument("--ranker", action="append", dest="rankers", metavar="SPEC",
                         help="ranker spec, repeatable (default: bm25)")
    masking.add_argument("--mask-token", help="one mask token for every ranker "
                         "(default: each ranker's own, [MASK] unless it says otherwise)")
    masking.add_argument("--rel-level", type=int, default=2,
                         help="lowest grade counted relevant by MAP and MRR (2)")

    sub.add_parser("probes", help="list the available probes")
    sub.add_parser("rankers", help="list the ranker families, their parameters and whether "
                                      "each is installed and runs offline here")
    train = sub.add_parser("train", help="train a learned ranker (knrm, cknrm, lgbm) with "
                                         "query-level cross-validation")
    train.add_argument("--collection", default="demo", help="as for run (needs judgments)")
    train.add_argument("--model", required=True, metavar="SPEC",
                       help="knrm, cknrm or lgbm, optionally with +key=value hyperparameters")
    train.add_argument("--out", required=True, help="model directory to write")
    train.add_argument("--queries", metavar="N|FILE",
                       help="train on these queries only: N judged queries drawn with "
                            "--seed, or a file of query ids, one a line")
    train.add_argument("--seed", type=int, default=0, help="training seed")
    train.add_argument("--folds", type=int, default=5, help="query folds (5)")
    train.add_argument("--stopwords", default="default", help="default, spacy, none or a file")
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    for command in sub.choices.values():
        command.add_argument("--plugin", action="append", default=[], metavar="FILE.py|MODULE",
                             help="import a Python file or module that registers probe "
                                  "families, probes or ranker families first (its code "
                                  "runs with your permissions); repeatable "
                                  "(also $ABNIRML_PLUGINS and the 'abnirml.plugins' entry "
                                  "points)")
    return parser


def cmd_run(args: argparse.Namespace) -> int:
    from abnirml.pipeline import RunConfig, SessionSettings, StatisticsSettings, run

    _check_count(args.examples, "--examples", 0)
    _check_count(args.candidate_depth, "--candidate-depth", 1)
    _check_count(args.workers, "--workers", 1)
    if args.batch_size is not None:
        _check_count(args.batch_size, "--batch-size", 1)
    if args.ray is not None:
        from abnirml.evaluation.execution.parallel import check_ray_address

        check_ray_address(args.ray)
    if args.ray_tasks is not None:
        _check_count(args.ray_tasks, "--ray-tasks", 1)
    if (args.ray_tasks is not None or args.ray_gpus is not None) and args.ray is None:
        raise ConfigError("--ray-tasks and --ray-gpus describe Ray tasks; give --ray too")

    delta_all: float | None = None
    deltas: dict[str, float] = {}
    for text in args.delta:
        value, named = parse_number_map(text, "--delta")
        if value is not None:
            delta_all = value
        deltas.update(named)
    options = dict(parse_option(o) for o in args.option)
    if args.mmp_tolerance is not None:
        options["mmp.tolerance"] = args.mmp_tolerance
    probes = args.probes or ["all"]
    if args.transfer_data is not None or args.pairs is not None:
        from abnirml.probes.probe_registry import register_pairs_probe
        from abnirml.probes.transfer.probes import check_transfer_data

        if args.transfer_data is not None:
            options["dtp.data"] = check_transfer_data(args.transfer_data)
        if args.pairs is not None:
            name = register_pairs_probe(args.pairs, args.name, args.pairs_symmetric)
            if args.probes:
                probes.append(name)
    if args.pairs is None and (args.name or args.pairs_symmetric):
        raise ConfigError("--name and --pairs-symmetric describe a --pairs probe; give --pairs")
    config = RunConfig(
        collection=args.collection, rankers=args.rankers or ["bm25", "ql", "tfidf"],
        probes=probes, out=args.out, options=options, seed=args.seed,
        session=SessionSettings.from_args(args),
        statistics=StatisticsSettings.from_args(args, delta_all, deltas),
        examples_per_probe=args.examples, skip_unavailable=args.skip_unavailable,
        keep=args.keep, significance_mark=args.significance_mark)
    if args.variant_group:
        from abnirml.evaluation.stats.variance import parse_variant_group

        config.variant_groups = dict(parse_variant_group(g) for g in args.variant_group)
        config.rankers = args.rankers or []
    config.effectiveness = not args.no_effectiveness
    if args.grade_bands:
        config.grade_bands = args.grade_bands
    output = run(config)
    counts = output.run_info["counts"]
    n_rankers = len(output.result.summary["rankers"])
    print(f"abnirml: {len(output.result.records)} results for "
          f"{counted(output.result.summary['probes'], 'probe')} × "
          f"{counted(n_rankers, 'ranker')}; "
          f"{_work_done(counts)} → {output.out}/report.md, {output.out}/report.html")
    left_out = output.run_info.get("omitted_probes") or []
    if args.skip_unavailable and left_out:
        print(f"abnirml: left out {counted(len(left_out), 'probe')} whose optional "
              "dependencies are "
              f"missing or that have no data (listed in {output.out}/run.json and the report)")
    return 0


def _work_done(counts: Mapping[str, Any]) -> str:
    """The summary line's account of the scoring: pair scores (over the pointwise and
    pairwise rankers) and listwise windows, each only where the run had such rankers."""
    parts = [f"{counts['unique_pairs']:,} unique pairs"]
    windows = "windows_ranked" in counts
    if counts["scored"] or counts["from_cache"] or not windows:
        parts.append(f"scores over all rankers: {counts['scored']:,} computed, "
                     f"{counts['from_cache']:,} cached")
    if windows:
        parts.append(f"listwise windows: {counts['windows_ranked']:,} ranked, "
                     f"{counts.get('windows_from_cache', 0):,} cached")
    return "; ".join(parts)


def cmd_report(args: argparse.Namespace) -> int:
    from abnirml.errors import InputError
    from abnirml.run_folder import RunFolder

    folder = RunFolder(args.directory)
    directory = folder.path
    try:
        run_info = folder.read_run_info()
        if args.significance_mark is not None:
            run_info["report"] = {**run_info.get("report", {}),
                                  "significance_mark": args.significance_mark}
        folder.write_reports(folder.read_records(), run_info)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        # Hand-edited or foreign files of the right syntax but the wrong shape.
        raise InputError(f"run.json, results.jsonl or scores.npz do not have the shape "
                         f"'abnirml run' writes ({type(exc).__name__}: {exc})",
                         path=directory) from None
    print(f"abnirml: wrote {directory / 'report.md'}, {directory / 'report.html'} and "
          f"{directory / 'tables'}/")
    return 0


def cmd_masking(args: argparse.Namespace) -> int:
    from abnirml.evaluation.analyses.masking import MaskingConfig, run_masking
    from abnirml.evaluation.execution.workspace import SessionSettings

    _check_count(args.rel_level, "--rel-level", 1)
    _check_count(args.candidate_depth, "--candidate-depth", 1)

    config = MaskingConfig(
        collection=args.collection, rankers=args.rankers or ["bm25"], out=args.out,
        mask_token=args.mask_token, rel_level=args.rel_level,
        session=SessionSettings.from_args(args))
    result = run_masking(config)
    queries = max((r.queries for r in result.rows), default=0)
    print(f"abnirml: masking for {counted(len(config.rankers), 'ranker')}, "
          f"{counted(queries, 'query')} "
          f"→ {Path(args.out) / 'masking.md'}")
    return 0


def cmd_probes(_: argparse.Namespace) -> int:
    from abnirml.probes.axioms.names import side_by_side, source_of
    from abnirml.probes.family_registry import families
    from abnirml.probes.options import describe
    from abnirml.probes.probe_registry import all_probes

    for probe in all_probes():
        flag = " (symmetric)" if probe.symmetric else ""
        source = source_of(probe.name)
        print(f"{probe.name}\t{probe.family}{flag}" + (f"\t{source}" if source else ""))
    print("\naxioms both sources define (the bare name is refused):")
    for line in side_by_side():
        print(line)
    print("\noptions (--option KEY=VALUE):")
    for family in families():
        for key, default, text in describe(family.options, family.key):
            print(f"{key}\t{default}\t{text}")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from abnirml.rankers.families.learned.train import train_from_spec

    kind, path = train_from_spec(args.collection, args.model, args.out, seed=args.seed,
                                 folds=args.folds, stopwords=args.stopwords,
                                 progress=False if args.quiet else None,
                                 queries=args.queries)
    print(f"abnirml: wrote {path} (use it with --ranker {kind}:{path})")
    return 0


def cmd_rankers(_: argparse.Namespace) -> int:
    from abnirml.rankers.availability import status
    from abnirml.rankers.registry import describe_family, families, lookup

    for family in families():
        print(f"{family}\t{describe_family(family) or '(no description)'}\t{status(family)}")
        for p in lookup(family).parameters():       # type: ignore[union-attr]
            allowed = f" ({p.allowed})" if p.allowed else ""
            print(f"  +{p.name}\t{p.kind}{allowed}, default {p.default}\t{p.help}")
    return 0


COMMANDS = {"run": cmd_run, "report": cmd_report, "probes": cmd_probes, "rankers": cmd_rankers,
            "rank-origin": lambda a: _analysis("cmd_rank_origin", a),
            "compare": lambda a: _analysis("cmd_compare", a),
            "masking": cmd_masking}


def _analysis(name: str, args: argparse.Namespace) -> int:
    from abnirml import analysis_cli

    command: Callable[[argparse.Namespace], int] = getattr(analysis_cli, name)
    return command(args)


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """Warnings are for people here: one line, no source location, no secret."""
    from abnirml.errors import redact

    print(f"abnirml: warning: {redact(str(message))}", file=sys.stderr)


def _silence_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):   # stdout replaced (tests): nothing to do
        pass


def tolerant_console() -> None:
    """Let stdout and stderr show any character: a console whose encoding lacks one
    (``PYTHONIOENCODING=ascii``, a C locale) prints it as an escape such as ``\\xd7``
    instead of failing on the summary line after every file has been written."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", None) == "strict":
            reconfigure(errors="backslashreplace")


def passive_openmp_waits() -> None:
    """Let OpenMP threads sleep, not spin, while they wait (unless the user chose otherwise).

    torch and LightGBM run their CPU kernels on OpenMP threads, which by default spin between
    parallel regions. On a machine whose cores are busy with other jobs, the spinning threads
    take the cores the working ones need: on the project's shared 2-core machine one MiniLM
    forward pass took 5–7× longer in wall time (and burnt 5–7× the CPU) than with sleeping
    waits. The thread count and the work each thread does stay the same, so no score
    changes (checked: the demo's 71,740 bi-encoder sample scores are bit-identical). It must
    be set before the OpenMP runtime loads, i.e. before torch or LightGBM is imported: the
    command does it first thing, and every heavy import is lazy.
    """
    import os

    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def parse_arguments(parser: argparse.ArgumentParser,
                    argv: Sequence[str] | None) -> argparse.Namespace:
    """``parser.parse_args``, except that arguments a subcommand does not know are reported
    by that subcommand: argparse would print the top-level usage for ``run --rankers``,
    which does not show the flag the user meant. Exits 2 with ``run``'s usage instead."""
    args, extras = parser.parse_known_args(argv)
    if extras:
        command = _subparser(parser, args.command)
        import difflib

        flags = [o for action in command._actions for o in action.option_strings
                 if o.startswith("--") and o != "--help"]
        first = next((e.partition("=")[0] for e in extras if e.startswith("--")), "")
        close = difflib.get_close_matches(first, flags, n=3, cutoff=0.75) if first else []
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        command.error(f"unrecognized arguments: {' '.join(extras)}{hint}")
    return args


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The parser of subcommand ``command`` (the top-level parser if there is none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen: argparse.ArgumentParser = action.choices.get(command, parser)
            return chosen
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:        # the abnirml program itself: a second Ctrl-C ends it at once
        from abnirml.process_exit import leave_on_second_interrupt, redacted_tracebacks

        leave_on_second_interrupt(EXIT_INTERRUPTED)
        redacted_tracebacks()
    code = _main(argv)
    if argv is None:        # the abnirml program itself: end without the teardown if safe
        from abnirml.process_exit import finish

        finish(code)
    return code


def _main(argv: Sequence[str] | None) -> int:
    import warnings

    passive_openmp_waits()
    tolerant_console()
    parser = build_parser()
    try:
        # inside the try: option parsers (--grade-bands, --mmp-tolerance) raise ConfigError
        args = parse_arguments(parser, argv)
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            from abnirml.plugins import load_plugins, plugin_sources

            load_plugins(plugin_sources(args.plugin))
            return COMMANDS[args.command](args)
    except AbnirmlError as exc:
        print(f"abnirml: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        # `abnirml probes | head -2`: the reader has all it wanted. Point stdout at devnull
        # so the interpreter's final flush does not fail again, and end quietly.
        _silence_stdout()
        return 0
    except OSError as exc:
        # The file system refused something (an unreadable input, --out under a file, a full
        # disk): the user can act on it, so one line naming the path, not a traceback.
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"abnirml: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("abnirml: interrupted; scores computed so far are cached — rerun to resume",
              file=sys.stderr)
        return EXIT_INTERRUPTED


COMMANDS["train"] = cmd_train


def _export_triples(args: argparse.Namespace) -> int:
    from abnirml.triples import cmd_export_triples

    return cmd_export_triples(args, dict(parse_option(o) for o in args.option))


COMMANDS["export-triples"] = _export_triples


def _patch(args: argparse.Namespace) -> int:
    from abnirml.mechanism.cli import cmd_patch

    return cmd_patch(args, dict(parse_option(o) for o in args.option))


COMMANDS["patch"] = _patch


if __name__ == "__main__":
    sys.exit(main())
