"""FIRST-style listwise reranking with a local causal LM (Reddy et al., 2024).

``first:<hub name or directory>[+passage_words=300][+max_length=4096][+window=20][+step=10]
[+answer_prefix=TEXT][+batch_size=N][+dtype=fp32|fp16|bf16][+max_tokens=N][+revision=R]``.

A listwise LM trained to answer ``[B] > [A] > …`` already decides its whole ranking at the
first identifier it would write. FIRST reads that decision without generating: one forward
pass over the prompt, then the logits of every passage identifier (``A``, ``B``, … — one per
passage, so at most 26) at the first answer position. Sorting by them gives the full
ranking; the logits themselves are a continuous margin (``window_margins``), which a
generated permutation never has.

The prompt is RankZephyr's with alphabetical identifiers, as castorini/rank_llm runs FIRST:
its system message and one user message (``[A] text`` lines between a prefix and a suffix
naming the query), passed through the tokenizer's chat template with the generation prompt;
a tokenizer without a chat template reads the system and user messages joined by a blank
line. ``+answer_prefix`` is text put after that (e.g. ``[`` for a model whose answer starts
with a bracket). Passages are cut to ``+passage_words`` words; a prompt longer than
``+max_length`` tokens has its passages cut further, as rank_llm does, until it fits.

An identifier's logit is the larger of its bare and space-prefixed token (``A`` / `` A``),
whichever of them the tokenizer holds as a single token.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from abnirml.errors import ConfigError, ScoringError
from abnirml.rankers.base import RankerSpec, digest
from abnirml.rankers.families.rankgpt import shown_query, shown_text, text_repair
from abnirml.rankers.listwise import Permutation, Window
from abnirml.rankers.support.device_batching import (
    DeviceSettings,
    attention_scope,
    token_budget_batches,
)
from abnirml.rankers.support.hf import ModelRef, resolve_model, set_pickle_policy

if TYPE_CHECKING:
    from abnirml.rankers.built_in import FirstParams

DEFAULT_PASSAGE_WORDS = 300
DEFAULT_MAX_LENGTH = 4096
DEFAULT_WINDOW = 20
DEFAULT_STEP = 10
DEFAULT_LIST_SIZE = 10
IDENTIFIERS = tuple(chr(ord("A") + i) for i in range(26))

SYSTEM = ("You are RankLLM, an intelligent assistant that can rank passages based on their "
          "relevancy to the query")
PREFIX = ("I will provide you with {num} passages, each indicated by an alphabetical "
          "identifier []. Rank the passages based on their relevance to the search query: "
          "{query}.\n")
SUFFIX = ("Search Query: {query}.\nRank the {num} passages above based on their relevance to "
          "the search query. All the passages should be included and listed using "
          "identifiers, in descending order of relevance. The output format should be [] > "
          "[], e.g., [B] > [A], Answer concisely and directly and only respond with the "
          "ranking results, do not say any word or explain.")


def first_messages(query: str, passages: Sequence[str]) -> list[dict[str, str]]:
    """RankZephyr's alphabetical prompt for one window (passages already cut)."""
    num = str(len(passages))
    body = "".join(f"[{IDENTIFIERS[i]}] {p}\n" for i, p in enumerate(passages))

    def fill(text: str) -> str:
        return text.replace("{query}", query).replace("{num}", num)

    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": fill(PREFIX) + body + fill(SUFFIX)}]


def identifier_tokens(tokenizer: Any, ranker: str, count: int = 26) -> list[tuple[int, ...]]:
    """For each identifier, the single tokens that spell it (bare and space-prefixed)."""
    unknown = getattr(tokenizer, "unk_token_id", None)
    out = []
    for letter in IDENTIFIERS[:count]:
        ids = []
        for text in (letter, " " + letter):
            encoded = tokenizer(text, add_special_tokens=False).input_ids
            if len(encoded) == 1 and encoded[0] != unknown and encoded[0] not in ids:
                ids.append(int(encoded[0]))
        if not ids:
            raise ConfigError(f"ranker {ranker}: the tokenizer has no single token for the "
                              f"passage identifier {letter!r}; FIRST needs one per passage")
        out.append(tuple(ids))
    return out


def order_by_margin(margins: Sequence[float] | np.ndarray) -> Permutation:
    """Indices best first by margin; equal margins keep input order."""
    return tuple(sorted(range(len(margins)), key=lambda i: (-float(margins[i]), i)))


