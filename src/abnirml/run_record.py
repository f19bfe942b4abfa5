"""``run.json``, the record of what a run did, declared once.

A report is rebuilt from a run folder long after the run (``abnirml report``), by programs
that never saw the run's settings, so ``run.json`` is read as much as it is written. Like
:class:`~abnirml.result_fields.ResultRow` for ``results.jsonl``, :class:`RunInfo`
declares every field once — its JSON type, when the run writes it, what it means — and
the rest is drawn from it: the pipeline builds a ``RunInfo``
(:func:`abnirml.pipeline.run`), :func:`abnirml.report.run_outputs.read_run_info` — the one
reader — checks a file against it (:func:`run_info_problem`) and hands the report modules
a ``RunInfo``, and the reference page (``docs/gen_reference.py``) lists it.

Sections are written by the runs they concern (``effectiveness`` only with judgments,
``listwise`` only with a listwise ranker …), so a reader asks for a section and meets its
absence. Fields with a setting behind them — the test, the correction, α, the interval's
coverage, the resamples — have one default, the run's own
(:data:`~abnirml.evaluation.stats.significance.STATISTICS_DEFAULTS`); :func:`statistics_of`
hands a report the section with those filled in, so a ``run.json`` a hand wrote without
them reads as the settings a run would use today (the test of a file older than its
choice excepted: those runs all used the t-test). An analysis
section's inner layout belongs to the module that writes it and is typed there.
"""

from __future__ import annotations

