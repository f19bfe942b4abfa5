"""The result row: one line of ``results.jsonl``, its public schema, in one definition.

``results.jsonl`` is read by programs (``abnirml.load_results``, ``compare``, a user's own
scripts), so its field names are a public interface. :class:`ResultRow` declares every
field once — its JSON type, which rows carry it, what it means — and everything else is
drawn from it: the run checks each row against it as it writes the file
(:func:`abnirml.report.run_outputs.results_text`), :func:`~abnirml.report.run_outputs.
read_results` and ``load_results`` check and type what they read with it, and the
reference page (``docs/gen_reference.py``) lists it. Each of them takes the row type as a
parameter, so a copy of the type with one more field changes all three (a test does so),
and a test runs every built-in family and checks that the rows hold exactly these fields.

Rows stay plain dicts (the engine adds a family's fields as it computes them, and the key
order a run writes is the order it computed them in). A field is *required* when a reader
may rely on it in any results file; the others are written only for the rows their
``scope`` names, and are absent — not null — elsewhere. Fields a plugin family adds
without declaring them pass through unchecked.
"""

import functools
import json
import types
from collections.abc import Mapping
from dataclasses import dataclass
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
)

#: A Python value type in the words the reference pages use for JSON types.
JSON_WORDS: dict[type, str] = {bool: "true or false", int: "integer", float: "number",
                               str: "string", dict: "object", list: "list"}

#: Records of every family.
EVERY_RECORD = "every record"
AXIOM = "`axiom:` probes"
QVP = "`qvp:` probes"
SYNONYM = "`qvp:synonym` and `bias:literal-match`"
NONREL = "`tmp:add-nonrel-sentence` probes"
BIAS = "`bias:` probes and others that declare the direction their source reports"
FOIL = "foil probes (`bias:keyword-stuffing`, `bias:injected-instruction-foil`, " \
       "`bias:biased-foil`)"


@dataclass(frozen=True)
class About:
    """What a field means and which rows carry it: the reference page's columns."""

    scope: str
    meaning: str


