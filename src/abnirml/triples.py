"""Probe samples as training triples: the "fix the model" loop of Rennings et al.

A diagnostic dataset says which of two texts a good ranker should prefer; written as
``{query, positive, negative, …}`` lines it becomes training data in the shape
sentence-transformers (anchor, positive, negative columns, in that order) and common
reranker training scripts read. With a ranker, ``--only violated`` keeps the samples that
ranker gets wrong (it scores the negative above the positive by more than its δ), which is
where fine-tuning has something to learn.

Only probes whose claim has a direction can be exported. Each probe says which text should
win through its ``prefers`` attribute (``"doc1"``, ``"doc2"`` or None); a probe without
one makes no claim. The built-in probes declare:

* ``axiom:*`` — d1, the document the axiom prefers (TFC2 compares score *differences* of
  three documents and has no single pair, so it is not exported);
* ``mmp:relevance:*``, ``mmp:tf:*``, ``mmp:sumtf:*``, ``mmp:overlap:*`` — d1, the more
  relevant / more query-term-matching document (``mmp:length:*`` makes no claim);
* ``tmp:`` manipulations that damage the text — typos, word/sentence/noun-chunk reorderings,
  an added non-relevant sentence, the query terms masked (Drop-Q) — d2, the original.
  Manipulations a ranker should be indifferent to (case folding, stopword removal…) or
  that add query text make no claim and are not exported;
* transfer and query-variation probes make descriptive, not normative, claims and are not
  exported.

A user's probe is exported the same way once it sets ``prefers``.
"""

from __future__ import annotations

import json
import os
import secrets
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from abnirml.errors import ConfigError
from abnirml.evaluation.execution.workspace import SessionSettings

if TYPE_CHECKING:
    from abnirml.evaluation.execution.experiment import ProbeScores
    from abnirml.probes.base import SampleTable

ONLY = ("all", "violated", "satisfied")

SIDES = ("doc1", "doc2")


def preferred_side(probe: Any) -> str | None:
    """``"doc1"`` or ``"doc2"``: the text ``probe`` says should win (its ``prefers``); None
    when it makes no such claim (see the module docstring)."""
    side = getattr(probe, "prefers", None)
    if side is not None and side not in SIDES:
        raise ConfigError(f"probe {probe.name}: prefers must be 'doc1', 'doc2' or None, "
                          f"got {side!r}")
    return side


@dataclass(frozen=True)
class ExportConfig:
    out: str
    probes: list[str]
    collection: str = "demo"
    ranker: str | None = None
    only: str = "all"
    seed: int = 0
    options: dict[str, Any] = field(default_factory=dict)   # "FAMILY.KEY" → value
    #: candidates, cache, progress … (the scoring commands' shared settings)
    session: SessionSettings = field(default_factory=SessionSettings)


def export_triples(config: ExportConfig) -> dict[str, int]:
    """Write the triples of ``config.probes`` to ``config.out``; returns lines per probe."""
    if config.only not in ONLY:
        raise ConfigError(f"--only must be one of {', '.join(ONLY)}, got {config.only!r}")
    if config.only != "all" and config.ranker is None:
        raise ConfigError(f"--only {config.only} needs --ranker: it keeps the samples that "
                          "ranker gets wrong (violated) or right (satisfied)")
    check_target(Path(config.out))
    from abnirml.probes.probe_registry import select_probes

    selected = select_probes(config.probes)
    directed = [p for p in selected if preferred_side(p) is not None]
    left_out = [p.name for p in selected if preferred_side(p) is None]
    if left_out:
        warnings.warn(f"{len(left_out)} probe(s) make no claim about which text should win "
                      f"and are not exported: {', '.join(left_out[:8])}"
                      f"{' …' if len(left_out) > 8 else ''}", stacklevel=2)
    if not directed:
        raise ConfigError("none of the selected probes says which text should win; "
                          "try axiom, mmp:relevance:*, mmp:tf:* or tmp:typos")
    tables, scores, deltas, ranker_name = _tables_and_scores(config, [p.name for p in directed])
    counts: dict[str, int] = {}
    lines = _lines(directed, tables, scores, deltas, ranker_name, config.only, counts)
    _write_atomically(Path(config.out), lines)
    return counts


