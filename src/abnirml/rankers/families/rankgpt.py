"""RankGPT-style listwise reranking through an OpenAI-compatible chat-completions server.

``rankgpt:URL+model=NAME[+prompt=rankgpt|rankzephyr|FILE][+passage_words=300][+window=20]
[+step=10][+temperature=0][+max_tokens=N][+concurrency=8][+timeout=60][+retry_for=60]
[+api_key_env=VAR][+version=V]``.

``URL`` is the server's OpenAI base (``http://host:8000/v1`` for vLLM and SGLang); requests
go to ``URL/chat/completions`` (a URL already ending so is used as it is). Each window is one
request, as castorini/rank_llm writes it:

* ``rankgpt`` (default): RankGPT's multi-turn conversation — the RankGPT system message, a
  user turn announcing ``num`` passages for the query, the assistant's "Okay, please provide
  the passages.", then per passage a user turn ``[i] text`` and the assistant's "Received
  passage [i].", and a last user turn starting ``Search Query:`` asking for ``[] > []``;
* ``rankzephyr``: RankZephyr's single user message (prefix, ``[i] text`` lines, suffix) after
  its system message;
* a file: one user message, the file's text with ``{query}``, ``{num}`` and ``{passages}``
  (the ``[i] text`` lines) filled in; no system message.

Placeholders are filled in one pass over the template: a query or passage holding
``{num}`` or ``{passages}`` is shown as written, never filled in.

Passages (and the query) are shown as rank_llm shows them: a passage repaired by ftfy's
``fix_text`` (mojibake such as ``â€™`` decoded, curly quotes straightened, ligatures and
full-width forms unfolded: :func:`repaired_text`), whitespace collapsed, cut to
``+passage_words`` words (rank_llm's default of 300), and ``[3]`` inside a text written
``(3)`` so it cannot pass for an identifier; the query only gets the ``(3)``. The ftfy
version is part of the fingerprint (:func:`text_repair`), since it decides the prompt.

The reply is read as rank_llm reads it: anything before a closing ``</think>`` is dropped,
look-alike digits (superscripts, full-width, circled) are read as digits, every other
character separates numbers, ids outside the window and repeats are dropped, and the ids the
reply left out follow in input order; a reply holding a digit ``int()`` cannot read (⒈, ⑴,
Ethiopic ፩) or a number past Python's digit limit keeps the window's input order, as
rank_llm's parse does when it raises. A reply that was not exactly ``[a] > [b] > …`` naming
each passage once counts as repaired; :meth:`RankGPTRanker.usage` counts replies and
repaired ones, which run.json records with the requests and tokens.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abnirml.errors import ConfigError, ScoringError
from abnirml.rankers.base import RankerSpec, digest
from abnirml.rankers.listwise import Permutation, Window, check_window, checked_permutation
from abnirml.rankers.support.http_client import (
    DEFAULT_CONCURRENCY,
    DEFAULT_RETRY_FOR,
    DEFAULT_TIMEOUT,
    CountsUsage,
    HttpClient,
)

if TYPE_CHECKING:
    from abnirml.rankers.built_in import RankGPTParams

DEFAULT_PASSAGE_WORDS = 300
DEFAULT_WINDOW = 20
DEFAULT_STEP = 10
DEFAULT_LIST_SIZE = 10
PROMPTS = ("rankgpt", "rankzephyr")

Message = dict[str, str]

RANKGPT_SYSTEM = ("You are RankGPT, an intelligent assistant that can rank passages based on "
                  "their relevancy to the query.")
RANKGPT_PREFIX = ("I will provide you with {num} passages, each indicated by number identifier "
                  "[].\nRank the passages based on their relevance to query: {query}.")
RANKGPT_ACK = "Okay, please provide the passages."
RANKGPT_RECEIVED = "Received passage [{rank}]."
RANKGPT_SUFFIX = ("Search Query: {query}.\nRank the {num} passages above based on their "
                  "relevance to the search query. The passages should be listed in descending "
                  "order using identifiers. The most relevant passages should be listed first. "
                  "The output format should be [] > [], e.g., [1] > [2]. Only response the "
                  "ranking results, do not say any word or explain.")

ZEPHYR_SYSTEM = ("You are RankLLM, an intelligent assistant that can rank passages based on "
                 "their relevancy to the query")
ZEPHYR_PREFIX = ("I will provide you with {num} passages, each indicated by a numerical "
                 "identifier []. Rank the passages based on their relevance to the search "
                 "query: {query}.\n")
ZEPHYR_SUFFIX = ("Search Query: {query}.\nRank the {num} passages above based on their "
                 "relevance to the search query. All the passages should be included and "
                 "listed using identifiers, in descending order of relevance. The output "
                 "format should be [] > [], e.g., [2] > [1], Answer concisely and directly and "
                 "only respond with the ranking results, do not say any word or explain.")

_BRACKETED_NUMBER = re.compile(r"\[(\d+)\]")
_WELL_FORMED = re.compile(r"^\[\d+\]( > \[\d+\])*$")
_LOOKALIKE_DIGITS = str.maketrans(
    "⁰¹²³⁴⁵⁶⁷⁸⁹₀₁₂₃₄₅₆₇₈₉①②③④⑤⑥⑦⑧⑨❶❷❸❹❺❻❼❽❾０１２３４５６７８９🄀🄁🄂🄃🄄🄅🄆🄇🄈🄉",
    "0123456789012345678912345678912345678901234567890123456789")


def repaired_text(text: str) -> str:
    """A passage repaired as rank_llm repairs it before cutting it: ftfy's ``fix_text``
    with its default configuration. MS MARCO passages often hold UTF-8 read as Latin-1
    (``Americaâ€™s``): about a fifth of the DL19 passages change."""
    from ftfy import fix_text

    return str(fix_text(text))


def text_repair() -> str:
    """The repair's identity for fingerprints: ``ftfy-6.3.1``."""
    from importlib.metadata import version

    return f"ftfy-{version('ftfy')}"


