"""ColBERT: late interaction — the sum over query tokens of the best-matching document token.

``colbert:<hub name or directory>[+query_maxlen=32][+doc_maxlen=180][+batch_size=N]
[+projection=auto|none][+dtype=fp32|fp16|bf16][+max_tokens=N][+revision=R]``,
e.g. ``colbert:colbert-ir/colbertv2.0``.

Both texts go through one BERT-style encoder, then a bias-free linear projection, then L2
normalisation. As in the original code, a query is prefixed with the ``[unused0]`` marker and
padded to ``query_maxlen`` with ``[MASK]`` tokens (query augmentation; every position takes
part in MaxSim), a document with ``[unused1]``, and document punctuation tokens are skipped.

Supported checkpoint layout — the Hugging Face layout the ColBERT repository saves
(``colbert-ir/colbertv2.0``, v1 checkpoints converted with its ``HF_ColBERT`` class): a
directory with ``config.json``, tokenizer files and ``model.safetensors`` or
``pytorch_model.bin`` holding the encoder as ``bert.*`` and the projection as
``linear.weight`` (``[dim, hidden]``); an ``artifact.metadata`` JSON, when present, supplies
``query_maxlen``, ``doc_maxlen``, ``mask_punctuation`` and ``attend_to_mask_tokens``.
A directory without ``linear.weight`` (a plain BERT) is refused unless ``+projection=none``
asks for MaxSim over the unprojected hidden states. Original ``.dnn`` training checkpoints
are not read: convert them with the ColBERT repository first.
"""

from __future__ import annotations

import json
import string
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abnirml.errors import ConfigError
from abnirml.rankers.base import Pair, RankerSpec
from abnirml.rankers.support.device_batching import (
    DeviceSettings,
    TokenBudgetRanker,
    TokenColumns,
    cast_model,
)
from abnirml.rankers.support.hf import (
    ModelRef,
    first_line,
    hub_offline,
    hub_reachable,
    load_pretrained,
    model_identity,
    resolve_model,
    set_pickle_policy,
)
from abnirml.rankers.support.torch_support import import_or_explain, import_torch

if TYPE_CHECKING:
    from abnirml.rankers.built_in import ColBERTParams

QUERY_MARKER = "[unused0]"
DOC_MARKER = "[unused1]"
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
_MASKED = -1e4