def _tables_and_scores(config: ExportConfig, names: list[str]
                       ) -> tuple[dict[str, SampleTable], dict[str, ProbeScores],
                                  dict[str, float], str | None]:
    """Sample tables (and, with a ranker, per-sample scores and δ) for the probes."""
    if config.ranker is not None:
        from abnirml.pipeline import RunConfig, run

        output = run(RunConfig(
            collection=config.collection, rankers=[config.ranker], probes=names, out=None,
            options=dict(config.options), seed=config.seed, session=config.session,
            examples_per_probe=0, effectiveness=False))
        result = output.result
        (ranker_name,) = result.calibrations
        delta = result.calibrations[ranker_name].delta
        scores = {name: result.probe_scores[(name, ranker_name)] for name in names}
        return result.tables, scores, {name: delta for name in names}, ranker_name
    from abnirml.evaluation.execution.experiment import build_tables
    from abnirml.evaluation.execution.workspace import Workspace
    from abnirml.probes.family_registry import resolve_options
    from abnirml.probes.probe_registry import select_probes

    resolved = resolve_options(dict(config.options))   # typed and validated before work
    workspace = Workspace(config.collection, config.session, config.seed)
    tables = build_tables(select_probes(names), workspace.probe_context(resolved),
                          config.session.progress)
    return tables, {}, {}, None


def _lines(probes: Sequence[Any], tables: Mapping[str, SampleTable],
           scores: Mapping[str, ProbeScores], deltas: Mapping[str, float],
           ranker_name: str | None, only: str, counts: dict[str, int]) -> Iterator[str]:
    for probe in probes:
        table = tables[probe.name]
        side = preferred_side(probe) or "doc1"     # the caller selected directed probes only
        n = len(table)
        keep = np.ones(n, dtype=bool)
        s_pos = s_neg = None
        if ranker_name is not None:
            s1, s2 = scores[probe.name].score1, scores[probe.name].score2
            s_pos, s_neg = (s1, s2) if side == "doc1" else (s2, s1)
            margin = s_pos - s_neg
            if only == "violated":
                keep = margin < -deltas[probe.name]
            elif only == "satisfied":
                keep = margin > deltas[probe.name]
        counts[probe.name] = int(keep.sum())
        for i in np.flatnonzero(keep).tolist():
            sample = table.sample(i)
            meta = sample.meta
            positive, negative = ((sample.doc1, sample.doc2) if side == "doc1"
                                  else (sample.doc2, sample.doc1))
            docno_pos, docno_neg = _docnos(meta, side)
            line: dict[str, Any] = {
                "query": sample.query, "positive": positive, "negative": negative,
                "probe": probe.name, "qid": meta.get("qid"),
                "docno_positive": docno_pos, "docno_negative": docno_neg,
            }
            if s_pos is not None and s_neg is not None:
                line.update(ranker=ranker_name, score_positive=float(s_pos[i]),
                            score_negative=float(s_neg[i]))
            yield json.dumps(line, ensure_ascii=False, allow_nan=False)


def _docnos(meta: Any, side: str) -> tuple[Any, Any]:
    first = meta.get("docno1", meta.get("docno"))
    second = meta.get("docno2", meta.get("docno"))
    if meta.get("docno") is not None and "docno1" not in meta:
        first = None                    # a manipulation: d1 is the manipulated text
    return (first, second) if side == "doc1" else (second, first)


TRIPLE_KEYS = frozenset({"query", "positive", "negative", "probe"})