def shown_text(text: str, words: int) -> str:
    """A passage as the prompt shows it: repaired (:func:`repaired_text`), at most
    ``words`` words, ``[3]`` → ``(3)``."""
    return _BRACKETED_NUMBER.sub(r"(\1)", " ".join(repaired_text(text).split()[:words]))


def shown_query(query: str) -> str:
    """The query as the prompt shows it (rank_llm only rewrites ``[3]`` as ``(3)``)."""
    return _BRACKETED_NUMBER.sub(r"(\1)", query)


_PLACEHOLDER = re.compile(r"\{(query|num|passages)\}")


def _fill(template: str, query: str, num: int, passages: str | None = None) -> str:
    """``template`` with its placeholders filled in one pass: the text put in (a query
    holding ``{num}``, a passage holding ``{query}``) is never searched for placeholders."""
    values = {"query": query, "num": str(num)}
    if passages is not None:
        values["passages"] = passages
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def rankgpt_messages(query: str, passages: Sequence[str]) -> list[Message]:
    """RankGPT's conversation for one window (passages already shown as :func:`shown_text`)."""
    num = len(passages)
    messages = [{"role": "system", "content": RANKGPT_SYSTEM},
                {"role": "user", "content": _fill(RANKGPT_PREFIX, query, num)},
                {"role": "assistant", "content": RANKGPT_ACK}]
    for rank, passage in enumerate(passages, 1):
        messages += [{"role": "user", "content": f"[{rank}] {passage}"},
                     {"role": "assistant", "content": RANKGPT_RECEIVED.format(rank=rank)}]
    messages.append({"role": "user", "content": _fill(RANKGPT_SUFFIX, query, num)})
    return messages


def rankzephyr_messages(query: str, passages: Sequence[str]) -> list[Message]:
    """RankZephyr's system message and single user message."""
    num = len(passages)
    body = "".join(f"[{rank}] {passage}\n" for rank, passage in enumerate(passages, 1))
    content = _fill(ZEPHYR_PREFIX, query, num) + body + _fill(ZEPHYR_SUFFIX, query, num)
    return [{"role": "system", "content": ZEPHYR_SYSTEM}, {"role": "user", "content": content}]


def template_messages(template: str, query: str, passages: Sequence[str]) -> list[Message]:
    """One user message: ``template`` with ``{query}``, ``{num}`` and ``{passages}`` (passage
    texts are never searched for placeholders)."""
    lines = "\n".join(f"[{rank}] {passage}" for rank, passage in enumerate(passages, 1))
    return [{"role": "user", "content": _fill(template, query, len(passages), lines)}]