class ColBERTRanker(TokenBudgetRanker):
    def __init__(self, ref: ModelRef, name: str, device: str = "cpu",
                 query_maxlen: int | None = None, doc_maxlen: int | None = None,
                 batch_size: int | None = None, projection: str = "auto",
                 settings: DeviceSettings | None = None):
        torch = self._torch = import_torch(name)
        transformers = import_or_explain("transformers", name, "neural")
        if projection not in ("auto", "none"):
            raise ConfigError(f"ranker {name}: projection must be auto or none")
        self.name = name
        self.device = device
        self.settings = settings or DeviceSettings(device=self.device, max_batch=batch_size)
        self.tokenizer = load_pretrained(transformers.AutoTokenizer.from_pretrained, ref, name)
        encoder = load_pretrained(transformers.AutoModel.from_pretrained, ref, name)
        meta = _artifact_metadata(ref)
        self.query_maxlen = query_maxlen or int(meta.get("query_maxlen", 32))
        self.doc_maxlen = doc_maxlen or int(meta.get("doc_maxlen", 180))
        self.mask_punctuation = bool(meta.get("mask_punctuation", True))
        self.attend_to_masks = bool(meta.get("attend_to_mask_tokens", False))
        self.encoder = cast_model(encoder, self.settings)
        weight = None if projection == "none" else _projection_weight(ref, name)
        if weight is None and projection == "auto":
            raise ConfigError(f"ranker {name}: {ref.source} holds no ColBERT projection "
                              "('linear.weight'); add +projection=none to use the raw encoder")
        self.projection = None if weight is None else weight.to(self.device, torch.float32)
        tok = self.tokenizer
        self.markers = (self._token_id(QUERY_MARKER), self._token_id(DOC_MARKER))
        if tok.mask_token_id is None or tok.pad_token_id is None:
            raise ConfigError(f"ranker {name}: the tokenizer lacks [MASK] or [PAD] tokens")
        self.skip_ids = self._punctuation_ids() if self.mask_punctuation else []
        self.pad_values = {"input_ids": int(tok.pad_token_id)}
        self.hints = self.settings.hints()
        dim = "none" if weight is None else str(weight.shape[0])
        self.fingerprint = (f"ColBERT[{model_identity(ref, encoder.config)}]"
                            f"[qlen={self.query_maxlen},dlen={self.doc_maxlen},dim={dim},"
                            f"mask_punct={self.mask_punctuation},attend_masks={self.attend_to_masks}]"
                            + self.settings.fingerprint)

    def _token_id(self, token: str) -> int:
        tid = self.tokenizer.convert_tokens_to_ids(token)
        if tid is None or tid == self.tokenizer.unk_token_id:
            raise ConfigError(f"ranker {self.name}: the vocabulary has no {token} marker token")
        return int(tid)

    def _punctuation_ids(self) -> list[int]:
        ids = set()
        for symbol in string.punctuation:
            encoded = self.tokenizer(symbol, add_special_tokens=False).input_ids
            if len(encoded) == 1 and encoded[0] != self.tokenizer.unk_token_id:
                ids.add(int(encoded[0]))
        return sorted(ids)

    def _embed(self, input_ids: Any, attention: Any) -> Any:
        torch = self._torch
        hidden = self.encoder(input_ids=input_ids.to(self.device),
                              attention_mask=attention.to(self.device)).last_hidden_state.float()
        if self.projection is not None:
            hidden = hidden @ self.projection.T
        return torch.nn.functional.normalize(hidden, p=2, dim=-1)

    def encode_queries(self, queries: list[str]) -> Any:
        """``[n, query_maxlen, dim]``: every position, [MASK] augmentation included."""
        tok = self.tokenizer
        enc = tok([f". {q}" for q in queries], padding="max_length", truncation=True,
                  max_length=self.query_maxlen, return_tensors="pt")
        ids, attention = enc["input_ids"], enc["attention_mask"]
        ids[:, 1] = self.markers[0]
        ids[ids == tok.pad_token_id] = tok.mask_token_id
        if self.attend_to_masks:
            attention[ids == tok.mask_token_id] = 1
        return self._embed(ids, attention)

    def encode_documents(self, docs: list[str]) -> tuple[Any, Any]:
        """Token embeddings and the mask of tokens that count (no padding, no punctuation)."""
        torch = self._torch
        enc = self.tokenizer([f". {d}" for d in docs], padding="longest", truncation=True,
                             max_length=self.doc_maxlen, return_tensors="pt")
        ids, attention = enc["input_ids"], enc["attention_mask"]
        ids[:, 1] = self.markers[1]
        keep = attention.bool()
        if self.skip_ids:
            keep &= ~torch.isin(ids, torch.tensor(self.skip_ids))
        return self._embed(ids, attention), keep.to(self.device)

    def _rows(self, pairs: list[Pair]) -> TokenColumns:
        """Document rows: ``. {doc}`` with the document marker in place of the dot."""
        with self.borrowed_tokenizer() as tokenizer:
            enc = tokenizer([f". {d}" for _, d in pairs], truncation=True,
                            max_length=self.doc_maxlen)
        tokens = TokenColumns.from_lists({"input_ids": enc["input_ids"],
                                          "attention_mask": enc["attention_mask"]})
        second = tokens.offsets[tokens.lengths > 1] + 1
        tokens.flat["input_ids"][second] = self.markers[1]
        return tokens

    def _forward(self, tensors: dict[str, Any], pairs: Sequence[Pair]) -> Any:
        torch = self._torch
        ids, attention = tensors["input_ids"], tensors["attention_mask"]
        keep = attention.bool()
        if self.skip_ids:
            keep &= ~torch.isin(ids, torch.tensor(self.skip_ids, device=ids.device))
        d_emb = self._embed(ids, attention)
        queries = sorted({q for q, _ in pairs})
        index = {q: i for i, q in enumerate(queries)}
        q_emb = self.encode_queries(queries)
        q_rows = q_emb[torch.tensor([index[q] for q, _ in pairs], device=q_emb.device)]
        sim = q_rows @ d_emb.transpose(1, 2)                       # [B, Lq, Ld]
        sim = sim.masked_fill(~keep[:, None, :], _MASKED)
        return sim.max(dim=-1).values.sum(dim=-1)


def _artifact_metadata(ref: ModelRef) -> dict[str, Any]:
    path = _checkpoint_file(ref, "artifact.metadata")
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _projection_weight(ref: ModelRef, ranker: str) -> Any:
    """``linear.weight`` from the checkpoint's weight file, or None when it has none."""
    torch = import_torch(ranker)
    for filename in _WEIGHT_FILES:
        path = _checkpoint_file(ref, filename)
        if path is None:
            continue
        try:
            if filename.endswith(".safetensors"):
                from safetensors import safe_open

                with safe_open(str(path), framework="pt") as handle:
                    if "linear.weight" in handle.keys():  # noqa: SIM118 (not a dict)
                        return handle.get_tensor("linear.weight")
            else:
                from abnirml.rankers.support.hf import check_weights_safe

                check_weights_safe(path.parent, ranker)
                state = torch.load(path, map_location="cpu", weights_only=True)
                if "linear.weight" in state:
                    return state["linear.weight"]
        except Exception as exc:
            raise ConfigError(f"ranker {ranker}: cannot read {path}: {first_line(exc)}") from exc
    return None


def _checkpoint_file(ref: ModelRef, filename: str) -> Path | None:
    if ref.path is not None:
        path = ref.path / filename
        return path if path.is_file() else None
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        return None
    for local_only in (True, False):
        if not local_only and (hub_offline() or not hub_reachable()):
            break
        try:
            return Path(hf_hub_download(ref.text, filename, revision=ref.revision,
                                        local_files_only=local_only))
        except Exception:
            continue
    return None


def from_spec(spec: RankerSpec, p: ColBERTParams, env: Any) -> ColBERTRanker:
    set_pickle_policy(env.allow_pickle)
    name = spec.canonical
    ref = resolve_model(spec.argument, name, p.revision,
                        example="colbert:colbert-ir/colbertv2.0")
    settings = env.device_settings(p, name)
    return ColBERTRanker(
        ref, name, device=settings.device,
        query_maxlen=p.query_maxlen, doc_maxlen=p.doc_maxlen,
        settings=settings,
        projection=p.projection)