class ResultRow(TypedDict):
    """One probe × ranker × subset of ``results.jsonl``, in the order the reference lists."""

    probe: Annotated[str, About(EVERY_RECORD, "the probe's name, e.g. `mmp:tf:length`")]
    family: Annotated[str, About(EVERY_RECORD, "the probe's family key (`mmp`, `tmp`, `dtp`, "
                                               "`axiom`, `qvp` or a plugin's)")]
    ranker: Annotated[str, About(EVERY_RECORD, "the ranker's name: its spec, or the display "
                                               "name given with `@name`")]
    subset: Annotated[str, About(
        EVERY_RECORD, "`all`, or a grade band (`non-relevant`, `relevant` by default; "
                      "`--grade-bands` changes them); for a listwise ranker whose probe lists "
                      "are longer than its window also `window-inside` and `window-straddle` "
                      "(the sample's two positions share a window of the sliding pass, or "
                      "not)")]
    score: Annotated[float | None, About(
        EVERY_RECORD, "mean effect in [−1, 1]: +1 per sample where R(q,d1) − R(q,d2) > δ, "
                      "−1 where < −δ, else 0 (symmetric probes: the share with |diff| > δ, "
                      "in [0, 1]); null without samples")]
    n: Annotated[int, About(EVERY_RECORD, "samples scored")]
    queries: NotRequired[Annotated[int, About(
        EVERY_RECORD, "distinct queries the samples come from: the units the query-clustered "
                      "test and intervals resample (a sample without a judged query counts "
                      "as its own)")]]
    pos: Annotated[int, About(EVERY_RECORD, "samples with R(q,d1) − R(q,d2) > δ")]
    neg: Annotated[int, About(EVERY_RECORD, "samples with R(q,d1) − R(q,d2) < −δ")]
    neutral: Annotated[int, About(EVERY_RECORD, "samples within ±δ")]
    mean_diff: Annotated[float | None, About(EVERY_RECORD, "mean of R(q,d1) − R(q,d2)")]
    p_value: Annotated[float | None, About(EVERY_RECORD, "the test's uncorrected p-value "
                                                         "(`--test`); null below 2 samples")]
    test_rounds: NotRequired[Annotated[int, About(
        "`--test clustered` (the default), `permutation` or `bootstrap`",
        "rounds the resampling test drew for this record's table: enough for its correction "
        "to reject at α, or the count `--permutations`/`--bootstrap` named")]]
    p_floor: NotRequired[Annotated[float, About(
        "`--test clustered` (the default) and `bootstrap` rows whose p it is",
        "the least p the row's k queries allow, 2/2ᵏ (one-sided 1/2ᵏ): every query's "
        "effects lean one way, so no resample crosses 0, and an exact test over the "
        "queries (each query's sign flipped, all 2ᵏ ways) gives no less")]]
    significant: Annotated[bool, About(
        EVERY_RECORD, "adjusted p < α after the correction over the table (`--correction`, "
                      "Bonferroni by default; `--alpha`)")]
    delta: Annotated[float, About(
        EVERY_RECORD, "the ranker's δ: calibrated from its candidate score gaps, or fixed "
                      "with `--delta`")]
    symmetric: NotRequired[Annotated[bool, About(
        EVERY_RECORD, "whether d1/d2 order is arbitrary (the score is then unsigned)")]]
    skipped: NotRequired[Annotated[dict[str, int], About(
        EVERY_RECORD, "reason → count of samples the probe skipped (on `all` rows; "
                      "query-variation probes count queries)")]]
    tests_in_table: NotRequired[Annotated[int, About(
        "every tested record (n ≥ 2)", "how many tests the correction counted in this "
                                       "record's table")]]
    p_adjusted: NotRequired[Annotated[float | None, About(
        "every tested record (n ≥ 2)", "the p-value after the correction")]]
    effect_size: NotRequired[Annotated[float | None, About(
        EVERY_RECORD, "Cohen's d_z: mean difference / SD of the differences; null for "
                      "symmetric probes")]]
    ci_low: NotRequired[Annotated[float | None, About(
        EVERY_RECORD, "lower end of the query-clustered bootstrap interval of the score "
                      "(`--bootstrap`, `--ci`); with `--test clustered` the test's own "
                      "interval at the level the correction tested the row at, so it "
                      "excludes 0 exactly when the row is significant")]]
    ci_high: NotRequired[Annotated[float | None, About(EVERY_RECORD,
                                                       "upper end of that interval")]]
    mean_diff_ci_low: NotRequired[Annotated[float | None, About(
        EVERY_RECORD, "lower end of the bootstrap interval of the mean difference")]]
    mean_diff_ci_high: NotRequired[Annotated[float | None, About(
        EVERY_RECORD, "upper end of that interval")]]
    nonrel_donor: NotRequired[Annotated[str, About(
        NONREL, "where the added sentence came from (`tmp.nonrel_donor`)")]]
    donor_query_term_rate: NotRequired[Annotated[float | None, About(
        NONREL, "share of samples whose added sentence holds a query term")]]
    satisfied: NotRequired[Annotated[int, About(
        AXIOM, "instances the ranker orders the axiom's way (strict, without δ)")]]
    violated: NotRequired[Annotated[int, About(AXIOM, "instances ordered the other way "
                                                      "(strict)")]]
    ties: NotRequired[Annotated[int, About(AXIOM, "instances scored exactly equal")]]
    satisfied_delta: NotRequired[Annotated[int, About(AXIOM, "instances satisfied by more "
                                                             "than δ")]]
    violated_delta: NotRequired[Annotated[int, About(AXIOM, "instances violated by more "
                                                            "than δ")]]
    ties_delta: NotRequired[Annotated[int, About(AXIOM, "instances within ±δ")]]
    instances: NotRequired[Annotated[int, About(AXIOM, "instances mined (after "
                                                       "`axiom.cap`)")]]
    instances_uncapped: NotRequired[Annotated[int, About(AXIOM, "instances before "
                                                                "`axiom.cap`")]]
    instances_relevant: NotRequired[Annotated[int, About(AXIOM, "instances with a relevant "
                                                                "document")]]
    relevance_agree: NotRequired[Annotated[int | None, About(
        AXIOM, "judged instances whose grades order the documents the axiom's way")]]
    relevance_disagree: NotRequired[Annotated[int | None, About(
        AXIOM, "judged instances whose grades order them the other way")]]
    relevance_ties: NotRequired[Annotated[int | None, About(AXIOM, "judged instances with equal "
                                                            "grades")]]
    relevance_agreement: NotRequired[Annotated[float | None, About(
        AXIOM, "agree / judged instances (ties count as not agreeing)")]]
    relevance_agreement_decided: NotRequired[Annotated[float | None, About(
        AXIOM, "agree / (agree + disagree): equal grades left out")]]
    axiom_queries: NotRequired[Annotated[int, About(AXIOM, "queries whose pools were mined")]]
    axiom_queries_with_instances: NotRequired[Annotated[int, About(
        AXIOM, "queries with at least one instance")]]
    axiom_pool: NotRequired[Annotated[str, About(AXIOM, "`candidates` or `judged` "
                                                        "(`axiom.pool`)")]]
    length_tolerance: NotRequired[Annotated[str, About(
        AXIOM, "δ_len, analysed tokens (`axiom.length_tolerance`)")]]
    axiom_label: NotRequired[Annotated[str, About("a plugin's `axiom:` probes",
                                                  "the name the axiom tables show")]]
    overlap_split: NotRequired[Annotated[list[dict[str, Any]], About(
        "`axiom:` probes, `all` rows",
        "per query–term-overlap group: `bucket`, `overlap_min`, `overlap_max`, `queries`, "
        "`n`, `satisfied`, `violated`, `ties` and, with effectiveness, `ndcg10`, "
        "`ndcg10_queries`, `ndcg10_retrieved`, `retrieved_queries`")]]
    qvp_depth: NotRequired[Annotated[int, About(QVP, "candidates per query in each pool "
                                                     "(`qvp.depth`)")]]
    ndcg10_original: NotRequired[Annotated[float | None, About(
        QVP, "mean nDCG@10 of the pool ranked under the original queries")]]
    ndcg10_variation: NotRequired[Annotated[float | None, About(
        QVP, "the same under the varied queries")]]
    ndcg10_change: NotRequired[Annotated[float | None, About(
        QVP, "`ndcg10_variation` − `ndcg10_original`")]]
    ndcg10_queries: NotRequired[Annotated[int, About(QVP, "queries with a relevant "
                                                          "judgment")]]
    ndcg10_ideal: NotRequired[Annotated[str, About(
        QVP, "how the ideal ranking of nDCG@10 is built (trec_eval's: every judgment of the "
             "query)")]]
    synonym_source: NotRequired[Annotated[str, About(
        SYNONYM, "where the synonyms come from (`wordnet` or `counter-fitted`)")]]
    synonym_rule: NotRequired[Annotated[str, About(
        SYNONYM, "how WordNet synonyms were chosen: `context` (GloVe and MiniLM closeness) or "
                 "`usual-sense` (tag counts, without those models); `counter-fitted` for that "
                 "source")]]
    synonym_content_words: NotRequired[Annotated[int, About(
        SYNONYM, "content words of the queries that were looked up")]]
    synonym_words_without: NotRequired[Annotated[int, About(
        SYNONYM, "content words with no synonym in the source")]]
    paper_direction: NotRequired[Annotated[int, About(
        BIAS, "the sign a score takes when the ranker has the bias the probe's source paper "
              "reports: 1 or −1")]]
    foil_wins: NotRequired[Annotated[int, About(
        FOIL, "samples whose foil (d1) the ranker scored strictly above the judged-relevant "
              "passage (d2), without δ; pairwise and listwise rankers: preferred it (p > ½)")]]
    foil_win_rate: NotRequired[Annotated[float | None, About(
        FOIL, "`foil_wins` / `n`; null without samples")]]
    foil_win_rate_ci_low: NotRequired[Annotated[float | None, About(
        FOIL, "lower end of its query-clustered bootstrap interval (`--bootstrap`, `--ci`; "
              "the exact bound when every sample agrees); null below two queries")]]
    foil_win_rate_ci_high: NotRequired[Annotated[float | None, About(
        FOIL, "upper end of that interval")]]
    position_bias: NotRequired[Annotated[float | None, About(
        "pairwise and listwise rankers (not on `qvp:` probes for listwise ones)",
        "share of samples whose verdict follows the input position, either way: the "
        "document at one position wins in both orders, whichever document sits there")]]
    position_bias_earlier: NotRequired[Annotated[float | None, About(
        "pairwise and listwise rankers (not on `qvp:` probes for listwise ones)",
        "the part of `position_bias` where the first (pairwise) or earlier-placed "
        "(listwise) document won in both orders; `position_bias` minus it went to the "
        "second or later-placed one")]]


