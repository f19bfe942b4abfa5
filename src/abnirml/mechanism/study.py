"""Patching over a probe's samples: choose and align samples, patch each, average.

:func:`patch_samples` is the Python entry point for samples already in hand;
:mod:`abnirml.mechanism.run` builds them from a probe and a collection.

Per sample the residual-stream grid is ``[L + 1, classes + 1]`` (rows: embeddings, then
each layer's output; columns: the position classes of
:data:`~abnirml.mechanism.alignment.CLASS_NAMES` and ``all`` positions) and the head grid is
``[L, H]``, both holding normalised effects. A class a sample does not have (no query
segment in a bi-encoder's document stream, no untouched query term) is NaN there and the
cell's mean is over the samples that have it.

Samples whose two scores differ by less than ``min_difference`` are left out (counted):
the normalised effect divides by that difference, and near-zero denominators turn float
noise into effects of any size. Even above it, a few samples with small differences can
dominate a mean, which is why the summary also keeps each cell's median.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from abnirml.mechanism.alignment import CLASS_NAMES, AlignedPair, NotAlignable, align
from abnirml.mechanism.engine import (
    HeadPatch,
    ResidualPatch,
    normalised,
    patched_scores,
    run_clean,
)
from abnirml.mechanism.targets import PatchTarget

GRANULARITIES = ("residual", "heads")
COLUMNS = (*CLASS_NAMES, "all")
DEFAULT_MIN_DIFFERENCE = 1e-3
#: token positions per forward call when no batch size is given: rows = budget // length
TOKENS_PER_FORWARD = 4096
SMALL_DIFFERENCE = "score difference below min_difference"


@dataclass
class SampleResult:
    qid: str
    key: str
    base: float
    perturbed: float
    residual: np.ndarray | None     # [L + 1, len(COLUMNS)], NaN for absent classes
    heads: np.ndarray | None        # [L, H]
    changed: int                    # changed positions
    length: int
    forwards: int                   # forward passes (rows) spent on this sample


def stacked(arrays: Sequence[np.ndarray | None], granularity: str) -> np.ndarray:
    """The samples' arrays of one granularity as one array; each sample has one wherever
    that granularity was patched, so a missing one is a programming error, not data."""
    present = [a for a in arrays if a is not None]
    if len(present) != len(arrays):
        raise ValueError(f"{len(arrays) - len(present)} samples lack their {granularity} result")
    return np.stack(present)


@dataclass
class ProbePatching:
    """Everything patching found for one probe and one ranker."""

    probe: str
    ranker: str
    layers: int
    heads: int
    granularities: tuple[str, ...]
    samples: list[SampleResult] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    tried: int = 0

    def residual_stack(self) -> np.ndarray:
        return stacked([s.residual for s in self.samples], "residual") if self.samples else \
            np.zeros((0, self.layers + 1, len(COLUMNS)))

    def head_stack(self) -> np.ndarray:
        return stacked([s.heads for s in self.samples], "heads") if self.samples else \
            np.zeros((0, self.layers, self.heads))


def sample_key(seed: int, probe: str, query: str, base: str, perturbed: str) -> str:
    """A sample's place in the seeded order: a hash of its texts, never its list position."""
    text = "\x00".join((str(seed), probe, query, base, perturbed))
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def rows_per_call(length: int, batch_size: int | None, patches: int) -> int:
    """Rows of every forward call of one sample: ``batch_size`` when given, else as many as
    fit :data:`TOKENS_PER_FORWARD` positions, spread evenly over the calls the sample's
    patches need (idle padding rows are wasted work, and SPLADE's logits are [rows, length,
    vocabulary])."""
    if batch_size:
        return batch_size
    most = max(1, TOKENS_PER_FORWARD // max(length, 1))
    calls = -(-max(patches, 1) // most)
    return -(-max(patches, 1) // calls)


def residual_patches(pair: AlignedPair, layers: int) -> list[tuple[tuple[int, int], ResidualPatch]]:
    """(grid cell, patch) for every layer and every class the pair has, plus all positions."""
    out = []
    for column, name in enumerate(COLUMNS):
        mask = pair.mask(None if name == "all" else column)
        if not mask.any():
            continue
        out += [((layer, column), ResidualPatch(layer, mask)) for layer in range(layers + 1)]
    return out


def patch_pair(target: PatchTarget, pair: AlignedPair, granularities: Sequence[str],
               batch_size: int | None = None, min_difference: float = DEFAULT_MIN_DIFFERENCE,
               ) -> tuple[Any, np.ndarray | None, np.ndarray | None, int]:
    """Clean scores and the residual / head grids of one aligned pair (None grids when the
    score difference is below ``min_difference``); the last value counts forward rows."""
    layers, heads = len(target.parts.layers), target.parts.heads
    cells = residual_patches(pair, layers) if "residual" in granularities else []
    head_patches = ([HeadPatch(layer, head) for layer in range(layers) for head in range(heads)]
                    if "heads" in granularities else [])
    rows = rows_per_call(pair.length, batch_size, len(cells) + len(head_patches))
    clean, cache = run_clean(target, pair, rows)
    forwards = 2
    if abs(clean.perturbed - clean.base) < min_difference:
        return clean, None, None, forwards
    # one sequence of calls for both granularities: no second half-empty last call
    patches: list[ResidualPatch | HeadPatch] = [*(p for _, p in cells), *head_patches]
    values = normalised(patched_scores(target, pair, cache, patches, rows), clean)
    forwards += len(values)
    residual = head_grid = None
    if cells:
        residual = np.full((layers + 1, len(COLUMNS)), np.nan)
        for (layer, column), value in zip((c for c, _ in cells), values[:len(cells)],
                                          strict=True):
            residual[layer, column] = value
    if head_patches:
        head_grid = values[len(cells):].reshape(layers, heads)
    return clean, residual, head_grid, forwards


def patch_samples(target: PatchTarget, samples: Iterable[Any], probe: str = "pairs",
                  granularities: Sequence[str] = GRANULARITIES, limit: int | None = None,
                  seed: int = 0, filler: str = "a", batch_size: int | None = None,
                  min_difference: float = DEFAULT_MIN_DIFFERENCE, max_tries: int | None = None,
                  on_sample: Callable[[int], None] | None = None) -> ProbePatching:
    """Patch each sample's perturbed text (``doc1``) into its baseline (``doc2``).

    Samples are visited in an order set by ``seed`` and their own texts (so neither the
    order they come in nor the other samples change which are chosen); pairs that cannot be
    aligned or whose scores barely differ are counted in ``skipped`` by reason, and the
    first ``limit`` usable ones are patched. ``max_tries`` bounds the pairs examined.
    """
    unknown = [g for g in granularities if g not in GRANULARITIES]
    if unknown or not granularities:
        from abnirml.errors import ConfigError

        raise ConfigError(f"granularity must be residual and/or heads, got "
                          f"{', '.join(unknown) or 'nothing'}")
    result = ProbePatching(probe, target.name, len(target.parts.layers), target.parts.heads,
                           tuple(g for g in GRANULARITIES if g in granularities))
    filler_id = target.filler_id(filler)
    ordered = sorted(((sample_key(seed, probe, s.query, s.doc2, s.doc1), s) for s in samples),
                     key=lambda item: item[0])
    for key, sample in ordered:
        if limit is not None and len(result.samples) >= limit:
            break
        if max_tries is not None and result.tried >= max_tries:
            break
        result.tried += 1
        try:
            perturbed = target.encode(sample.query, sample.doc1)
            pair = align(target.encode(sample.query, sample.doc2), perturbed, filler_id,
                         target.query_terms(sample.query, perturbed))
        except NotAlignable as why:
            result.skipped[str(why)] += 1
            continue
        target.prepare(sample.query)
        clean, residual, heads, forwards = patch_pair(target, pair, result.granularities,
                                                      batch_size, min_difference)
        if residual is None and heads is None:
            result.skipped[SMALL_DIFFERENCE] += 1
            continue
        result.samples.append(SampleResult(
            str((sample.meta or {}).get("qid", "")), key, clean.base, clean.perturbed,
            residual, heads, int((pair.classes == CLASS_NAMES.index("changed")).sum()),
            pair.length, forwards))
        if on_sample is not None:
            on_sample(len(result.samples))
    return result
