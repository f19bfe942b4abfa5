"""Per-sample scores persisted next to the results, so analyses never rescore.

``scores.npz`` (written by :func:`save_scores`, read by :func:`load_scores`) holds, for every
probe, the relevance grade of each sample and the two scores every ranker gave it, plus
each ranker's δ calibration gaps. With it, ``abnirml report DIR`` can redo the δ sweep, and
``abnirml compare`` can test per-sample differences between two runs — from files alone.

The file is a plain NumPy archive read with ``allow_pickle=False``: a JSON manifest (stored as
a unicode scalar) names probes and rankers, and the arrays are ``grade_<i>``,
``score1_<i>`` / ``score2_<i>`` (rankers × samples, float64) and ``gaps_<j>``. Each probe
also carries a digest of its samples' texts, so comparisons only pair up identical samples.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from abnirml.errors import InputError
from abnirml.evaluation.execution.experiment import (
    ExperimentResult,
    ProbeOutline,
    ProbeScores,
    build_records,
)
from abnirml.evaluation.stats.calibration import Calibration
from abnirml.evaluation.stats.significance import STATISTICS_DEFAULTS, StatsConfig
from abnirml.files.run_names import SCORES
from abnirml.probes.base import DEFAULT_GRADE_BANDS, SampleTable
from abnirml.result_fields import ResultRow

FORMAT = "abnirml-scores"
VERSION = 1
FILENAME = SCORES


@dataclass(frozen=True)
class ProbeInfo:
    """What the analyses need to know about a probe (duck-types the Probe contract)."""

    name: str
    family: str
    symmetric: bool
    digest: str = ""
    skipped: tuple[tuple[str, int], ...] = ()
    record_extra: str = "{}"   # JSON of the fields the probe adds to every record


@dataclass(frozen=True)
class RankerInfo:
    name: str
    fingerprint: str = ""


@dataclass
class ScoreStore:
    """Everything needed to recompute records at any δ: scores, grades, calibrations."""

    probes: list[ProbeInfo]
    rankers: list[RankerInfo]
    scores: dict[tuple[str, str], ProbeScores]
    calibrations: dict[str, Calibration]
    grade_bands: tuple[tuple[str, int, int], ...] = DEFAULT_GRADE_BANDS
    alpha: float = STATISTICS_DEFAULTS.alpha
    stats: StatsConfig = field(default_factory=StatsConfig)   # test, correction, intervals

    @property
    def ranker_names(self) -> list[str]:
        return [r.name for r in self.rankers]

    def probe(self, name: str) -> ProbeInfo:
        for probe in self.probes:
            if probe.name == name:
                return probe
        raise KeyError(name)

    def records(self, delta_for: Mapping[str, float] | None = None,
                rankers: Sequence[str] | None = None) -> list[ResultRow]:
        """Result records exactly as the engine builds them, optionally at other δ."""
        chosen = [r for r in self.rankers if rankers is None or r.name in rankers]
        outlines = [ProbeOutline(p.name, p.family, p.symmetric, dict(p.skipped),
                                 json.loads(p.record_extra)) for p in self.probes]
        return build_records(outlines, [r.name for r in chosen], self.scores,
                             self.calibrations, self.grade_bands, self.alpha,
                             delta_for=delta_for, stats=self.stats)

    @classmethod
    def from_result(cls, result: ExperimentResult, alpha: float | None = None,
                    grade_bands: Sequence[Sequence[Any]] | None = None,
                    stats: StatsConfig | None = None) -> ScoreStore:
        summary = result.summary
        bands = grade_bands if grade_bands is not None else summary.get("grade_bands")
        first: dict[str, Mapping[str, Any]] = {}
        for record in result.records:
            first.setdefault(record["probe"], record)
        order = _probe_order(result)
        probes = []
        for name in order:
            seen = first.get(name, {})
            table = result.tables[name]
            probes.append(ProbeInfo(
                name=name, family=str(seen.get("family", "")),
                symmetric=bool(seen.get("symmetric", False)), digest=sample_digest(table),
                skipped=tuple(sorted((str(k), int(v)) for k, v in table.skipped.items())),
                record_extra=json.dumps(table.extra.get("record", {}), allow_nan=False)))
        rankers = [RankerInfo(name) for name in summary.get("rankers", list(result.calibrations))]
        return cls(probes=probes, rankers=rankers, scores=dict(result.probe_scores),
                   calibrations=dict(result.calibrations),
                   grade_bands=_bands(bands) if bands is not None else DEFAULT_GRADE_BANDS,
                   alpha=float(alpha if alpha is not None
                               else summary.get("alpha", STATISTICS_DEFAULTS.alpha)),
                   stats=stats if stats is not None else _stats(summary.get("stats"),
                                                                summary.get("seed", 0)))


def _stats(raw: Mapping[str, Any] | None, seed: int) -> StatsConfig:
    """A StatsConfig from its ``as_dict`` form (files without one get the defaults)."""
    raw = raw or {}
    default = StatsConfig()                  # a field the file lacks: the one default
    return StatsConfig(test=str(raw.get("test", default.test)),
                       correction=str(raw.get("correction", default.correction)),
                       permutations=int(raw.get("permutations", default.permutations)),
                       resamples=int(raw.get("bootstrap", default.resamples)),
                       ci_level=float(raw.get("ci", default.ci_level)),
                       seed=int(raw.get("seed", seed)))


def _probe_order(result: ExperimentResult) -> list[str]:
    """Probes in the order the engine received them (tables keep insertion order)."""
    return list(result.tables)


def _bands(raw: Sequence[Sequence[Any]]) -> tuple[tuple[str, int, int], ...]:
    return tuple((str(name), int(lo), int(hi)) for name, lo, hi in raw)


def sample_digest(table: SampleTable) -> str:
    """A digest of a probe's samples: their texts, in order. Equal digests ⇒ same samples."""
    h = hashlib.blake2b(digest_size=12)
    for text in table.texts:
        h.update(text.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    for column in (table.query, table.doc1, table.doc2):
        h.update(np.ascontiguousarray(column, dtype="<i8").tobytes())
    return h.hexdigest()


def save_scores(path: Path, store: ScoreStore) -> None:
    """Write ``store`` as a compressed, pickle-free NumPy archive (atomically)."""
    arrays: dict[str, np.ndarray] = {}
    names = store.ranker_names
    for i, probe in enumerate(store.probes):
        per_ranker = [store.scores[(probe.name, r)] for r in names]
        # A pairwise or listwise ranker has no samples of a probe of three documents (TFC2):
        # its rows are NaN, which no ranker's checked scores ever are.
        n = max((ps.score1.shape[0] for ps in per_ranker), default=0)
        full = [ps for ps in per_ranker if ps.score1.shape[0] == n]
        grade = full[0].grade if full else np.zeros(0)
        arrays[f"grade_{i}"] = np.asarray(grade, dtype=np.float64)
        for column in ("score1", "score2"):
            arrays[f"{column}_{i}"] = np.stack([
                getattr(ps, column) if ps.score1.shape[0] == n else np.full(n, np.nan)
                for ps in per_ranker]).astype(np.float64) if per_ranker else np.zeros((0, n))
        cluster = full[0].cluster if full else None
        if cluster is not None:
            arrays[f"cluster_{i}"] = np.asarray(cluster, dtype=np.int64)
            arrays[f"queries_{i}"] = np.array(per_ranker[0].queries, dtype=np.str_)
    for j, name in enumerate(names):
        arrays[f"gaps_{j}"] = np.asarray(store.calibrations[name].gaps, dtype=np.float64)
    manifest = {
        "format": FORMAT, "version": VERSION, "alpha": store.alpha,
        "stats": store.stats.as_dict(),
        "grade_bands": [list(b) for b in store.grade_bands],
        "probes": [{"name": p.name, "family": p.family, "symmetric": p.symmetric,
                    "digest": p.digest, "skipped": dict(p.skipped),
                    "record_extra": json.loads(p.record_extra)} for p in store.probes],
        "rankers": [{"name": r.name, "fingerprint": r.fingerprint,
                     "delta": store.calibrations[r.name].delta,
                     "source": store.calibrations[r.name].source,
                     "queries": store.calibrations[r.name].queries} for r in store.rankers],
    }
    arrays["manifest"] = np.array(json.dumps(manifest, ensure_ascii=False, allow_nan=False))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, **arrays)  # type: ignore[arg-type]
    tmp.replace(path)