def check_target(path: Path) -> None:
    """Refuse, before any work, an ``OUT`` whose replacement would destroy a user's data.

    The target is replaced whole, so only a new name, an empty file or a triples file an
    earlier export wrote (its first line a JSON object with the triple fields) may be given:
    naming ``queries.tsv`` or a notes file by mistake must stop with one line, not erase it.
    """
    from abnirml.files.output_folders import refuse_path_under_file
    from abnirml.files.ownership import kind_of

    if path.is_symlink() and not path.exists():
        raise ConfigError(f"{path}: is a symbolic link to a missing file; give a plain file name")
    if path.is_symlink():
        # replacing it would swap the link for a file; writing through it would change a
        # file elsewhere that this name only points to
        raise ConfigError(f"{path}: is a symbolic link; export-triples writes only a plain "
                          "file it can replace whole (give the file's own name or a new one)")
    kind = kind_of(path)
    if kind == "folder":
        raise ConfigError(f"{path}: is a directory; expected the name of a .jsonl file to write")
    if kind not in (None, "regular file"):    # never opened: a FIFO would block forever
        raise ConfigError(f"{path}: is a {kind}, not a regular file; export-triples writes "
                          "only regular files (give a file name)")
    refuse_path_under_file(path, str(path))
    if kind is None:
        return
    try:
        with path.open("rb") as handle:
            first = handle.readline(1 << 20)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it to check what it holds ({exc.strerror})"
                          ) from None
    if first.strip() and not _is_triple_line(first):
        raise ConfigError(f"{path}: exists and is not a triples file written by "
                          "export-triples; refusing to overwrite it (give a new name)")


def _is_triple_line(raw: bytes) -> bool:
    try:
        record = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return isinstance(record, dict) and record.keys() >= TRIPLE_KEYS


def _write_atomically(path: Path, lines: Iterator[str]) -> None:
    """Write to a temporary sibling and rename, so a failure never leaves half a file."""
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ConfigError(f"{path}: folder {parent} does not exist")
    while True:      # mode 0666 less the umask, as for any file the user writes
        tmp = parent / f".{path.name}.{secrets.token_hex(4)}"
        try:
            handle = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            for line in lines:
                out.write(line + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def add_parser(sub: Any) -> None:
    """The ``abnirml export-triples`` subcommand."""
    parser = sub.add_parser("export-triples", help="write probe samples as training triples "
                            "{query, positive, negative, …} (JSON lines)")
    parser.add_argument("out", metavar="OUT.jsonl")
    parser.add_argument("--probe", action="append", dest="probes", required=True,
                        metavar="PATTERN", help="probe name, glob or family; repeatable")
    parser.add_argument("--collection", default="demo",
                        help="'demo' (shipped), a directory of TREC files, or irds:<id>")
    parser.add_argument("--ranker", metavar="SPEC", help="score the samples with this ranker "
                        "(adds its scores; needed for --only)")
    parser.add_argument("--only", choices=ONLY, default="all",
                        help="violated: the ranker prefers the negative by more than its δ")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--queries", metavar="N|FILE",
                        help="only these queries: N judged queries drawn with --seed, or a "
                             "file of query ids, one a line")
    parser.add_argument("--candidates", metavar="NAME|FILE")
    parser.add_argument("--candidate-depth", type=int, default=100)
    parser.add_argument("--cache", default="default", help="score cache file")
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--quiet", action="store_true")


def cmd_export_triples(args: Any, options: dict[str, Any]) -> int:
    """The subcommand's body; ``options`` are the parsed ``--option`` values (the CLI
    parses them, so this module never imports the CLI back)."""
    counts = export_triples(ExportConfig(
        out=args.out, probes=args.probes, collection=args.collection, ranker=args.ranker,
        only=args.only, seed=args.seed, options=options,
        session=SessionSettings.from_args(args)))
    total = sum(counts.values())
    print(f"abnirml: wrote {total:,} triples from {len(counts)} probe(s) → {args.out}")
    return 0
