"""Seed / checkpoint variance (journal ABNIRML §4.2, Table 4).

Several rankers can be declared variants of one model — the same architecture trained with
different seeds, or successive checkpoints: ``--variant-group knrm=knrm:s1,knrm:s2,knrm:s3``.
For every probe the group's scores give a mean and a standard deviation; averaging the
standard deviations over a family's probes says how much of that family's behaviour is
down to training noise rather than to the model.

The standard deviation is the sample one (``ddof=1``): the variants are a sample of the
runs a training procedure could have produced.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from abnirml.errors import ConfigError


@dataclass(frozen=True)
class ProbeVariance:
    group: str
    probe: str
    family: str
    subset: str
    scores: tuple[float, ...]      # one per variant that has a score, in group order
    mean: float | None
    std: float | None              # None with fewer than two scores


@dataclass(frozen=True)
class FamilyVariance:
    group: str
    family: str
    subset: str
    mean_std: float | None
    probes: int


def parse_variant_group(text: str) -> tuple[str, list[str]]:
    """``name=spec1,spec2,…`` → (name, canonical member specs). Needs two or more members."""
    from abnirml.rankers.base import RankerSpec

    name, sep, members_text = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise ConfigError(f"--variant-group {text!r} is not NAME=SPEC,SPEC,…")
    members = [RankerSpec.parse(m).text for m in members_text.split(",") if m.strip()]
    if len(members) < 2:
        raise ConfigError(f"--variant-group {name}: needs at least two rankers")
    if len(set(members)) != len(members):
        raise ConfigError(f"--variant-group {name}: a ranker is listed twice")
    return name, members


def expand_rankers(rankers: Sequence[Any], groups: Mapping[str, Sequence[str]]) -> list[Any]:
    """The rankers to run: those given (specs or objects), then every group member not
    already among them."""
    from abnirml.rankers.base import RankerSpec

    out = list(rankers)
    seen = {RankerSpec.parse(r).label if isinstance(r, str) else getattr(r, "name", "")
            for r in rankers}
    for members in groups.values():
        for member in members:
            label = RankerSpec.parse(member).label
            if label not in seen:
                out.append(member)
                seen.add(label)
    return out


def probe_variance(records: Iterable[Mapping[str, Any]],
                   groups: Mapping[str, Sequence[str]]) -> list[ProbeVariance]:
    """Mean and sample standard deviation of each probe's score over each group's variants."""
    by_key: dict[tuple[str, str], dict[str, Mapping[str, Any]]] = {}
    for record in records:
        by_key.setdefault((record["probe"], record["subset"]), {})[record["ranker"]] = record
    out: list[ProbeVariance] = []
    for group, members in groups.items():
        labels = [_label(m) for m in members]
        for (probe, subset), by_ranker in by_key.items():
            present = [by_ranker[m] for m in labels if m in by_ranker]
            if not present:
                continue
            scores = tuple(float(r["score"]) for r in present if r.get("score") is not None)
            mean = sum(scores) / len(scores) if scores else None
            std = None
            if len(scores) >= 2 and mean is not None:
                std = math.sqrt(sum((s - mean) ** 2 for s in scores) / (len(scores) - 1))
            out.append(ProbeVariance(group, probe, str(present[0]["family"]), subset, scores,
                                     mean, std))
    return out


def _label(member: str) -> str:
    """The name a group member's results carry (its display name, else its spec)."""
    from abnirml.rankers.base import RankerSpec

    return RankerSpec.parse(member).label


def family_variance(variances: Sequence[ProbeVariance]) -> list[FamilyVariance]:
    """Average standard deviation per group × family × subset (probes without one left out)."""
    buckets: dict[tuple[str, str, str], list[float]] = {}
    for v in variances:
        bucket = buckets.setdefault((v.group, v.family, v.subset), [])
        if v.std is not None:
            bucket.append(v.std)
    return [FamilyVariance(group, family, subset,
                           sum(stds) / len(stds) if stds else None, len(stds))
            for (group, family, subset), stds in buckets.items()]