import json
import types
from typing import (
    Annotated,
    Any,
    NotRequired,
    Required,
    TypedDict,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

from abnirml.files.run_names import RUN_INFO
from abnirml.result_fields import JSON_WORDS, About, declared_requirement

EVERY_RUN = "every run"


class CollectionInfo(TypedDict):
    """``collection``: what the probes ran on."""

    name: Annotated[str, About(EVERY_RUN, "the collection's name (`demo`, a dataset id, a "
                                          "folder's name)")]
    source: Annotated[str, About(EVERY_RUN, "the path or dataset id it was loaded from")]
    queries: Annotated[int, About(EVERY_RUN, "queries loaded")]
    documents: Annotated[int, About(EVERY_RUN, "documents with text")]
    judgments: NotRequired[Annotated[int, About(EVERY_RUN, "relevance judgments loaded")]]
    query_subset: NotRequired[Annotated[dict[str, Any], About(
        "`--queries N`", "the query subset the run kept: `given` (the N asked), `seed`, "
                         "`qids` (those drawn)")]]


class RankerInfo(TypedDict):
    """One entry of ``rankers``."""

    name: Annotated[str, About(EVERY_RUN, "the ranker's name in results.jsonl: its spec, or "
                                          "the display name given with `@name`")]
    spec: NotRequired[Annotated[str, About("rankers given a display name",
                                           "the spec the display name stands for")]]
    fingerprint: Annotated[str, About(EVERY_RUN, "what its scores depend on (model, "
                                                 "parameters, collection); the score "
                                                 "cache's key")]
    delta: Annotated[float, About(EVERY_RUN, "its δ")]
    delta_source: Annotated[str, About(EVERY_RUN, "`calibrated` or how δ was given "
                                                  "(`--delta`)")]
    calibration_queries: NotRequired[Annotated[int | None, About(
        EVERY_RUN, "queries δ was calibrated on (null when δ was given)")]]


class StatisticsInfo(TypedDict, total=False):
    """``statistics``: the test and intervals the records were computed with (the ``run``
    command's ``--test``, ``--correction``, ``--permutations``, ``--bootstrap``, ``--ci``)."""

    test: Annotated[str, About(EVERY_RUN, "the significance test (`--test`)")]
    correction: Annotated[str, About(EVERY_RUN, "the multiple-comparison correction per "
                                                "table (`--correction`)")]
    permutations: Annotated[int, About(EVERY_RUN, "rounds of the permutation test "
                                                  "(`--permutations`)")]
    bootstrap: Annotated[int, About(EVERY_RUN, "query-clustered bootstrap resamples of the "
                                               "intervals (`--bootstrap`; 0: none)")]
    ci: Annotated[float, About(EVERY_RUN, "the intervals' coverage (`--ci`)")]
    seed: Annotated[int, About(EVERY_RUN, "the seed the resampling drew with (`--seed`)")]
    test_rounds: Annotated[dict[str, int], About(
        "tests that resample", "family key → rounds the test drew in that family's table")]


class OptionsInfo(TypedDict, total=False):
    """``options``: the run's settings as the report lists them; the families' options
    (``--option family.key=value``) follow under their own names, unchecked."""

    alpha: Annotated[float, About(EVERY_RUN, "the significance level α (`--alpha`)")]
    seed: Annotated[int, About(EVERY_RUN, "the run's seed (`--seed`)")]
    stopwords: Annotated[str, About(EVERY_RUN, "the stopword list (`--stopwords`)")]
    grade_bands: Annotated[str, About(EVERY_RUN, "the grade bands of the subsets "
                                                 "(`--grade-bands`)")]


class CountsInfo(TypedDict, total=False):
    """``counts``: how much work the run did."""

    samples: Annotated[int, About(EVERY_RUN, "probe samples built")]
    pair_slots: Annotated[int, About(EVERY_RUN, "(query, document) slots the samples hold")]
    unique_pairs: Annotated[int, About(EVERY_RUN, "distinct (query, document) pairs among "
                                                  "them")]
    scored: Annotated[int, About(EVERY_RUN, "scores computed, over all rankers")]
    from_cache: Annotated[int, About(EVERY_RUN, "scores read from the cache, over all "
                                                "rankers")]
    windows_ranked: Annotated[int, About("listwise rankers", "windows ranked")]
    windows_from_cache: Annotated[int, About("listwise rankers", "windows read from the "
                                                                 "cache")]


class DeltaCalibrationInfo(TypedDict, total=False):
    """``delta_calibration``: how δ was calibrated."""

    candidates: Annotated[str | None, About(EVERY_RUN, "the candidate run re-scored")]
    candidate_depth: Annotated[int, About(EVERY_RUN, "its depth (`--candidate-depth`)")]
    top: Annotated[int, About(EVERY_RUN, "the top of each query whose adjacent gaps are "
                                         "taken")]
    note: Annotated[str, About(EVERY_RUN, "the rule in words")]


class ReportInfo(TypedDict, total=False):
    """``report``: how the report shows the records."""

    significance_mark: Annotated[str, About(
        EVERY_RUN, "which cells the `*` marks: `significant` or `not-significant` "
                   "(ABNIRML's convention; `--significance-mark`)")]


class OmittedProbe(TypedDict):
    """One entry of ``omitted_probes``."""

    probe: Annotated[str, About("probes left out", "the probe's name")]
    reason: Annotated[str, About("probes left out", "why it was left out, and what would "
                                                    "include it")]


class RunInfo(TypedDict, total=False):
    """``run.json``: what was run, in the order the run writes it."""

    collection: Annotated[CollectionInfo, About(EVERY_RUN, "the collection")]
    rankers: Annotated[list[RankerInfo], About(EVERY_RUN, "the rankers, with their δ")]
    candidates: Annotated[str | None, About(EVERY_RUN, "the candidate run the probes "
                                                       "drew documents from")]
    statistics: Annotated[StatisticsInfo, About(EVERY_RUN, "the test and intervals")]
    delta_calibration: Annotated[DeltaCalibrationInfo, About(EVERY_RUN, "how δ was "
                                                                        "calibrated")]
    skipped: Annotated[dict[str, int], About(EVERY_RUN, "reason → count of judgments and "
                                                        "candidates left out for want of "
                                                        "text")]
    counts: Annotated[CountsInfo, About(EVERY_RUN, "how much work the run did")]
    options: Annotated[OptionsInfo, About(EVERY_RUN, "the settings the report lists")]
    families: Annotated[list[dict[str, Any]], About(
        EVERY_RUN, "each family's description (title, positive direction, row header, "
                   "layout), so a report renders without the family's plugin")]
    probe_labels: Annotated[dict[str, list[str]], About(EVERY_RUN, "probe → its row "
                                                                   "labels in the tables")]
    report: Annotated[ReportInfo, About(EVERY_RUN, "how the report marks significance")]
    usage: Annotated[dict[str, dict[str, int]], About(
        "served rankers that count their cost", "ranker → requests and tokens")]
    device: Annotated[dict[str, Any], About(
        "torch rankers", "each ranker's device, precision, token budget and attention "
                         "backend, and the torch version")]
    scoring: Annotated[dict[str, Any], About("`--ray`", "where the batches ran (`ray`: "
                                                        "nodes, retries, lost nodes)")]
    omitted_probes: Annotated[list[OmittedProbe], About("runs that left probes out",
                                                        "the probes left out, with why")]
    effectiveness: Annotated[dict[str, Any], About(
        "runs with judgments", "nDCG@10, AP and RR of the candidate run and of each ranker "
                               "re-ranking it, overall and per query, and the run files")]
    listwise: Annotated[dict[str, Any], About("listwise rankers",
                                              "the window and position analyses")]
    variant_groups: Annotated[dict[str, list[str]], About(
        "`--variant-group`", "group → the rankers compared as variants of one model")]


# -- the one reading of the settings' defaults --------------------------------------------

#: ``statistics.test`` of a run.json without it. Runs have recorded their test since the
#: test could be chosen; the files written before then lack it, and every one of them ran
#: the paired t-test. So this is not a default of the setting (a new run's is
#: :data:`~abnirml.evaluation.stats.significance.STATISTICS_DEFAULTS`' ``test``) but what the
#: records of such a file were computed with.
TEST_OF_FILES_WITHOUT_IT = "ttest"


def statistics_of(info: RunInfo) -> StatisticsInfo:
    """The run's statistics section with every setting filled in: what ``run.json``
    records, else the one default a run uses
    (:data:`~abnirml.evaluation.stats.significance.STATISTICS_DEFAULTS`) — except the test of a
    file that predates its choice (:data:`TEST_OF_FILES_WITHOUT_IT`)."""
    from abnirml.evaluation.stats.significance import STATISTICS_DEFAULTS, StatsConfig

    engine = StatsConfig()
    defaults: StatisticsInfo = {
        "test": TEST_OF_FILES_WITHOUT_IT, "correction": STATISTICS_DEFAULTS.correction,
        "permutations": engine.permutations, "bootstrap": engine.resamples,
        "ci": STATISTICS_DEFAULTS.ci, "seed": engine.seed}
    return {**defaults, **info.get("statistics", {})}


def alpha_of(info: RunInfo) -> float:
    """The run's α: ``options.alpha``, else the one default."""
    from abnirml.evaluation.stats.significance import STATISTICS_DEFAULTS

    return float(info.get("options", {}).get("alpha", STATISTICS_DEFAULTS.alpha))


# -- checking a file against the declaration ----------------------------------------------

#: where a problem is: the keys and list positions from the record down to the field
FieldPath = tuple[str | int, ...]


def run_info_problem(value: Any, record_type: Any = RunInfo) -> str | None:
    """Why ``value`` (a parsed ``run.json``) is not a :class:`RunInfo` — not an object, a
    section that is not one, a required field missing, a value of another type — in one
    sentence naming the field (``rankers[1].delta``); None when it is one. Keys the type
    does not declare (a family's options, a plugin's section) are not checked."""
    found = located_problem(value, record_type)
    return None if found is None else found[0]


def located_problem(value: Any, record_type: Any = RunInfo) -> tuple[str, FieldPath] | None:
    """:func:`run_info_problem` with where it is: the path of the field at fault (for a
    missing field, of the record that lacks it), so a reader can name the file's line."""
    return _problem(value, record_type, ())


def field_line(text: str, path: FieldPath) -> int | None:
    """The line of ``text`` (a JSON document) on which the value at ``path`` starts; None
    when the path is not in it. Duplicate keys: the last one, as :func:`json.loads` keeps."""
    decoder = json.JSONDecoder()
    at = _skip_space(text, 0)
    for part in path:
        found = None
        opening, closing = ("{", "}") if isinstance(part, str) else ("[", "]")
        if at >= len(text) or text[at] != opening:
            return None
        at, index = _skip_space(text, at + 1), 0
        while at < len(text) and text[at] != closing:
            if isinstance(part, str):
                try:
                    key, at = decoder.raw_decode(text, at)      # a key is a JSON string
                except ValueError:
                    return None
                at = _skip_space(text, _skip_space(text, at) + 1)      # past the colon
                hit = key == part
            else:
                hit, index = index == part, index + 1
            if hit:
                found = at
            try:
                _, at = decoder.raw_decode(text, at)
            except ValueError:
                return None
            at = _skip_space(text, at)
            if at < len(text) and text[at] == ",":
                at = _skip_space(text, at + 1)
        if found is None:
            return None
        at = found
    return text.count("\n", 0, at) + 1


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _shown(where: FieldPath) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" if i else part
                   for i, part in enumerate(where))


