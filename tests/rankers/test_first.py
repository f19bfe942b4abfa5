"""``first:`` (FIRST-style listwise ranking) on a tiny random Qwen2: the identifier logits at
the first answer position, batched and left-padded, equal one plain forward per window."""

from __future__ import annotations

import numpy as np
import pytest

from abnirml.errors import ConfigError
from abnirml.rankers.families.first import first_messages, order_by_margin
from abnirml.rankers.listwise import Window, sliding_window_order
from abnirml.rankers.registry import RankerEnv, build_ranker
from tests._tiny_llms import save_causal_lm

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

WINDOWS = [
    Window("vitamin d deficiency", ("tiredness and bone pain", "bread dough", "the roman empire",
                                     "vitamin d deficiency in adults")),
    Window("cat", ("the dog and the cat", "yeast")),
]


@pytest.fixture(scope="module")
def qwen_dir(tmp_path_factory):
    return save_causal_lm(tmp_path_factory.mktemp("first-qwen2"), kind="qwen2")


def _reference(path, window):
    """The obvious implementation: the prompt's text tokenized whole, one unpadded forward,
    each identifier's logit (the larger of its bare and space-prefixed single token)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    text = "\n\n".join(m["content"] for m in first_messages(window.query,
                                                            list(window.passages))) + "\n"
    with torch.no_grad():
        logits = model(input_ids=tok(text, return_tensors="pt").input_ids).logits[0, -1]
    out = []
    for i in range(len(window.passages)):
        letter = chr(ord("A") + i)
        ids = [e[0] for e in (tok(letter, add_special_tokens=False).input_ids,
                              tok(" " + letter, add_special_tokens=False).input_ids)
               if len(e) == 1]
        out.append(max(float(logits[t]) for t in ids))
    return np.array(out)


def test_margins_are_the_identifier_logits_at_the_first_answer_position(qwen_dir,
                                                                         one_torch_thread):
    ranker = build_ranker(f"first:{qwen_dir}", RankerEnv())
    margins = ranker.window_margins(WINDOWS)
    for window, got in zip(WINDOWS, margins, strict=True):
        expected = _reference(qwen_dir, window)
        assert got.shape == (len(window.passages),)
        assert np.abs(got - expected).max() < 1e-4
    assert np.ptp(margins[0]) > 1e-3           # the identifiers really differ
    # each window alone (no padding) gives what the padded batch gave
    for window, got in zip(WINDOWS, margins, strict=True):
        assert np.abs(ranker.window_margins([window])[0] - got).max() < 1e-4
    assert ranker.rank_windows(WINDOWS) == [order_by_margin(m) for m in margins]


def test_the_prompt_is_rankzephyrs_with_letters():
    [system, user] = first_messages("q [1]", ["one", "two"])
    assert system["content"].startswith("You are RankLLM")
    assert "[A] one\n[B] two\nSearch Query: q [1]." in user["content"]
    assert "an alphabetical identifier []" in user["content"]
    assert order_by_margin([0.5, 2.0, 0.5]) == (1, 0, 2)          # ties keep input order


def test_a_sliding_window_ranks_a_long_candidate_list(qwen_dir, one_torch_thread):
    ranker = build_ranker(f"first:{qwen_dir}+window=4+step=2+passage_words=2", RankerEnv())
    passages = [f"bread dough {i}" for i in range(7)]
    order = sliding_window_order(ranker, "bread", passages, ranker.window_size, ranker.step)
    assert sorted(order) == list(range(7))
    assert ranker.fingerprint != build_ranker(f"first:{qwen_dir}", RankerEnv()).fingerprint


def test_a_tokenizer_without_single_letter_tokens_is_refused(tmp_path):
    path = save_causal_lm(tmp_path / "llama", kind="llama")        # a word-level vocabulary
    with pytest.raises(ConfigError, match="no single token for the passage identifier 'A'"):
        build_ranker(f"first:{path}", RankerEnv())


def test_more_than_26_passages_per_window_is_refused(qwen_dir):
    with pytest.raises(ConfigError, match=r"window must be 2\.\.26"):
        build_ranker(f"first:{qwen_dir}+window=27", RankerEnv())