@dataclass(frozen=True)
class RowField:
    """One declared field of a row type, as the writer, the readers and the reference page
    see it: ``kinds`` are the Python types a JSON value of it may have."""

    name: str
    kinds: tuple[type, ...]
    nullable: bool
    required: bool
    scope: str
    meaning: str
    #: for an object of counts (``dict[str, int]``): the type of its values
    values: type | None = None

    @property
    def json_type(self) -> str:
        """The field's type in JSON words: ``number``, ``integer``, ``string`` …"""
        words = JSON_WORDS
        kind = (words[float] if float in self.kinds
                else " or ".join(words[k] for k in self.kinds))
        return kind + (" or null" if self.nullable else "")

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is not one of this field's values (None: it is)."""
        if value is None and self.nullable:
            return None
        # bool is an int to Python, not to JSON
        if bool in self.kinds if isinstance(value, bool) else isinstance(value, self.kinds):
            return self._counts_problem(value) if self.values is int else None
        article = "an" if self.json_type[0] in "aeiou" else "a"
        thing = self.json_type if self.json_type.startswith("true") else \
            f"{article} {self.json_type}"
        return (f"field {self.name!r} must be {thing}, found "
                f"{json.dumps(value, ensure_ascii=False, default=repr)[:30]}")


    def _counts_problem(self, value: Any) -> str | None:
        """Why an object of counts (``skipped``) is not one: each value a whole number ≥ 0."""
        for key, count in value.items():
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                shown = json.dumps(count, ensure_ascii=False, default=repr)[:30]
                return (f"field {self.name!r} must map each reason to a count (a whole "
                        f"number ≥ 0), found {shown} for {str(key)[:40]!r}")
        return None