def _problem(value: Any, hint: Any, where: FieldPath) -> tuple[str, FieldPath] | None:
    hint = _bare(hint)
    if hint is Any:
        return None
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        members = [m for m in get_args(hint) if m is not type(None)]
        if value is None and len(members) < len(get_args(hint)):
            return None
        (hint,) = members           # declared unions are "X or null"
        origin = get_origin(hint)
        nullable = True
    else:
        nullable = False
    if is_typeddict(hint):
        if not isinstance(value, dict):
            return _wrong(where, "a JSON object", value, nullable)
        return _record_problem(value, hint, where)
    if origin is dict:
        if not isinstance(value, dict):
            return _wrong(where, "a JSON object", value, nullable)
        item = get_args(hint)[1]
        return next((p for key, v in value.items()
                     if (p := _problem(v, item, (*where, key))) is not None), None)
    if origin is list:
        if not isinstance(value, list):
            return _wrong(where, "a list", value, nullable)
        item = get_args(hint)[0]
        return next((p for i, v in enumerate(value)
                     if (p := _problem(v, item, (*where, i))) is not None), None)
    words = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    if hint is bool:
        fits = isinstance(value, bool)
    elif hint is float:
        fits = isinstance(value, (int, float)) and not isinstance(value, bool)
    else:
        fits = isinstance(value, hint) and not isinstance(value, bool)
    return None if fits else _wrong(where, words[hint], value, nullable)


