"""Attention kernels chosen for token-budget batches: on CUDA every forward pass of the
engine runs with flash, memory-efficient and math attention only (cuDNN's builds a plan per
batch shape); elsewhere torch's own choice stands, and a torch that lacks a backend or the
``sdpa_kernel`` context still scores."""

from __future__ import annotations

import contextlib
import sys
from types import SimpleNamespace

import pytest

from abnirml.rankers.support import device_batching
from abnirml.rankers.support.device_batching import (
    CUDA_ATTENTION,
    DeviceSettings,
    TokenBudgetRanker,
    TokenColumns,
    attention_backends,
    attention_scope,
)

torch = pytest.importorskip("torch")
attention = pytest.importorskip("torch.nn.attention")


class _Recorder:
    """Stands in for ``torch.nn.attention.sdpa_kernel``: notes the backends each context
    asks for and whether a context is open."""

    def __init__(self) -> None:
        self.asked: list[list[object]] = []
        self.open = 0

    @contextlib.contextmanager
    def __call__(self, backends, set_priority=False):
        self.asked.append(list(backends))
        self.open += 1
        try:
            yield
        finally:
            self.open -= 1


class _Stays:
    """A host tensor whose copy to a device that this machine lacks stays on the host."""

    def __init__(self, tensor):
        self.tensor = tensor

    def to(self, device, non_blocking=False):
        return self.tensor


class _LengthRanker(TokenBudgetRanker):
    """A token-budget ranker without a model on a named device: the score is the row's
    length; each forward pass notes whether an attention context was open around it."""

    name = fingerprint = "length"

    def __init__(self, device: str, recorder: _Recorder):
        self.pad_values: dict[str, int] = {}
        self.settings = DeviceSettings(device, "fp32", 16)
        self.recorder = recorder
        self.inside: list[int] = []

    def _rows(self, pairs):
        return TokenColumns.from_lists({"input_ids": [[1] * len(f"{q} {d}".split())
                                                      for q, d in pairs]})

    def _host_tensors(self, arrays):
        return {k: _Stays(torch.from_numpy(v)) for k, v in arrays.items()}

    def _forward(self, tensors, pairs):
        self.inside.append(self.recorder.open)
        return tensors["input_ids"].sum(dim=1)


PAIRS = [("a", "b c"), ("d e", "f"), ("g", "h i j k"), ("l", "m")]


def test_on_cuda_every_forward_pass_runs_with_flash_efficient_and_math_attention(monkeypatch):
    recorder = _Recorder()
    monkeypatch.setattr(attention, "sdpa_kernel", recorder)
    ranker = _LengthRanker("cuda", recorder)
    scores = [s.tolist() for s in ranker.score_batches([PAIRS[:2], PAIRS[2:]])]
    assert scores == [[3.0, 3.0], [5.0, 2.0]]
    assert ranker.inside and all(ranker.inside)          # no forward pass outside a context
    wanted = [attention.SDPBackend.FLASH_ATTENTION, attention.SDPBackend.EFFICIENT_ATTENTION,
              attention.SDPBackend.MATH]
    assert recorder.asked and all(asked == wanted for asked in recorder.asked)
    assert attention.SDPBackend.CUDNN_ATTENTION not in recorder.asked[0]
    assert ranker.settings.describe()["attention"] == ["flash", "efficient", "math"]


def test_off_cuda_torch_chooses_the_attention_itself(monkeypatch):
    recorder = _Recorder()
    monkeypatch.setattr(attention, "sdpa_kernel", recorder)
    for device in ("cpu", "mps"):
        ranker = _LengthRanker(device, recorder)
        assert ranker.score(PAIRS).tolist() == [3.0, 3.0, 5.0, 2.0]
        assert ranker.inside and not any(ranker.inside)
        assert attention_backends(device) is None
        assert ranker.settings.describe()["attention"] == "torch default"
    assert recorder.asked == []


def test_backends_this_torch_lacks_are_left_out_and_no_backend_means_no_restriction(
        monkeypatch):
    recorder = _Recorder()
    monkeypatch.setattr(attention, "sdpa_kernel", recorder)
    members = attention.SDPBackend
    monkeypatch.setattr(attention, "SDPBackend",
                        SimpleNamespace(EFFICIENT_ATTENTION=members.EFFICIENT_ATTENTION,
                                        MATH=members.MATH))
    with attention_scope("cuda:0"):
        assert recorder.open == 1
    assert recorder.asked == [[members.EFFICIENT_ATTENTION, members.MATH]]
    monkeypatch.setattr(attention, "SDPBackend", SimpleNamespace())
    with attention_scope("cuda"):
        assert recorder.open == 0
    monkeypatch.setitem(sys.modules, "torch.nn.attention", None)     # a torch without it
    with attention_scope("cuda"):
        assert recorder.open == 0
    assert len(recorder.asked) == 1


def test_the_real_context_leaves_a_cpu_forward_pass_unchanged():
    """The restriction entered for real around a CPU model (the context only sets which
    backends may run): the same scores as without it, bit for bit."""
    pytest.importorskip("transformers")
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    model = BertModel(BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=2,
                                 num_attention_heads=2, intermediate_size=64,
                                 attn_implementation="sdpa")).eval()
    ids = torch.randint(5, 50, (3, 7))
    mask = torch.ones_like(ids)
    mask[1, 4:] = 0
    with torch.inference_mode():
        plain = model(input_ids=ids, attention_mask=mask).last_hidden_state
        with device_batching.attention_scope("cuda"):
            restricted = model(input_ids=ids, attention_mask=mask).last_hidden_state
    assert torch.equal(plain, restricted)
    assert CUDA_ATTENTION == ("flash", "efficient", "math")


def test_run_json_says_how_each_torch_ranker_ran(tmp_path):
    pytest.importorskip("transformers")
    from abnirml.pipeline import RunConfig, SessionSettings, run
    from tests._tiny_models import save_cross_encoder

    spec = f"cross-encoder:{save_cross_encoder(tmp_path / 'ce')}+max_tokens=4096"
    session = SessionSettings(cache=None, progress=False)
    info = run(RunConfig(collection="demo", rankers=["bm25", spec],
                         probes=["mmp:relevance:length"], out=str(tmp_path / "out"),
                         session=session)).run_info
    assert info["device"] == {
        "rankers": {spec: {"device": "cpu", "dtype": "fp32", "max_tokens": 4096,
                           "attention": "torch default"}},
        "torch": torch.__version__}
    lexical = run(RunConfig(collection="demo", rankers=["bm25"],
                            probes=["mmp:relevance:length"], out=str(tmp_path / "lexical"),
                            session=session)).run_info
    assert "device" not in lexical
    cuda = DeviceSettings("cuda:1", "bf16", 65_536, max_batch=256).describe()
    assert cuda == {"device": "cuda:1", "dtype": "bf16", "max_tokens": 65_536,
                    "max_batch": 256, "attention": ["flash", "efficient", "math"]}