def declared_requirement(record_type: Any, name: str, hint: Any) -> tuple[bool, Any]:
    """Whether field ``name`` of the TypedDict ``record_type`` must be present, and its type
    ``hint`` without the Required/NotRequired wrapper. The wrapper decides over the class's
    totality: with postponed annotations ``__required_keys__`` does not see it, while
    ``get_type_hints(..., include_extras=True)`` keeps it in the hint."""
    required = name in record_type.__required_keys__
    while get_origin(hint) in (Required, NotRequired):
        required = get_origin(hint) is Required
        hint = get_args(hint)[0]
    return required, hint


def _kinds(annotation: Any) -> tuple[tuple[type, ...], bool]:
    """(JSON value types, nullable) of a field's annotation."""
    members = (get_args(annotation)
               if get_origin(annotation) in (Union, types.UnionType) else (annotation,))
    kinds: list[type] = []
    for member in members:
        if member is type(None):
            continue
        origin = get_origin(member) or member
        kinds.append(origin)
        if origin is float:
            kinds.append(int)                   # JSON does not tell 2.0 from 2
    return tuple(dict.fromkeys(kinds)), type(None) in members


@functools.cache
def row_fields(row_type: Any = ResultRow) -> tuple[RowField, ...]:
    """The declared fields of ``row_type`` (a TypedDict of :class:`About`-annotated fields,
    such as :class:`ResultRow` or a copy of it with more fields), in declaration order."""
    hints = get_type_hints(row_type, include_extras=True)
    fields = []
    for name, hint in hints.items():
        required, hint = declared_requirement(row_type, name, hint)
        if get_origin(hint) is not Annotated:
            raise TypeError(f"{row_type.__name__}.{name} needs Annotated[type, About(...)]")
        annotation, *extras = get_args(hint)
        about = next((e for e in extras if isinstance(e, About)), None)
        if about is None:
            raise TypeError(f"{row_type.__name__}.{name} needs an About(scope, meaning)")
        kinds, nullable = _kinds(annotation)
        values = None
        if get_origin(annotation) is dict and get_args(annotation)[1:] == (int,):
            values = int
        fields.append(RowField(name, kinds, nullable, required,
                               about.scope, about.meaning, values))
    return tuple(fields)


def row_problem(row: Mapping[str, Any], row_type: Any = ResultRow) -> str | None:
    """Why ``row`` is not a row of ``row_type`` — a required field missing, or a declared
    field holding a value of another type — in one sentence; None when it is one. Fields
    the type does not declare (a plugin family's own) are not checked."""
    fields = row_fields(row_type)
    missing = [f.name for f in fields if f.required and f.name not in row]
    if missing:
        return f"result record lacks {', '.join(missing)}"
    for field in fields:
        if field.name in row:
            problem = field.problem(row[field.name])
            if problem is not None:
                return problem
    return None
