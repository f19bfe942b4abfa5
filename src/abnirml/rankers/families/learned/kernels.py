"""KNRM (Xiong et al., 2017) and Conv-KNRM (Dai et al., 2018) over frozen GloVe vectors.

Both compare every query word with every document word by cosine similarity and pool the
similarities with 11 Gaussian kernels (μ = 1 for exact matches with σ = 10⁻³, then
μ = 0.9, 0.7, …, −0.9 with σ = 0.1): soft term frequencies, logged (floor 10⁻¹⁰, scaled by
0.01, as in the original code) and summed over query words. KNRM feeds the 11 features to a
linear layer; Conv-KNRM first builds uni-, bi- and tri-gram vectors with 128-filter
convolutions (ReLU) and pools each of the 9 query-n-gram × document-n-gram matrices.

Text handling: lowercased terms, the stopwords of the model's list removed, words without a
GloVe vector dropped (OOV), queries cut to 16 and documents to 128 words (configurable).
The GloVe vectors stay frozen — the models learn to weigh kernels (and, for Conv-KNRM, to
compose n-grams), which is what a few dozen judged queries can support — so saved models
hold only these small layers and name the vectors they need.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from abnirml.rankers.families.glove import GloveVectors, glove_tokens

KERNEL_MUS = (1.0, 0.9, 0.7, 0.5, 0.3, 0.1, -0.1, -0.3, -0.5, -0.7, -0.9)
KERNEL_SIGMAS = (1e-3,) + (0.1,) * 10
CONV_FILTERS = 128
MAX_NGRAM = 3


@dataclass(frozen=True)
class TextEncoder:
    """Texts → GloVe row ids, with the model's stopwords and length limits."""

    glove: GloveVectors
    stopwords: frozenset[str]
    max_query_len: int = 16
    max_doc_len: int = 128

    def ids(self, text: str, limit: int) -> list[int]:
        return self.glove.token_ids(glove_tokens(text, self.stopwords))[:limit]

    def batch(self, texts: Sequence[list[int]], torch: Any,
              width: int | None = None) -> tuple[Any, Any]:
        """Embeddings ``[n, L, dim]`` and mask ``[n, L]`` for pre-encoded id lists, ``L``
        the longest list or ``width``. Scoring pads to the fixed limits, so every text is
        computed in the same shape whatever batch it is in, and its score is the same to the
        last bit (a batch-wide width changes the sums' rounding with the batch)."""
        if width is None:
            width = max(1, max((len(t) for t in texts), default=1))
        rows = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.float32)
        for i, ids in enumerate(texts):
            rows[i, :len(ids)] = ids
            mask[i, :len(ids)] = 1.0
        flat = np.asarray(self.glove.vectors[rows.reshape(-1)], dtype=np.float32)
        emb = flat.reshape(len(texts), width, self.glove.dim) * mask[..., None]
        return torch.from_numpy(emb), torch.from_numpy(mask)


def build_module(kind: str, dim: int) -> Any:
    """A fresh KNRM or Conv-KNRM ``torch.nn.Module`` (parameters drawn from torch's RNG)."""
    import torch
    from torch import nn

    mus = torch.tensor(KERNEL_MUS)
    sigmas = torch.tensor(KERNEL_SIGMAS)

    def unit(x: Any) -> Any:
        return nn.functional.normalize(x, p=2, dim=-1, eps=1e-8)

    def kernel_features(qn: Any, q_mask: Any, dn: Any, d_mask: Any) -> Any:
        """Pooled kernel features ``[B, K]`` of unit-length query and document vectors."""
        sim = qn @ dn.transpose(1, 2)                                     # [B, Lq, Ld]
        k = torch.exp(-((sim[..., None] - mus) ** 2) / (2 * sigmas ** 2))  # [B, Lq, Ld, K]
        soft_tf = (k * d_mask[:, None, :, None]).sum(dim=2)               # [B, Lq, K]
        logged = torch.log(soft_tf.clamp(min=1e-10)) * 0.01
        return (logged * q_mask[..., None]).sum(dim=1)                    # [B, K]

    class KNRM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.dense = nn.Linear(len(KERNEL_MUS), 1)

        def forward(self, q: Any, q_mask: Any, d: Any, d_mask: Any) -> Any:
            return self.dense(kernel_features(unit(q), q_mask, unit(d), d_mask)).squeeze(-1)

    class ConvKNRM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.convs = nn.ModuleList(nn.Conv1d(dim, CONV_FILTERS, n)
                                       for n in range(1, MAX_NGRAM + 1))
            self.dense = nn.Linear(len(KERNEL_MUS) * MAX_NGRAM ** 2, 1)

        def grams(self, x: Any) -> list[Any]:
            """Unit n-gram vectors at every position (the text's end padded with zeros)."""
            out = []
            for n, conv in enumerate(self.convs, start=1):
                padded = nn.functional.pad(x.transpose(1, 2), (0, n - 1))
                out.append(unit(torch.relu(conv(padded)).transpose(1, 2)))  # [B, L, F]
            return out

        def forward(self, q: Any, q_mask: Any, d: Any, d_mask: Any) -> Any:
            q_grams, d_grams = self.grams(q), self.grams(d)
            feats = [kernel_features(qg, q_mask, dg, d_mask)
                     for qg in q_grams for dg in d_grams]
            return self.dense(torch.cat(feats, dim=-1)).squeeze(-1)

    if kind == "knrm":
        return KNRM()
    if kind == "cknrm":
        return ConvKNRM()
    raise ValueError(f"unknown kernel model {kind!r}")
