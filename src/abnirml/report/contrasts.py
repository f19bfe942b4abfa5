"""Key findings by contrast: what sets each ranker apart from the other rankers of the run.

A behaviour every ranker shows (they all prefer a document with the query appended) says
nothing about any one of them, yet it is what a list of each ranker's largest effects leads
with. So the first screen says shared behaviours once, in one line, and gives each ranker
the probes on which it behaves *unlike* the others — measured on the same samples.

Every pair of rankers is compared per probe by :func:`~abnirml.evaluation.analyses.compare.compare`,
the machinery of ``abnirml compare``: the per-sample effects of the two (each with its own
δ) paired, a test and correction over the pair's probes (:func:`pair_test_words` says
which: the run's, or the paired t-test where the run's test resamples), and a
query-clustered bootstrap interval of the difference. Ranker R *differs* from O on a probe
when that test rejects and the interval excludes 0. A probe is R's contrast when R differs, in one
direction, from more than half of the other rankers, by at least :data:`MIN_CONTRAST` from
each of them; the contrast is that smallest difference, and the largest come first.
When the rankers split into camps, more than half of them could qualify; a probe is then
kept only for the :math:`\\lfloor k/2 \\rfloor` rankers that differ from the most others
(then: whose own score is largest), so no probe is a "distinctive" behaviour of most rankers.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from abnirml.counts import counted
from abnirml.report.tables import SMALL_N, anchor, signed_text

MIN_CONTRAST = 0.15
"""Smallest difference from each ranker of the group worth a line: a significant difference
of a few samples in a probe of hundreds is true but not what sets a ranker apart."""
NEAR_ZERO = 0.05
"""A score this close to 0 is "no preference" in the sentences."""
SHARED = 3
"""At most this many shared behaviours on the shared line."""


@dataclass(frozen=True)
class Shared:
    """A behaviour (nearly) every ranker shows: one entry of the shared line."""

    probe: str
    phrase: str            # base-form verb phrase: "prefer the document changed by …"
    rankers: tuple[str, ...]
    exceptions: tuple[str, ...]
    low: float
    high: float
    row_id: str


@dataclass(frozen=True)
class Candidate:
    """One ranker's contrast on one probe, before the per-probe and per-ranker caps."""

    ranker: str
    probe: str
    family: str
    group: tuple[str, ...]        # the rankers it differs from, all in one direction
    own: float
    theirs: tuple[float, ...]     # the group's scores, in group order
    weakest: str                  # the group member it differs from least
    difference: float             # own − weakest's score
    low: float                    # interval of that difference
    high: float


def nearly_all(k: int) -> int:
    """How many of ``k`` rankers make a behaviour shared: all of up to three, else all but
    one."""
    return k if k <= 3 else k - 1


def _pair_lookup(pairs: Mapping[tuple[str, str], Mapping[str, Any]]
                 ) -> Callable[[str, str, str], tuple[bool, float, float, float] | None]:
    """(R, O, probe) → (differs, R − O, interval low, high) from the pairs in either order."""

    def lookup(r: str, o: str, probe: str) -> tuple[bool, float, float, float] | None:
        flipped = (r, o) in pairs
        row = (pairs.get((r, o)) or pairs.get((o, r)) or {}).get(probe)
        if (row is None or row.score_a is None or row.score_b is None
                or row.diff_ci_low is None or row.diff_ci_high is None):
            return None
        diff = row.score_b - row.score_a          # B − A
        low, high = row.diff_ci_low, row.diff_ci_high
        if flipped:                               # R is A: R − O = −(B − A)
            diff, low, high = -diff, -high, -low
        excludes = low > 0 or high < 0
        return bool(row.significant) and excludes, diff, low, high

    return lookup