def load_scores(path: str | Path) -> ScoreStore:
    """Read a ``scores.npz`` written by :func:`save_scores` (never unpickles); ``path`` may
    also name the output folder holding it."""
    if not isinstance(path, (str, os.PathLike)):
        from abnirml.errors import ConfigError

        raise ConfigError(f"load_scores takes a str or Path, got {type(path).__name__} "
                          f"{path!r}")
    path = Path(path)
    if path.is_dir():
        path = path / FILENAME
    if not path.is_file():
        raise InputError("per-sample score file not found (written by 'abnirml run')", path=path)
    try:
        with np.load(path, allow_pickle=False) as data:
            manifest = json.loads(str(data["manifest"]))
            if manifest.get("format") != FORMAT:
                raise InputError("not an abnirml score file", path=path)
            if int(manifest.get("version", 0)) > VERSION:
                raise InputError(f"score file version {manifest['version']} is newer than "
                                 f"this abnirml understands ({VERSION})", path=path)
            rankers = [RankerInfo(r["name"], r.get("fingerprint", ""))
                       for r in manifest["rankers"]]
            calibrations = {
                r["name"]: Calibration(delta=float(r["delta"]), gaps=data[f"gaps_{j}"],
                                       queries=int(r["queries"]), source=str(r["source"]))
                for j, r in enumerate(manifest["rankers"])}
            probes: list[ProbeInfo] = []
            scores: dict[tuple[str, str], ProbeScores] = {}
            for i, p in enumerate(manifest["probes"]):
                probes.append(ProbeInfo(p["name"], p["family"], bool(p["symmetric"]),
                                        p.get("digest", ""),
                                        tuple(sorted(p.get("skipped", {}).items())),
                                        json.dumps(p.get("record_extra", {}),
                                                   allow_nan=False)))
                grade, s1, s2 = data[f"grade_{i}"], data[f"score1_{i}"], data[f"score2_{i}"]
                # Older files have no query clusters: each sample is then its own cluster.
                cluster = data[f"cluster_{i}"] if f"cluster_{i}" in data.files else None
                queries = (tuple(data[f"queries_{i}"].tolist())
                           if f"queries_{i}" in data.files else ())
                for j, ranker in enumerate(rankers):
                    if s1[j].size and np.isnan(s1[j]).all():     # no samples for this ranker
                        scores[(p["name"], ranker.name)] = ProbeScores(
                            np.zeros(0), np.zeros(0), np.zeros(0))
                        continue
                    scores[(p["name"], ranker.name)] = ProbeScores(s1[j], s2[j], grade, cluster,
                                                                   queries)
    except (KeyError, ValueError, OSError, TypeError, AttributeError, IndexError, EOFError,
            zipfile.BadZipFile, zlib.error) as exc:
        # truncated or hand-edited archives fail in all of these ways inside numpy/zipfile
        raise InputError(f"unreadable score file ({type(exc).__name__}: {exc})",
                         path=path) from None
    return ScoreStore(probes=probes, rankers=rankers, scores=scores, calibrations=calibrations,
                      grade_bands=_bands(manifest.get("grade_bands", DEFAULT_GRADE_BANDS)),
                      alpha=float(manifest.get("alpha", STATISTICS_DEFAULTS.alpha)),
                      stats=_stats(manifest.get("stats"), 0))
