"""Behaviour tests for model CI: gate a release on how a ranker behaves on named probes.

>>> from abnirml.expect import expect
>>> result = expect("bm25", "mmp:tf:length")           # a spec string or any Ranker object
>>> assert result.score >= 0.95, result
>>> result.require(at_least=0.95, significant=True)     # raises with a readable message

``expect`` runs the named probe on a collection (default: the shipped demo) with δ calibrated
on the collection's candidates exactly as ``abnirml run`` does, and returns an
:class:`Expectation` holding the score, significance, sample counts and δ. Its ``repr``
names the ranker, probe, collection and numbers, so a failing bare ``assert`` explains
itself in pytest's output. Scores go through an in-memory cache unless ``cache`` is given.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from abnirml.errors import ConfigError
from abnirml.evaluation.stats.significance import STATISTICS_DEFAULTS


def p_text(p: float) -> str:
    """``p = 0.0123``, or words when the test is undefined (NaN: fewer than two samples)."""
    return "p undefined, fewer than 2 samples" if p != p else f"p = {p:.3g}"


@dataclass(frozen=True)
class Expectation:
    ranker: str
    probe: str
    collection: str
    subset: str
    score: float
    significant: bool
    p_value: float
    n: int
    pos: int
    neg: int
    neutral: int
    delta: float
    record: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    #: up to three samples the ranker gets the wrong way round (beyond δ), as dicts with
    #: query, doc1, doc2, score1, score2 and the sample's metadata
    counterexamples: tuple[Mapping[str, Any], ...] = field(default=(), repr=False,
                                                          compare=False)

    def describe(self) -> str:
        mark = "significant" if self.significant else "not significant"
        return (f"{self.ranker} on {self.probe} ({self.collection}, {self.subset}): "
                f"score {self.score:+.3f} ({mark}, {p_text(self.p_value)}; n = {self.n}: "
                f"{self.pos} prefer d1, {self.neg} prefer d2, {self.neutral} within "
                f"δ = {self.delta:.4g})")

    def __str__(self) -> str:
        return self.describe()

    def require(self, at_least: float | None = None, at_most: float | None = None,
                significant: bool | None = None, min_samples: int = 1) -> Expectation:
        """Raise AssertionError naming every unmet condition; return self otherwise."""
        problems = []
        if self.n < min_samples:
            problems.append(f"only {self.n} samples (need ≥ {min_samples})")
        if at_least is not None and not self.score >= at_least:
            problems.append(f"score {self.score:+.3f} is below {at_least:+.3f}")
        if at_most is not None and not self.score <= at_most:
            problems.append(f"score {self.score:+.3f} is above {at_most:+.3f}")
        if significant is not None and self.significant != significant:
            problems.append("the effect is not significant" if significant
                            else "the effect is significant")
        if problems:
            raise AssertionError(f"{self.describe()}: " + "; ".join(problems))
        return self


def expect(ranker: Any, probe: str, collection: str = "demo", subset: str = "all",
           **options: Any) -> Expectation:
    """The behaviour of ``ranker`` on exactly one probe (see :func:`expect_many`)."""
    found = expect_many(ranker, [probe], collection=collection, subset=subset, **options)
    if len(found) != 1:
        raise ConfigError(f"{probe!r} names {len(found)} probes; use expect_many for several")
    return next(iter(found.values()))


def expect_many(ranker: Any, probes: Sequence[str] | str, collection: str = "demo",
                subset: str = "all", *, delta: float | None = None,
                alpha: float = STATISTICS_DEFAULTS.alpha, seed: int = 0,
                cache: str | None = None, options: Mapping[str, Any] | None = None,
                candidates: str | None = None) -> dict[str, Expectation]:
    """Run probes (names, globs or families) for one ranker: probe name → Expectation.

    ``ranker`` is a spec string (``"bm25+k1=0.9"``) or an object following the Ranker
    contract. ``delta`` fixes δ instead of calibrating it. Significance is Bonferroni-
    corrected over the probes run together, as in one report table.
    """
    from abnirml.evaluation.execution.experiment import ExperimentConfig, run_experiment
    from abnirml.evaluation.execution.workspace import SessionSettings, Workspace
    from abnirml.evaluation.stats.statistics import check_alpha, check_delta
    from abnirml.probes.family_registry import resolve_options
    from abnirml.probes.probe_registry import select_probes

    check_alpha(alpha)
    if delta is not None:
        check_delta(delta)
    selected = select_probes([probes] if isinstance(probes, str) else list(probes))
    workspace = Workspace(collection, SessionSettings(progress=False, candidates=candidates,
                                                      cache=cache), seed)
    loaded = workspace.collection
    (model,) = workspace.build_rankers([ranker])     # a spec, a Ranker, a PyTerrier transformer
    context = workspace.probe_context(resolve_options(options or {}))
    with workspace.scorer() as scorer:
        result = run_experiment(selected, [model], context, scorer,
                                ExperimentConfig(alpha=alpha, delta_all=delta,
                                                 examples_per_probe=0),
                                None if delta is not None else workspace.candidates())
    out: dict[str, Expectation] = {}
    skipped = {r["probe"]: r.get("skipped") or {} for r in result.records if r["subset"] == "all"}
    for record in result.records:
        if record["subset"] != subset:
            continue
        if not record["n"]:
            raise ConfigError(_empty_reason(record["probe"], loaded.name, subset,
                                            skipped.get(record["probe"], {})))
        out[record["probe"]] = Expectation(
            ranker=model.name, probe=record["probe"], collection=loaded.name, subset=subset,
            score=float(record["score"]) if record["score"] is not None else float("nan"),
            significant=bool(record["significant"]),
            p_value=math.nan if record["p_value"] is None else float(record["p_value"]),
            n=int(record["n"]), pos=int(record["pos"]), neg=int(record["neg"]),
            neutral=int(record["neutral"]), delta=float(record["delta"]), record=record,
            counterexamples=counterexamples(result, record["probe"], model.name,
                                            float(record["delta"]),
                                            bool(record.get("symmetric", False))))
    if not out:
        raise ConfigError(f"no results for subset {subset!r} (probes without graded samples "
                          "only have 'all')")
    return out


def _empty_reason(probe: str, collection: str, subset: str, skipped: Mapping[str, int]) -> str:
    """Why a probe gave no samples: a score of NaN over n = 0 would gate nothing."""
    where = f"{probe} has no samples on {collection}" + (
        f" (subset {subset!r})" if subset != "all" else "")
    if "no-data" in skipped:
        return (f"{where}: no transfer data given or found; pass options={{'dtp.data': DIR}} "
                "(the folder holding mrpc/, jfleg/ …, or 'demo' for the shipped corpus)")
    if skipped:
        reasons = ", ".join(f"{n} skipped as {k}" for k, n in sorted(skipped.items()))
        return f"{where}: {reasons}"
    return f"{where}: the probe built no samples from this collection"


def counterexamples(result: Any, probe: str, ranker: str, delta: float,
                    symmetric: bool = False, limit: int = 3) -> tuple[dict[str, Any], ...]:
    """The first ``limit`` samples whose score difference goes against the probe's sign by
    more than δ (for a symmetric probe: differs by more than δ), in sample order."""
    table = result.tables.get(probe)
    scores = result.probe_scores.get((probe, ranker))
    if table is None or scores is None or not len(table):
        return ()
    diff = scores.score1 - scores.score2
    wrong = abs(diff) > delta if symmetric else diff < -delta
    out = []
    for i in np.flatnonzero(wrong)[:limit].tolist():
        sample = table.sample(i)
        out.append({"query": sample.query, "doc1": sample.doc1, "doc2": sample.doc2,
                    "score1": float(scores.score1[i]), "score2": float(scores.score2[i]),
                    "meta": dict(sample.meta)})
    return tuple(out)