def candidates(records: Sequence[Mapping[str, Any]],
               pairs: Mapping[tuple[str, str], Mapping[str, Any]]) -> list[Candidate]:
    """Every ranker's contrasts on every probe (see the module docstring), capped per probe
    at half of the rankers, largest contrast first."""
    by_key = {(r["probe"], r["ranker"]): r for r in records if r.get("subset") == "all"}
    rankers = list(dict.fromkeys(r["ranker"] for r in records))
    k = len(rankers)
    lookup = _pair_lookup(pairs)
    out: list[Candidate] = []
    for probe in dict.fromkeys(r["probe"] for r in records):
        found: list[Candidate] = []
        for r in rankers:
            mine = by_key.get((probe, r))
            if (mine is None or mine.get("symmetric") or mine.get("score") is None
                    or int(mine.get("n") or 0) < SMALL_N):
                continue
            above: list[tuple[str, float, float, float]] = []
            below: list[tuple[str, float, float, float]] = []
            for o in rankers:
                seen = lookup(r, o, probe) if o != r else None
                if seen is not None and seen[0]:
                    (above if seen[1] > 0 else below).append((o, *seen[1:]))
            group = max(above, below, key=lambda g: (len(g), sum(abs(x[1]) for x in g)))
            if 2 * len(group) <= k - 1:
                continue
            theirs = tuple(float(by_key[(probe, o)]["score"]) for o, *_ in group)
            weakest = min(group, key=lambda g: (abs(g[1]), g[0]))
            candidate = Candidate(r, probe, str(mine.get("family", "")),
                                  tuple(o for o, *_ in group), float(mine["score"]), theirs,
                                  weakest[0], weakest[1], weakest[2], weakest[3])
            if abs(candidate.difference) >= MIN_CONTRAST:
                found.append(candidate)
        found.sort(key=lambda c: (-len(c.group), -abs(c.own), -abs(c.difference), c.ranker))
        out += found[:k // 2]
    # differences that print alike are ties, which the rankers differed from decide
    return sorted(out, key=lambda c: (-round(abs(c.difference), 2), -len(c.group), c.probe,
                                      c.ranker))


def shared(records: Sequence[Mapping[str, Any]], qualifies: Callable[[Mapping[str, Any]], bool],
           phrase: Callable[[Mapping[str, Any], bool], str]) -> list[Shared]:
    """Behaviours (nearly) all rankers show (:func:`nearly_all`), each a probe on which that
    many rankers have a qualifying effect (``qualifies``: the key findings' criteria) of one
    sign; most rankers first, then the largest mean |score|, at most :data:`SHARED`."""
    rankers = list(dict.fromkeys(r["ranker"] for r in records))
    need = nearly_all(len(rankers))
    if len(rankers) < 2:
        return []
    by_probe: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        if r.get("subset") == "all" and qualifies(r):
            by_probe.setdefault(r["probe"], []).append(r)
    out = []
    for probe, mine in by_probe.items():
        for up in (True, False):
            side = [r for r in mine if (float(r["score"]) > 0) == up]
            if len(side) < need:
                continue
            names = tuple(r["ranker"] for r in side)
            scores = [float(r["score"]) for r in side]
            out.append(Shared(probe, base_form(phrase(side[0], up)), names,
                              tuple(n for n in rankers if n not in names), min(scores),
                              max(scores), anchor("row", probe, side[0]["ranker"])))
    out.sort(key=lambda s: (-len(s.rankers), -max(abs(s.low), abs(s.high)), s.probe))
    return out[:SHARED]


def base_form(phrase: str) -> str:
    """``Prefers the …`` → ``prefer the …``: a family's sentence (third person, the ranker
    its subject) with its first verb in the form "all rankers …" or "does not …" needs."""
    if not phrase:
        return phrase
    first, _, rest = phrase.partition(" ")
    word = first.lower()
    if word.endswith("ies"):
        word = word[:-3] + "y"
    elif word.endswith("es") and word[:-2].endswith(("s", "x", "z", "ch", "sh", "o")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return f"{word} {rest}".strip()


def lower_first(phrase: str) -> str:
    """``Prefers the …`` → ``prefers the …`` (after a subject)."""
    return phrase[:1].lower() + phrase[1:]


def named(group: Sequence[str], others: int) -> str:
    """``bm25, ql and tfidf``; ``the other 6 rankers`` when the group is all of many."""
    if len(group) == others and others > 3:
        return f"the other {others} rankers"
    if len(group) == 1:
        return group[0]
    return f"{', '.join(group[:-1])} and {group[-1]}"


def sentence(candidate: Candidate, phrase: Callable[[bool], str], others: int) -> str:
    """The contrast in plain words, the ranker its subject, true of every ranker it names:
    unlike those whose own score has no preference or the other sign, more or less strongly
    than those whose score has its sign, not at all where they prefer. Each member's own
    row decides its words, never the group's average (``bm25 +0.3``, ``ql −0.3`` and a
    ranker at +0.5: "Unlike ql, r prefers …, and more strongly than bm25")."""
    own, r = candidate.own, candidate.ranker
    members = list(zip(candidate.group, candidate.theirs, strict=True))

    def whom(names: Sequence[str]) -> str:
        return named(names, others)

    if abs(own) < NEAR_ZERO:
        ups = [o for o, s in members if s >= NEAR_ZERO]
        downs = [o for o, s in members if s <= -NEAR_ZERO]
        parts = [f"unlike {whom(g)}, {r if i == 0 else 'it'} does not "
                 f"{base_form(phrase(up))}"
                 for i, (g, up) in enumerate((g, up) for g, up in ((ups, True), (downs, False))
                                             if g)]
        if not parts:                       # every member near 0 too: nothing to contrast
            return f"{r} does not {base_form(phrase(own > 0))}"
        text = "; ".join(parts)
        return text[:1].upper() + text[1:]
    up = own > 0
    unlike = [o for o, s in members if abs(s) < NEAR_ZERO or (s > 0) != up]
    more = [o for o, s in members if o not in unlike and abs(own) > abs(s)]
    less = [o for o, s in members if o not in unlike and o not in more]
    degrees = [f"{word} strongly than {whom(g)}" for word, g in (("more", more),
                                                                 ("less", less)) if g]
    does = lower_first(phrase(up))
    if not unlike:
        return f"{r} {does} {' and '.join(degrees)}"
    head = f"Unlike {whom(unlike)}, {r} {does}"
    return head if not degrees else f"{head}, and {' and '.join(degrees)}"


def theirs_text(scores: Sequence[float]) -> str:
    """The group's score: one figure when they all print alike, else the range."""
    texts = sorted({signed_text(s) for s in scores}, key=float)
    return texts[0] if len(texts) == 1 else f"{texts[0]} to {texts[-1]}"


def pair_test_words(stats: Any = None, run_test: str | None = None) -> str:
    """The one description of how the first screen tests a pair of rankers, used wherever
    the screen is explained: ``stats`` are the statistics it tested with
    (:func:`~abnirml.report.findings.screening_stats`), ``run_test`` the run's own test
    when the screen replaced it."""
    from abnirml.evaluation.stats.corrections import correction_label
    from abnirml.evaluation.stats.stat_tests import find_test

    if stats is None:
        test = "the run's test and correction"
    else:
        record = find_test(stats.test)
        test = (f"the {record.label if record is not None else stats.test} with "
                f"{correction_label(stats.correction)} correction")
    words = (f"{test} over the pair's probes on the paired per-sample effects, and a "
             "query-clustered bootstrap interval of the difference that excludes 0")
    if run_test is not None and stats is not None and run_test != stats.test:
        record = find_test(run_test)
        label = record.label if record is not None else run_test
        words += (f"; 'abnirml compare' tests a pair with the run's {label} instead, which "
                  "would take minutes for every pair of rankers")
    return words


def criteria(k: int, stats: Any = None, run_test: str | None = None) -> str:
    """How the per-ranker findings were chosen, in words (the note above the cards);
    ``stats``: the statistics the pairs were compared with (:func:`pair_test_words`)."""
    whom = ("the other ranker" if k == 2 else
            f"more than half of the other {counted(k - 1, 'ranker')}")
    each = "" if k == 2 else " from each"
    return (f"the probes on which it differs from {whom} on the same samples, in one "
            f"direction and by at least {MIN_CONTRAST:g}{each} (each pair tested with "
            f"{pair_test_words(stats, run_test)}); the clearest first (by the difference "
            "from the closest of them), at most 5 per ranker and 3 per probe family; a probe "
            "is listed for at most half of the rankers")


def queries_of(store: Any, probe: str, ranker: str) -> int | None:
    """How many queries a probe's samples come from (None without per-sample scores)."""
    if store is None:
        return None
    scores = store.scores.get((probe, ranker))
    if scores is None or scores.cluster is None:
        return None
    import numpy as np

    return int(np.unique(scores.cluster).shape[0])


def with_examples_anchor(probe: str, with_examples: Collection[str]) -> str:
    return anchor("ex", probe) if probe in with_examples else ""
