"""Builders for small hand-made collections used across tests, the one-error-line check of a
failing command, and float32 tolerances derived from a computation's shape."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from abnirml.data.collection import Collection


def make_collection(queries: dict[str, str], docs: dict[str, str],
                    qrels: dict[str, dict[str, int]], name: str = "tiny") -> Collection:
    return Collection(name=name, queries=queries, docs=docs, qrels=qrels,
                      skipped={"judged_without_text": 0})


def write_collection_dir(root: Path, queries: dict[str, str], docs: dict[str, str],
                         qrels: dict[str, dict[str, int]],
                         runs: dict[str, dict[str, list[tuple[str, float]]]] | None = None
                         ) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "queries.tsv").write_text("".join(f"{k}\t{v}\n" for k, v in queries.items()),
                                      encoding="utf-8")
    (root / "passages.tsv").write_text("".join(f"{k}\t{v}\n" for k, v in docs.items()),
                                       encoding="utf-8")
    (root / "qrels.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, j in qrels.items()
                                            for d, g in j.items()), encoding="utf-8")
    if runs:
        (root / "runs").mkdir(exist_ok=True)
        for name, run in runs.items():
            lines = [f"{q} Q0 {d} {i + 1} {s} {name}\n" for q, ranking in run.items()
                     for i, (d, s) in enumerate(ranking)]
            (root / "runs" / f"{name}.run").write_text("".join(lines), encoding="utf-8")
    return root


def one_error_line(capsys, *args: str) -> str:
    """Run the CLI expecting exit 2 and exactly one ``abnirml: error:`` line; return it."""
    from abnirml.cli import main

    code = main(list(args))
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2, err
    errors = [line for line in err if line.startswith("abnirml: error: ")]
    assert len(errors) == 1 and "Traceback" not in "\n".join(err), err
    return errors[0]


# --- float32 tolerances --------------------------------------------------------------------

#: float32's unit roundoff: one rounding moves a result by at most this share of it.
FLOAT32_UNIT_ROUNDOFF = 2.0 ** -24

#: λ of the probabilistic bound below: it fails with probability at most 2·exp(−λ²/2) per
#: rounding-error chain (≈ 4e-22 for λ = 10), whatever the machine's load.
ROUNDING_LAMBDA = 10.0


def reordering_bound(chain: int | Iterable[int], scale: float = 1.0,
                     roundoff: float = FLOAT32_UNIT_ROUNDOFF) -> float:
    """How far two float32 evaluations of one computation may lie apart when they differ only
    in the order of their sums.

    The order is all that batch size, padding, a row's place in a matrix product, the
    kernel's blocking, memory alignment and the number of threads splitting a sum change
    (MKL may pick its thread count and code path per call, so the order can change with
    the machine's load); a sum of ``n`` terms makes ``n`` roundings whichever of these
    orders it takes, so thread count never enters. ``chain`` is the number of roundings
    between input and output along the computation's longest dependency path (or the
    lengths of its successive sums, added up); ``scale`` the size of the values the last
    sums add (1 for a model whose last layers read normalised, unit-scale features).

    With rounding errors modelled as independent and of mean zero (round to nearest), a
    chain of ``N`` roundings is off by at most γ̃_N(λ) = exp(λ√N·u + N·u²/(1 − u)) − 1 of
    its size with probability at least 1 − 2·exp(−λ²(1 − u)²/2) (Higham & Mary, "A new
    approach to probabilistic rounding error analysis", SIAM J. Sci. Comput. 41(5), 2019);
    to first order the relative errors of successive sums add along the chain (each layer's
    normalisation keeps its activations at unit scale). Two evaluations are each within that
    of the exact value, so within twice of each other. The worst case (N·u, whatever the
    errors' signs) is √N/λ times wider still: for all-MiniLM-L6-v2's shape (N ≈ 27,000)
    wider than the patching effects its known-answer test tells apart, while the bound here
    is twelve times below them and thousands of times above the differences seen.
    """
    n = chain if isinstance(chain, int) else sum(chain)
    u = roundoff
    gamma = math.expm1(ROUNDING_LAMBDA * math.sqrt(n) * u + n * u * u / (1 - u))
    return 2.0 * gamma * scale


def transformer_chain(config: Any, length: int | None = None, outputs: Iterable[int] = ()
                      ) -> int:
    """The roundings along one output's longest path through a Hugging Face transformer
    (``config``: its config object or model folder) on inputs of ``length`` tokens (the
    longest the model takes when not given).

    Per layer, in sequence: the query/key/value projections (a sum over the hidden width),
    attention scores (head width), the softmax's normaliser and the weighted sum of values
    (``length`` each), the output projection (hidden), the residual add, a normalisation
    (mean and variance over the hidden width), the feed-forward's two products (hidden, then
    intermediate width), its activation, the residual add and the second normalisation. An
    encoder-decoder counts each decoder layer twice (self- and cross-attention). The
    embeddings' sum and normalisation come first; ``outputs`` adds the head's sums (a pooler
    and classifier over the hidden width, a log-softmax over the vocabulary …).
    """
    if isinstance(config, (str, Path)):
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(str(config))
    hidden = getattr(config, "hidden_size", None) or config.d_model
    layers = getattr(config, "num_hidden_layers", None) or config.num_layers
    layers += 2 * (getattr(config, "num_decoder_layers", 0) or 0)
    inner = getattr(config, "intermediate_size", None) or config.d_ff
    heads = getattr(config, "num_attention_heads", None) or config.num_heads
    head = getattr(config, "head_dim", None) or getattr(config, "d_kv", None) or hidden // heads
    if length is None:
        length = getattr(config, "max_position_embeddings", None) or 512
    per_layer = hidden + head + 2 * length + hidden + 1 + 2 * hidden + hidden + inner + 2 \
        + 2 * hidden
    return 3 + 2 * hidden + layers * per_layer + sum(outputs)


def score_bound(spec: str, scale: float = 1.0) -> float:
    """:func:`reordering_bound` for a score of the ranker ``spec`` (``family:folder[+…]``,
    a local Hugging Face model): the transformer's chain, then a pooler or decoder, the head
    and a softmax over the vocabulary (ColBERT: also its projection and the 32 query
    positions' MaxSim). ``scale`` is the size of the score's terms (1 for a score computed
    from normalised features; 32 for ColBERT's sum of 32 cosines)."""
    from transformers import AutoConfig

    family, _, rest = spec.partition(":")
    config = AutoConfig.from_pretrained(rest.split("+", 1)[0])
    width = getattr(config, "hidden_size", None) or config.d_model
    outputs = (width, width, config.vocab_size) + ((16, 32) if family == "colbert" else ())
    return reordering_bound(transformer_chain(config, outputs=outputs), scale)


def knrm_bound(scores: Any, max_query_len: int = 16, max_doc_len: int = 128,
               dimensions: int = 50) -> float:
    """:func:`reordering_bound` for KNRM scores: a cosine over the GloVe ``dimensions`` (two
    norms and a dot product), a kernel, the sum over the document's terms, a log, the sum
    over the query's terms and the 11 kernels' weights. The kernels' width (σ = 0.1) turns
    a similarity's error into up to ten times as much of a kernel value, so the scale is ten
    times the scores' size."""
    import numpy as np

    chain = 3 * dimensions + 1 + max_doc_len + 1 + max_query_len + 11 + 1
    return reordering_bound(chain, 10.0 * max(1.0, float(np.abs(scores).max())))
