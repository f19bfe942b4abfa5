"""The ``abnirml patch`` subcommand: its flags and what it prints."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from abnirml.counts import counted


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser],
               scoring: argparse.ArgumentParser) -> None:
    patch = sub.add_parser(
        "patch", parents=[scoring],
        help="causal activation patching on probe pairs: which layers, positions and "
             "attention heads of a transformer ranker carry a probed behaviour")
    patch.add_argument("--ranker", required=True, metavar="SPEC",
                       help="one transformer ranker: biencoder, cross-encoder, splade, monot5 "
                            "or lm (add +dtype=bf16 for bf16)")
    patch.add_argument("--probe", action="append", dest="probes", required=True,
                       metavar="PATTERN", help="probe name or glob, repeatable "
                                               "(e.g. tmp:append-query, tmp:typos)")
    patch.add_argument("--limit", type=int, default=50,
                       help="samples patched per probe (default 50; 0 = all)")
    patch.add_argument("--granularity", default="residual,heads",
                       help="residual, heads or both (comma-separated; default both)")
    patch.add_argument("--out", default="abnirml-out",
                       help="folder; results go to OUT/patching/<ranker>/")
    patch.add_argument("--seed", type=int, default=0, help="seed for choosing samples")
    patch.add_argument("--filler", default="a",
                       help="the token put into the baseline where the perturbed text adds "
                            "tokens (default a)")
    patch.add_argument("--min-difference", type=float, default=None, metavar="X",
                       help="leave out samples whose two scores differ by less (default 1e-3)")
    patch.add_argument("--resamples", type=int, default=1000,
                       help="bootstrap resamples for the intervals (0: none; at most "
                            "2,000,000, as --bootstrap)")
    patch.add_argument("--option", action="append", default=[], metavar="FAMILY.KEY=VALUE",
                       help="probe option, as for run")
    patch.add_argument("--candidates", metavar="NAME|FILE", help="as for run")
    patch.add_argument("--candidate-depth", type=int, default=100)


def cmd_patch(args: argparse.Namespace, options: dict[str, Any]) -> int:
    """Run ``abnirml patch``; ``options`` are the parsed ``--option`` values."""
    from abnirml.errors import ConfigError
    from abnirml.evaluation.execution.workspace import SessionSettings
    from abnirml.mechanism.run import PatchConfig, run_patching
    from abnirml.mechanism.study import DEFAULT_MIN_DIFFERENCE

    granularities = tuple(g.strip() for g in args.granularity.split(",") if g.strip())
    if args.limit < 0:
        raise ConfigError(f"--limit must be 0 (all) or more, got {args.limit}")
    config = PatchConfig(
        ranker=args.ranker, probes=args.probes, collection=args.collection, out=args.out,
        limit=args.limit or None, granularities=granularities, seed=args.seed,
        filler=args.filler,
        min_difference=(DEFAULT_MIN_DIFFERENCE if args.min_difference is None
                        else args.min_difference),
        resamples=args.resamples, options=options, session=SessionSettings.from_args(args),
        command="abnirml " + shlex.join(sys.argv[1:]))
    output = run_patching(config)
    for summary in output.summaries:
        top = summary.get("top_heads") or []
        heads = ", ".join(f"{h['head']} {h['median']:+.2f}" for h in top[:3])
        print(f"abnirml: patch {summary['probe']}: {counted(summary['samples'], 'sample')}, "
              f"{summary['forwards_per_sample']} forward passes each"
              + (f"; top heads (median effect) {heads}" if heads else ""))
    folder = output.folder
    if folder is not None:
        print(f"abnirml: wrote {Path(folder) / 'patching.json'} and patching.md "
              f"({output.seconds:.0f} s)")
    return 0