class FirstRanker:
    """A causal LM's identifier logits at the first answer position, per window."""

    def __init__(self, ref: ModelRef, name: str, *, passage_words: int = DEFAULT_PASSAGE_WORDS,
                 max_length: int = DEFAULT_MAX_LENGTH, window: int = DEFAULT_WINDOW,
                 step: int = DEFAULT_STEP, list_size: int = DEFAULT_LIST_SIZE,
                 answer_prefix: str = "",
                 settings: DeviceSettings | None = None):
        from abnirml.rankers.families.causal_lm import CausalLMScorer

        if not 2 <= window <= len(IDENTIFIERS):
            raise ConfigError(f"ranker {name}: window must be 2..26 (one letter per passage)")
        self.name = name
        self.settings = settings or DeviceSettings()
        self.lm = CausalLMScorer(ref, name, "lm", self.settings)
        self.tokenizer = self.lm.tokenizer
        self.torch = self.lm.torch
        self.passage_words = passage_words
        self.max_length = max_length
        self.window_size = window
        self.step = step
        self.list_size = list_size
        self.answer_prefix = answer_prefix
        self.identifiers = identifier_tokens(self.tokenizer, name)
        self.chat = bool(getattr(self.tokenizer, "chat_template", None))
        self.fingerprint = (f"FIRST[{self.lm.identity}][words={passage_words},"
                            f"text={text_repair()},"
                            f"max_length={max_length},prefix={digest(answer_prefix)},"
                            f"dtype={self.lm.dtype_name}]")

    def prompt_ids(self, window: Window) -> list[int]:
        """The window's prompt as token ids, passages cut until it fits ``max_length``."""
        query = shown_query(window.query)
        words = self.passage_words
        size = max(len(window.passages), 1)
        while True:
            ids = self._encode(first_messages(
                query, [shown_text(p, words) for p in window.passages]))
            excess = len(ids) - self.max_length
            if excess <= 0 or words <= 1:
                return ids
            words = max(1, words - max(1, excess // (size * 4)))

    def _encode(self, messages: list[dict[str, str]]) -> list[int]:
        if self.chat:
            text = self.tokenizer.apply_chat_template(messages, tokenize=False,
                                                      add_generation_prompt=True)
            special = False
        else:
            text = "\n\n".join(m["content"] for m in messages) + "\n"
            special = True
        return list(self.tokenizer(text + self.answer_prefix,
                                   add_special_tokens=special).input_ids)

    def window_margins(self, windows: Sequence[Window]) -> list[np.ndarray]:
        """Per window, each passage's identifier logit at the first answer position."""
        for window in windows:
            if len(window.passages) > len(IDENTIFIERS):
                raise ScoringError(f"ranker {self.name}: a window of {len(window.passages)} "
                                   f"passages has more than {len(IDENTIFIERS)} identifiers")
        rows = [self.prompt_ids(w) for w in windows]
        columns = [i for ids in self.identifiers for i in ids]
        out: list[np.ndarray] = [np.empty(0)] * len(windows)
        for batch in token_budget_batches([len(r) for r in rows], self.settings.max_tokens,
                                          self.settings.max_batch):
            logits = self._forward([rows[i] for i in batch], columns)
            for row, n in zip(logits, batch, strict=True):
                out[n] = self._margins(row, len(windows[n].passages))
        return out

    def _margins(self, row: np.ndarray, size: int) -> np.ndarray:
        margins = np.empty(size, dtype=np.float64)
        at = 0
        for i, ids in enumerate(self.identifiers):
            if i < size:
                margins[i] = float(np.max(row[at:at + len(ids)]))
            at += len(ids)
        if not np.all(np.isfinite(margins)):
            raise ScoringError(f"ranker {self.name} returned non-finite identifier logits")
        return margins

    def _forward(self, rows: list[list[int]], columns: list[int]) -> np.ndarray:
        torch = self.torch
        width = max(len(r) for r in rows)
        pad = self.lm.pad_id
        ids = [[pad] * (width - len(r)) + r for r in rows]          # left-padded
        mask = [[0] * (width - len(r)) + [1] * len(r) for r in rows]
        device = self.settings.device
        tensors = {"input_ids": torch.tensor(ids, device=device),
                   "attention_mask": torch.tensor(mask, device=device)}
        with torch.inference_mode(), attention_scope(device):
            logits = self.lm.forward(tensors, tuple(columns))
        scores: np.ndarray = logits.cpu().numpy()
        return scores

    def rank_windows(self, windows: Sequence[Window]) -> list[Permutation]:
        """Each window's passages best first by identifier logit (ties keep input order)."""
        return [order_by_margin(m) for m in self.window_margins(windows)]


def from_spec(spec: RankerSpec, p: FirstParams, env: Any) -> FirstRanker:
    set_pickle_policy(env.allow_pickle)
    name = spec.canonical
    ref = resolve_model(spec.argument, name, p.revision,
                        example="first:castorini/first_mistral")
    return FirstRanker(ref, name, passage_words=p.passage_words, max_length=p.max_length,
                       window=p.window, step=p.step, list_size=p.list_size,
                       answer_prefix=p.answer_prefix,
                       settings=env.device_settings(p, name))