def read_prompt_file(value: str, ranker: str) -> str:
    path = Path(value).expanduser()
    if not path.is_file():
        raise ConfigError(f"ranker {ranker}: prompt {value!r} is neither rankgpt, rankzephyr "
                          "nor a file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"ranker {ranker}: cannot read prompt {path}: {exc}") from None
    if text.count("{passages}") != 1 or "{query}" not in text:
        raise ConfigError(f"ranker {ranker}: prompt {path} must contain {{passages}} exactly "
                          "once and {query} at least once")
    return text


def parse_permutation(reply: str, size: int) -> tuple[Permutation, bool]:
    """A reply as rank_llm reads it, and whether it needed repair (see the module docstring)."""
    if "</think>" in reply:
        reply = reply.split("</think>")[-1].strip()
    reply = reply.translate(_LOOKALIKE_DIGITS)
    numbers = "".join(c if c.isdigit() else " " for c in reply).split()
    try:
        # int() refuses characters str.isdigit() accepts (⒈, ⑴, ➀, Ethiopic ፩ …) and
        # numbers past Python's digit limit: rank_llm's parse raises there and keeps the
        # window in its input order, and so does this one
        indices = [int(number) - 1 for number in numbers]
    except ValueError:
        return tuple(range(size)), True
    order: list[int] = []
    for index in indices:
        if 0 <= index < size and index not in order:
            order.append(index)
    named_once = sorted(indices) == list(range(size))
    order += [i for i in range(size) if i not in order]
    repaired = not (named_once and _WELL_FORMED.match(reply.strip()))
    return tuple(order), repaired


class RankGPTRanker(CountsUsage):
    """A listwise ranker over ``URL/chat/completions`` (see the module docstring)."""

    def __init__(self, url: str, name: str, model: str, *, prompt: str = "rankgpt",
                 template: str | None = None, passage_words: int = DEFAULT_PASSAGE_WORDS,
                 window: int = DEFAULT_WINDOW, step: int = DEFAULT_STEP,
                 list_size: int = DEFAULT_LIST_SIZE, temperature: float = 0.0,
                 max_tokens: int | None = None,
                 timeout: float = DEFAULT_TIMEOUT, concurrency: int = DEFAULT_CONCURRENCY,
                 retry_for: float = DEFAULT_RETRY_FOR, api_key_env: str | None = None,
                 version: str = ""):
        if not model:
            raise ConfigError(f"ranker {name}: +model=NAME is required (the model name the "
                              "server expects)")
        if prompt not in PROMPTS and template is None:
            raise ConfigError(f"ranker {name}: prompt must be rankgpt, rankzephyr or a file")
        endpoint = url.rstrip("/")
        if not endpoint.endswith("/chat/completions"):
            endpoint += "/chat/completions"
        check_window(name, window, step)
        self.client = HttpClient(endpoint, name, timeout=timeout, retry_for=retry_for,
                                 concurrency=concurrency, api_key_env=api_key_env,
                                 not_found_hint="rankgpt posts to the base URL with "
                                 "/chat/completions appended: give the server's OpenAI base "
                                 "URL, e.g. http://host:8000/v1")
        self.url = endpoint
        self.name = name
        self.model = model
        self.prompt = prompt
        self.template = template
        self.passage_words = passage_words
        self.window_size = window
        self.step = step
        self.list_size = list_size
        self.temperature = float(temperature)
        self.max_tokens = max_tokens
        shown_prompt = prompt if template is None else f"file:{digest(template)}"
        self.fingerprint = (f"RankGPT[{endpoint}|model={model}|prompt={shown_prompt}|"
                            f"words={passage_words}|text={text_repair()}|"
                            f"temperature={self.temperature:g}|"
                            f"max_tokens={max_tokens or 'auto'}@{version}]")

    def messages(self, window: Window) -> list[Message]:
        query = shown_query(window.query)
        passages = [shown_text(p, self.passage_words) for p in window.passages]
        if self.template is not None:
            return template_messages(self.template, query, passages)
        if self.prompt == "rankzephyr":
            return rankzephyr_messages(query, passages)
        return rankgpt_messages(query, passages)

    def rank_windows(self, windows: Sequence[Window]) -> list[Permutation]:
        """One request per window, up to ``concurrency`` at once; permutations in order."""
        return self.client.map(self._rank_one, list(windows))

    def _rank_one(self, window: Window) -> Permutation:
        size = len(window.passages)
        if size <= 1:
            return tuple(range(size))
        payload = {"model": self.model, "messages": self.messages(window),
                   "temperature": self.temperature,
                   "max_tokens": self.max_tokens or 6 * size + 16}
        answer = self.client.post_json(payload)
        reply = _reply_text(answer)
        if reply is None:
            raise ScoringError(f"ranker {self.name}: {self.url} answered without "
                               "choices[0].message.content text")
        permutation, repaired = parse_permutation(reply, size)
        self.client.usage.add(replies=1, repaired=int(repaired))
        return checked_permutation(self.name, permutation, size)


def _reply_text(answer: object) -> str | None:
    try:
        content = answer["choices"][0]["message"]["content"]  # type: ignore[index]
    except (KeyError, IndexError, TypeError):
        return None
    return content if isinstance(content, str) else None


def from_spec(spec: RankerSpec, p: RankGPTParams, env: Any) -> RankGPTRanker:
    name = spec.canonical
    url = spec.argument
    if url.startswith("//"):
        url = "http:" + url
    if not url:
        raise ConfigError(f"ranker {name}: expected rankgpt:<base URL>+model=NAME, e.g. "
                          "rankgpt:http://localhost:8000/v1+model=Qwen/Qwen3-8B")
    template = None if p.prompt in PROMPTS else read_prompt_file(p.prompt, name)
    return RankGPTRanker(url, name, p.model, prompt=p.prompt, template=template,
                         passage_words=p.passage_words, window=p.window, step=p.step,
                         list_size=p.list_size,
                         temperature=p.temperature, max_tokens=p.max_tokens,
                         timeout=p.timeout, concurrency=p.concurrency,
                         retry_for=p.retry_for, api_key_env=p.api_key_env,
                         version=p.version)
