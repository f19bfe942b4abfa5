"""Causal-LM pointwise rerankers (the Qwen3-Reranker / RankLLaMA family).

``lm:<hub name or directory>[+template=default|qwen3|FILE][+yes=yes+no=no]
[+head=auto|lm|score][+max_length=N][+batch_size=N][+dtype=fp32|fp16|bf16][+max_tokens=N]
[+revision=R]``.

A prompt template with ``{query}`` and ``{document}`` is filled in per pair and read by a
decoder-only model. Two ways to turn the last position into a score:

* ``lm`` — the next-token logits: score = logit(yes) − logit(no), the log-odds of the model
  answering "yes" when only those two answers are allowed (Qwen3-Reranker's softmax over
  the two tokens orders documents identically);
* ``score`` — a sequence-classification checkpoint (``…ForSequenceClassification``,
  RankLLaMA's layout): its linear score head applied to the last token's hidden state
  (two-label heads: label 1 minus label 0).

``auto`` picks ``score`` when the checkpoint's architecture is a sequence classifier.

Batches are packed by a token budget (``+max_tokens``, rows sorted by token count; ``+batch_size``
caps the rows), and the prompts of an engine call are filled and tokenized in one tokenizer
call by a background thread while the model scores the previous call's batches (see
:mod:`~abnirml.rankers.support.device_batching`). Batches are left-padded, so every row's last
position is its real last token; position ids follow the attention mask, so a padded row is
computed as it would be alone (up to float rounding), and one forward pass without a
key-value cache scores the batch. When a filled prompt is longer
than ``max_length`` tokens only the *document* is shortened: the instructions, the query and
the closing question are always seen whole (if they alone exceed ``max_length`` they are
still kept whole).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abnirml.errors import ConfigError
from abnirml.rankers.base import Pair, RankerSpec, digest
from abnirml.rankers.support.device_batching import (
    CPU_LLM_ENGINE_PAIRS,
    DeviceSettings,
    TokenBudgetRanker,
    TokenColumns,
    cast_model,
)
from abnirml.rankers.support.hf import (
    ModelRef,
    load_pretrained,
    model_identity,
    resolve_model,
    set_pickle_policy,
)
from abnirml.rankers.support.torch_support import import_or_explain, import_torch

if TYPE_CHECKING:
    from abnirml.rankers.built_in import CausalLMParams

DEFAULT_MAX_LENGTH = 1024
HEADS = ("auto", "lm", "score")

QWEN3_SYSTEM = ("<|im_start|>system\nJudge whether the Document meets the requirements based on "
                "the Query and the Instruct provided. Note that the answer can only be \"yes\" "
                "or \"no\".<|im_end|>\n<|im_start|>user\n")
TEMPLATES = {
    "default": "Query: {query}\nDocument: {document}\nIs the document relevant to the query? "
               "Answer yes or no.\nAnswer:",
    "qwen3": QWEN3_SYSTEM + "<Instruct>: Given a web search query, retrieve relevant passages "
             "that answer the query\n<Query>: {query}\n<Document>: {document}<|im_end|>\n"
             "<|im_start|>assistant\n<think>\n\n</think>\n\n",
}


def load_template(value: str | None, ranker: str, fields: tuple[str, ...],
                  presets: dict[str, str] = TEMPLATES) -> str:
    """A preset's text, or a template file's; each of ``fields`` must occur exactly once."""
    value = value or "default"
    if value in presets:
        return presets[value]
    path = Path(value).expanduser()
    if not path.is_file():
        names = ", ".join(sorted(presets))
        raise ConfigError(f"ranker {ranker}: template {value!r} is neither a preset "
                          f"({names}) nor a file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"ranker {ranker}: cannot read template {path}: {exc}") from None
    text = text[:-1] if text.endswith("\n") else text
    check_template(text, ranker, fields, str(path))
    return text


def check_template(text: str, ranker: str, fields: tuple[str, ...], where: str) -> None:
    for field in fields:
        count = text.count("{" + field + "}")
        if count != 1:
            raise ConfigError(f"ranker {ranker}: template {where} must contain {{{field}}} "
                              f"exactly once, found {count}")


class PromptEncoder:
    """Token ids of a filled template, shortening only the document parts to fit.

    The template is cut at its document fields into fixed pieces; each piece has the query
    filled in. Without truncation the whole filled string is tokenized at once (exactly what
    a straightforward implementation does); when it is too long, pieces and documents are
    tokenized separately and the documents share the room the fixed pieces leave.
    """

    def __init__(self, tokenizer: Any, template: str, documents: tuple[str, ...],
                 max_length: int):
        self.tokenizer = tokenizer
        self.template = template
        self.documents = documents
        self.max_length = max_length

    def _pieces(self, query: str) -> list[str]:
        pieces = [self.template]
        for field in self.documents:
            head, _, tail = pieces.pop().partition("{" + field + "}")
            pieces += [head, tail]
        return [p.replace("{query}", query) for p in pieces]

    def text(self, query: str, docs: tuple[str, ...]) -> str:
        """The filled template (documents are never searched for ``{query}``)."""
        pieces = self._pieces(query)
        return pieces[0] + "".join(d + p for d, p in zip(docs, pieces[1:], strict=True))

    def many(self, items: Sequence[tuple[str, tuple[str, ...]]],
             tokenizer: Any = None) -> list[list[int]]:
        """:meth:`ids` of many (query, documents) items: one tokenizer call for all filled
        prompts; only the prompts over ``max_length`` are shortened one by one."""
        tok = tokenizer or self.tokenizer
        rows = [list(ids) for ids in tok([self.text(q, docs) for q, docs in items]).input_ids]
        for i, row in enumerate(rows):
            if len(row) > self.max_length:
                rows[i] = self.ids(*items[i], tokenizer=tok)
        return rows

    def columns(self, items: Sequence[tuple[str, tuple[str, ...]]],
                tokenizer: Any = None) -> TokenColumns:
        """:meth:`many` as token-id rows with their attention masks, ready for batching (the
        pad id may be a real token, e.g. end-of-sequence, so the mask cannot be read from
        the ids)."""
        ids = self.many(items, tokenizer)
        return TokenColumns.from_lists({"input_ids": ids,
                                        "attention_mask": [[1] * len(r) for r in ids]})

    def ids(self, query: str, docs: tuple[str, ...], tokenizer: Any = None) -> list[int]:
        tok = tokenizer or self.tokenizer

        def encode(texts: tuple[str, ...]) -> list[int]:
            return list(tok(self.text(query, texts)).input_ids)

        ids = encode(docs)
        if len(ids) <= self.max_length:
            return ids
        # Shorten the documents by tokens, decode them back to text and tokenize the filled
        # prompt again, so the model always reads the tokenization of a real string (with
        # byte-level BPE, pieces tokenized apart differ from the whole at their seams).
        bodies = [list(tok(d, add_special_tokens=False).input_ids) for d in docs]
        fixed = len(encode(tuple("" for _ in docs)))
        shares = fair_shares([len(b) for b in bodies], max(self.max_length - fixed, 0))
        while True:
            texts = tuple(tok.decode(b[:n]).strip() if n < len(b) else d
                          for b, n, d in zip(bodies, shares, docs, strict=True))
            ids = encode(texts)
            excess = len(ids) - self.max_length
            if excess <= 0 or not any(shares):
                return ids
            widest = max(range(len(shares)), key=lambda i: shares[i])
            shares[widest] = max(shares[widest] - excess, 0)


def fair_shares(lengths: list[int], room: int) -> list[int]:
    """Split ``room`` tokens among texts: short texts keep everything, long ones share the rest
    equally (so one long document never squeezes the other out of a pairwise prompt)."""
    shares = [0] * len(lengths)
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    left = room
    for rank, i in enumerate(order):
        share = min(lengths[i], left // (len(lengths) - rank))
        shares[i] = share
        left -= share
    return shares


def single_token(tokenizer: Any, word: str, ranker: str, key: str) -> int:
    ids = tokenizer(word, add_special_tokens=False).input_ids
    if len(ids) != 1:
        raise ConfigError(f"ranker {ranker}: the tokenizer splits {word!r} into {len(ids)} "
                          f"tokens; name a single-token word with +{key}=")
    if ids[0] == getattr(tokenizer, "unk_token_id", None):
        raise ConfigError(f"ranker {ranker}: {word!r} is not in the model's vocabulary")
    return int(ids[0])


def is_sequence_classifier(config: Any) -> bool:
    return any(a.endswith("ForSequenceClassification")
               for a in (getattr(config, "architectures", None) or []))


class CausalLMScorer:
    """One batched, left-padded, cache-free forward pass over token-id rows.

    ``head="lm"``: the last position's logits at ``token_ids`` (``[n, len(token_ids)]``);
    ``head="score"``: the classifier head's outputs at the last position.
    """

    def __init__(self, ref: ModelRef, name: str, head: str, settings: DeviceSettings):
        self.torch = import_torch(name)
        transformers = import_or_explain("transformers", name, "neural")
        if head not in HEADS:
            raise ConfigError(f"ranker {name}: head must be one of {', '.join(HEADS)}, "
                              f"got {head!r}")
        self.name = name
        self.settings = settings
        self.device = settings.device
        self.dtype_name = settings.dtype
        self.tokenizer = load_pretrained(transformers.AutoTokenizer.from_pretrained, ref, name)
        config = load_pretrained(transformers.AutoConfig.from_pretrained, ref, name)
        if head == "auto":
            head = "score" if is_sequence_classifier(config) else "lm"
        self.head = head
        auto = (transformers.AutoModelForSequenceClassification if head == "score"
                else transformers.AutoModelForCausalLM)
        model = load_pretrained(auto.from_pretrained, ref, name)
        if head == "score":
            self.labels = int(model.config.num_labels)
            if self.labels not in (1, 2) or not hasattr(model, "score"):
                raise ConfigError(f"ranker {name}: a score head needs a `score` layer with 1 or "
                                  f"2 outputs; this checkpoint has {self.labels}")
        self.model = cast_model(model, settings, name)
        self.config = model.config
        self.pad_id = next(t for t in (self.tokenizer.pad_token_id, self.tokenizer.eos_token_id,
                                        0) if t is not None)
        self.pad_values = {"input_ids": int(self.pad_id)}
        params = inspect.signature(model.forward).parameters
        self._keep_last = {"logits_to_keep": 1} if "logits_to_keep" in params else {}
        self.identity = model_identity(ref, model.config)

    def forward(self, tensors: dict[str, Any], token_ids: tuple[int, ...] = ()) -> Any:
        """One left-padded batch (``input_ids``, ``attention_mask`` on the device)."""
        mask = tensors["attention_mask"]
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        inputs = {"input_ids": tensors["input_ids"], "attention_mask": mask,
                  "position_ids": positions, "use_cache": False}
        if self.head == "score":
            hidden = self.model.base_model(**inputs).last_hidden_state[:, -1]
            out = self.model.score(hidden).float()
            return out[:, 0] if self.labels == 1 else out[:, 1] - out[:, 0]
        logits = self.model(**inputs, **self._keep_last).logits[:, -1].float()
        return logits[:, list(token_ids)]


class CausalLMRanker(TokenBudgetRanker):
    def __init__(self, ref: ModelRef, name: str, template: str = TEMPLATES["default"],
                 yes: str = "yes", no: str = "no", head: str = "auto",
                 max_length: int = DEFAULT_MAX_LENGTH, settings: DeviceSettings | None = None):
        check_template(template, name, ("query", "document"), "text")
        self.name = name
        settings = settings or DeviceSettings()
        self.lm = CausalLMScorer(ref, name, head, settings)
        self.token_ids: tuple[int, ...] = ()
        if self.lm.head == "lm":
            self.token_ids = (single_token(self.lm.tokenizer, yes, name, "yes"),
                              single_token(self.lm.tokenizer, no, name, "no"))
            if self.token_ids[0] == self.token_ids[1]:
                raise ConfigError(f"ranker {name}: {yes!r} and {no!r} are the same token")
        self.prompts = PromptEncoder(self.lm.tokenizer, template, ("document",), max_length)
        self.max_length = max_length
        self.settings = settings
        self.tokenizer = self.lm.tokenizer
        self.pad_values = self.lm.pad_values
        self.hints = settings.hints(cpu_pairs=CPU_LLM_ENGINE_PAIRS)
        answers = f",yes={yes},no={no}" if self.lm.head == "lm" else ""
        self.fingerprint = (f"CausalLM[{self.lm.identity}][head={self.lm.head},"
                            f"template={digest(template)},max_length={max_length},"
                            f"dtype={self.lm.dtype_name}{answers}]")

    pad_left = True     # every row's last position is its real last token

    def _rows(self, pairs: list[Pair]) -> TokenColumns:
        with self.borrowed_tokenizer() as tokenizer:
            return self.prompts.columns([(q, (d,)) for q, d in pairs], tokenizer)

    def _forward(self, tensors: dict[str, Any], pairs: Sequence[Pair]) -> Any:
        out = self.lm.forward(tensors, self.token_ids)
        return out[:, 0] - out[:, 1] if self.lm.head == "lm" else out


def from_spec(spec: RankerSpec, p: CausalLMParams, env: Any) -> CausalLMRanker:
    set_pickle_policy(env.allow_pickle)
    name = spec.canonical
    ref = resolve_model(spec.argument, name, p.revision,
                        example="lm:Qwen/Qwen3-Reranker-0.6B+template=qwen3")
    return CausalLMRanker(
        ref, name, template=load_template(p.template, name, ("query", "document")),
        yes=p.yes or "yes", no=p.no or "no", head=p.head, max_length=p.max_length,
        settings=env.device_settings(p, name))