def _record_problem(value: dict[str, Any], record_type: Any, where: FieldPath
                    ) -> tuple[str, FieldPath] | None:
    hints = get_type_hints(record_type, include_extras=True)
    for name, hint in hints.items():
        if name not in value:
            if declared_requirement(record_type, name, hint)[0]:
                return f"{_shown(where) or 'the record'} lacks the field {name!r}", where
            continue
        problem = _problem(value[name], hint, (*where, name))
        if problem is not None:
            return problem
    return None


def _bare(hint: Any) -> Any:
    """``hint`` without its Annotated, Required and NotRequired wrappers."""
    while get_origin(hint) in (Annotated, Required, NotRequired):
        hint = get_args(hint)[0]
    return hint


def _wrong(where: FieldPath, expected: str, value: Any, nullable: bool
           ) -> tuple[str, FieldPath]:
    shown = json.dumps(value, ensure_ascii=False, default=repr)[:40]
    what = f"field {_shown(where)!r}" if where else RUN_INFO
    return f"{what} must be {expected}{' or null' if nullable else ''}, found {shown}", where


# -- the reference page --------------------------------------------------------------------

def run_fields(record_type: Any = RunInfo, prefix: str = ""
               ) -> list[tuple[str, str, bool, About]]:
    """(dotted name, JSON type, required, About) of every declared field, sections before
    their fields, in declaration order: the reference page's rows."""
    rows = []
    hints = get_type_hints(record_type, include_extras=True)
    for name, hint in hints.items():
        required, unwrapped = declared_requirement(record_type, name, hint)
        about = next((e for e in get_args(unwrapped)[1:] if isinstance(e, About)), None)
        if about is None:
            raise TypeError(f"{record_type.__name__}.{name} needs Annotated[type, About(...)]")
        bare = _bare(hint)
        dotted = prefix + name
        rows.append((dotted, _json_type(bare), required, about))
        inner = get_args(bare)[0] if get_origin(bare) is list else bare
        if is_typeddict(inner):
            rows += run_fields(inner, dotted + ("[]." if inner is not bare else "."))
    return rows


def _json_type(hint: Any) -> str:
    if get_origin(hint) in (Union, types.UnionType):
        members = [m for m in get_args(hint) if m is not type(None)]
        return " or ".join(_json_type(m) for m in members) + " or null"
    origin = get_origin(hint)
    if is_typeddict(hint) or origin is dict or hint is Any:
        return "object"
    if origin is list:
        return "list"
    return JSON_WORDS[hint]
