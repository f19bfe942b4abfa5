"""The patching engine: cache the perturbed run, patch it into the baseline, score.

For one aligned pair, the perturbed input is run once with hooks that keep every layer's
residual stream (the input of the first layer — the embeddings — and the output of every
layer) and every attention output projection's input (the heads' outputs side by side).
Then the baseline input is run once per patch, each time with one piece of the cached
perturbed activations written over the baseline's own:

* :class:`ResidualPatch` — the residual stream after ``layer`` layers (0: the embeddings)
  at the positions of a mask; later layers recompute everything from there;
* :class:`HeadPatch` — one head's output at ``layer``, at every position.

The patched score gives the normalised effect (patched − base) / (perturbed − base): 0 when
the patch changes nothing, 1 when it carries the whole perturbation.

Every forward call holds exactly ``batch_size`` rows (a chunk of patches, the last padded
with repeats of its first patch; the clean call holds the perturbed input in its first row
and the baseline in the others), so all rows of a pair go through matrix products of one
shape. A row's place in those products can still change the last bits of its score
(matrix-product kernels may treat rows differently by position), so the known answers
(the last layer patched everywhere gives the perturbed score) are bit-exact with one row
per call and hold to float rounding otherwise. Samples are never mixed in a call, so a
sample's result does not depend on the others or their order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from abnirml.mechanism.alignment import AlignedPair
from abnirml.mechanism.targets import PatchTarget


@dataclass(frozen=True)
class ResidualPatch:
    layer: int                  # 0 = embeddings (input of layer 1); L = output of layer L
    positions: np.ndarray       # bool [length]


@dataclass(frozen=True)
class HeadPatch:
    layer: int                  # 0-based layer index
    head: int


Patch = ResidualPatch | HeadPatch


@dataclass
class Activations:
    """The perturbed run's cache: residual ``[L + 1]`` tensors ``[length, hidden]`` and
    projection inputs ``[L]`` tensors ``[length, heads × head_dim]`` (one row)."""

    residual: list[Any]
    heads_in: list[Any]


@dataclass(frozen=True)
class CleanScores:
    base: float
    perturbed: float


def _hidden(output: Any) -> Any:
    return output[0] if isinstance(output, tuple) else output


def _replace_hidden(output: Any, hidden: Any) -> Any:
    return (hidden, *output[1:]) if isinstance(output, tuple) else hidden


def _layer_input(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, bool]:
    if args:
        return args[0], True
    return kwargs["hidden_states"], False


@contextmanager
def hooked(target: PatchTarget, on_residual: Any = None, on_heads: Any = None
           ) -> Iterator[None]:
    """Install hooks for one forward call: ``on_residual(index, hidden) -> hidden | None``
    sees the residual stream at index 0 (embeddings) … L, ``on_heads(layer, x) -> x | None``
    each projection's input. Hooks are removed on exit, whatever happens."""
    handles = []
    parts = target.parts
    try:
        if on_residual is not None:
            def pre(_module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
                    ) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
                hidden, positional = _layer_input(args, kwargs)
                new = on_residual(0, hidden)
                if new is None:
                    return None
                if positional:
                    return (new, *args[1:]), kwargs
                return args, {**kwargs, "hidden_states": new}

            handles.append(parts.layers[0].register_forward_pre_hook(pre, with_kwargs=True))
            for index, layer in enumerate(parts.layers, start=1):
                def post(_module: Any, _args: tuple[Any, ...], output: Any,
                         index: int = index) -> Any:
                    new = on_residual(index, _hidden(output))
                    return None if new is None else _replace_hidden(output, new)

                handles.append(layer.register_forward_hook(post))
        if on_heads is not None:
            for index, projection in enumerate(parts.projections):
                def before(_module: Any, args: tuple[Any, ...],
                           index: int = index) -> tuple[Any, ...] | None:
                    new = on_heads(index, args[0])
                    return None if new is None else (new, *args[1:])

                handles.append(projection.register_forward_pre_hook(before))
        yield
    finally:
        for handle in handles:
            handle.remove()


def _rows(target: PatchTarget, ids: Sequence[int], extras: dict[str, list[int]],
          count: int) -> tuple[Any, dict[str, Any]]:
    import torch

    row = torch.tensor([list(ids)], dtype=torch.long, device=target.device)
    more = {k: torch.tensor([v], dtype=torch.long, device=target.device).expand(count, -1)
            for k, v in extras.items()}
    return row.expand(count, -1).contiguous(), {k: v.contiguous() for k, v in more.items()}


def run_clean(target: PatchTarget, pair: AlignedPair, batch_size: int
              ) -> tuple[CleanScores, Activations]:
    """Scores of the (filled) baseline and the perturbed input, and the perturbed cache."""
    import torch

    residual: dict[int, Any] = {}
    heads_in: dict[int, Any] = {}

    def keep_residual(index: int, hidden: Any) -> None:  # row 0 only: the perturbed run
        residual[index] = hidden[0].detach().clone()

    def keep_heads(index: int, x: Any) -> None:
        heads_in[index] = x[0].detach().clone()

    with torch.inference_mode():
        # one call: row 0 the perturbed input (cached), the other rows the baseline
        ids, extras = _rows(target, pair.base_ids, pair.extras, batch_size)
        ids[0] = torch.tensor(pair.perturbed_ids, dtype=ids.dtype, device=ids.device)
        with hooked(target, keep_residual, keep_heads):
            scores = target.scores(ids, extras)
        perturbed = float(scores[0])
        base = float(scores[-1]) if batch_size > 1 else _single(target, pair, extras)
    layers = len(target.parts.layers)
    cache = Activations([residual[i] for i in range(layers + 1)],
                        [heads_in[i] for i in range(layers)])
    return CleanScores(base, perturbed), cache


def _single(target: PatchTarget, pair: AlignedPair, extras: dict[str, Any]) -> float:
    """The baseline's score in a one-row call (when calls hold one row)."""
    import torch

    ids = torch.tensor([pair.base_ids], dtype=torch.long, device=target.device)
    return float(target.scores(ids, extras)[0])


def patched_scores(target: PatchTarget, pair: AlignedPair, cache: Activations,
                   patches: Sequence[Patch], batch_size: int) -> np.ndarray:
    """The baseline's score under each patch (float64 ``[len(patches)]``)."""
    import torch

    out = np.empty(len(patches), dtype=np.float64)
    heads = target.parts.heads
    length = pair.length
    with torch.inference_mode():
        ids, extras = _rows(target, pair.base_ids, pair.extras, batch_size)
        for start in range(0, len(patches), batch_size):
            chunk = list(patches[start:start + batch_size])
            taken = len(chunk)
            chunk += [chunk[0]] * (batch_size - taken)
            residual_masks: dict[int, Any] = {}
            head_masks: dict[int, Any] = {}
            for row, patch in enumerate(chunk):
                if isinstance(patch, ResidualPatch):
                    mask = residual_masks.setdefault(
                        patch.layer, torch.zeros((batch_size, length), dtype=torch.bool))
                    mask[row] = torch.from_numpy(np.asarray(patch.positions, dtype=bool))
                else:
                    mask = head_masks.setdefault(
                        patch.layer, torch.zeros((batch_size, heads), dtype=torch.bool))
                    mask[row, patch.head] = True
            residual_masks = {k: v.to(target.device) for k, v in residual_masks.items()}
            head_masks = {k: v.to(target.device) for k, v in head_masks.items()}

            on_residual, on_heads = _patchers(cache, residual_masks, head_masks, heads)
            with hooked(target, on_residual if residual_masks else None,
                        on_heads if head_masks else None):
                scores = target.scores(ids, extras)
            out[start:start + taken] = scores[:taken].double().cpu().numpy()
    return out


def _patchers(cache: Activations, residual_masks: dict[int, Any], head_masks: dict[int, Any],
              heads: int) -> tuple[Any, Any]:
    """The hook functions writing cached perturbed activations over the baseline's where the
    masks say (rows × positions for the residual stream, rows × heads for the heads)."""
    import torch

    def on_residual(index: int, hidden: Any) -> Any:
        mask = residual_masks.get(index)
        if mask is None:
            return None
        source = cache.residual[index].to(hidden.dtype)
        return torch.where(mask[..., None], source[None], hidden)

    def on_heads(index: int, x: Any) -> Any:
        mask = head_masks.get(index)
        if mask is None:
            return None
        rows, positions, width = x.shape
        split = x.reshape(rows, positions, heads, width // heads)
        source = cache.heads_in[index].to(x.dtype).reshape(1, positions, heads, -1)
        patched = torch.where(mask[:, None, :, None], source, split)
        return patched.reshape(rows, positions, width)

    return on_residual, on_heads


def normalised(patched: np.ndarray, clean: CleanScores) -> np.ndarray:
    """(patched − base) / (perturbed − base)."""
    return (np.asarray(patched, dtype=np.float64) - clean.base) / (clean.perturbed - clean.base)
