"""benchmarks/gpu.py --simulate: the real engine feeding a device that only sleeps. Every
pair reaches the device and the cache, the device is busy for the padded tokens it was
given, and the run ends with the ratio line."""

from __future__ import annotations

import re
import threading
import time
from types import SimpleNamespace

import pytest
from benchmarks import simulated_device
from benchmarks.simulated_device import SimulatedDevice, simulate

from tests._tiny_models import save_cross_encoder

pytest.importorskip("torch")
pytest.importorskip("transformers")

WORDS = ["the", "cat", "sat", "on", "a", "mat", "while", "dogs", "barked", "at", "passing",
         "cars", "in", "town"]


def _pairs(count: int) -> list[tuple[str, str]]:
    return [(" ".join(WORDS[i % 5:i % 5 + 2]), " ".join(WORDS[:3 + i % 12]) + f" {i}")
            for i in range(count)]


def test_scores_wait_for_the_device_which_is_busy_for_the_padded_tokens(monkeypatch):
    import numpy as np

    # the device's sleep starts only when the test opens the gate: forward() returning with
    # the gate shut shows the batch was queued and the host went on, whatever the load
    gate = threading.Event()

    def gated_sleep(seconds: float) -> None:
        gate.wait()
        time.sleep(seconds)

    monkeypatch.setattr(simulated_device, "time",
                        SimpleNamespace(sleep=gated_sleep, perf_counter=time.perf_counter))
    device = SimulatedDevice(seconds_per_token=0.01)
    ids = np.zeros((2, 5), dtype=np.int64)
    pending = device.forward({"input_ids": ids}, [])
    assert not pending.done.is_set()                    # queued: the host goes on
    start = time.perf_counter()
    gate.set()
    assert pending.double().cpu().numpy().tolist() == [0.0, 0.0]
    assert time.perf_counter() - start >= 0.1           # 10 padded tokens × 0.01 s
    assert (device.tokens, device.rows, device.batches) == (10, 2, 1)
    assert device.busy_s == pytest.approx(0.1)
    device.close()


def test_the_device_keeps_its_own_clock_and_counts_only_the_hosts_gaps(monkeypatch):
    import numpy as np

    clock = [0.0]          # a clock only the test and the device's sleeps move
    awake = threading.Event()
    awake.set()

    def sleep(seconds: float) -> None:
        awake.wait()
        clock[0] += seconds + 0.25          # every sleep wakes up a quarter second late

    monkeypatch.setattr(simulated_device, "time",
                        SimpleNamespace(sleep=sleep, perf_counter=lambda: clock[0]))
    device = SimulatedDevice(seconds_per_token=0.1)
    batch = {"input_ids": np.zeros((2, 5), dtype=np.int64)}       # 10 tokens: 1 s
    device.forward(batch, []).cpu()                 # queued at 0, ready at 1 (1.25)
    awake.clear()
    clock[0] = 1.5                                  # the host is late by half a second
    # three batches queued back to back: they run from 1.5 to 4.5, one late wake-up at most
    last = [device.forward(batch, []) for _ in range(3)][-1]
    awake.set()
    last.cpu()
    assert (device.idle_s, device.waits, device.busy_s) == (0.5, 1, 4.0)
    assert device.last_done_at == 4.75
    device.close()


def test_scores_read_late_wait_for_every_batch_queued_as_on_a_cuda_stream(monkeypatch):
    """A copy to the host queued when the scores are read waits for every batch queued
    before it (a CUDA stream runs in order); one queued early, right behind its batch
    (the ranker's ``_fetch_early``), waits for that batch alone."""
    import numpy as np

    gates = [threading.Event(), threading.Event()]
    slept: list[float] = []

    def sleep(seconds: float) -> None:      # each batch stays on the device until released
        gate = gates[len(slept)]
        slept.append(seconds)
        gate.wait()

    monkeypatch.setattr(simulated_device, "time",
                        SimpleNamespace(sleep=sleep, perf_counter=time.perf_counter))
    device = SimulatedDevice(seconds_per_token=1.0)
    batch = {"input_ids": np.zeros((2, 5), dtype=np.int64)}
    first, second = device.forward(batch, []), device.forward(batch, [])
    early = device.fetch_early(first)
    gates[0].set()                                  # the first batch ends, not the second
    reader = threading.Thread(target=early.numpy)
    reader.start()
    reader.join(timeout=30)
    assert not reader.is_alive() and not second.done.is_set()
    late = threading.Thread(target=lambda: first.double().cpu())
    late.start()
    late.join(timeout=0.2)
    assert late.is_alive()                          # it waits for the second batch too
    gates[1].set()
    late.join(timeout=30)
    assert not late.is_alive() and second.done.is_set()
    device.close()


def test_the_engine_feeds_every_pair_and_prints_the_ratio(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(simulated_device, "H100_BERT_BASE_BF16_S_PER_TOKEN", 2e-5)
    model = save_cross_encoder(tmp_path / "model")
    pairs = _pairs(3_000)          # more than one engine piece: the stream's ramp is used
    ratio = simulate(pairs, model, tmp_path, speedup=1.0, max_tokens=512)
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == f"engine / simulated device: {ratio:.3f}"
    assert "pairs: 3,000;" in out
    assert ratio >= 1.0             # the device works serially: the engine cannot beat it
    assert re.search(r"^calling thread: \d+\.\d\d µs CPU per pair", out, re.M)
    # an empty store: this host's tokenization alone, and the target it sets
    alone = re.search(r"^tokenization alone: (\d+\.\d\d) s for the ([\d,]+) unique texts.*"
                      r"= (\d+\.\d+)$", out, re.M)
    assert alone is not None
    assert int(alone[2].replace(",", "")) == len({t for pair in pairs for t in pair})


def test_the_run_is_refused_unless_the_device_was_sent_every_token(tmp_path, monkeypatch):
    """A feed that dropped a token of one pair (or a device that skipped a batch) stops
    the benchmark instead of printing a ratio."""
    from abnirml.rankers.support.pair_join import JoinedPairs

    monkeypatch.setattr(simulated_device, "H100_BERT_BASE_BF16_S_PER_TOKEN", 2e-5)
    model = save_cross_encoder(tmp_path / "model")
    padded = JoinedPairs.padded

    def one_token_short(self, rows, pad_id):
        out = padded(self, rows, pad_id)
        if 0 in rows:
            out["attention_mask"] = out["attention_mask"].copy()
            out["attention_mask"][list(rows).index(0), 0] = 0
        return out

    monkeypatch.setattr(JoinedPairs, "padded", one_token_short)
    with pytest.raises(AssertionError):
        simulate(_pairs(300), model, tmp_path, speedup=1.0, max_tokens=512)


def test_with_an_earlier_runs_token_store_no_text_is_tokenized(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(simulated_device, "H100_BERT_BASE_BF16_S_PER_TOKEN", 2e-5)
    model = save_cross_encoder(tmp_path / "model")
    pairs = _pairs(1_200)
    texts = len({t for pair in pairs for t in pair})
    simulate(pairs, model, tmp_path, speedup=1.0, max_tokens=512, stored=True)
    out = capsys.readouterr().out
    assert (f"token store: tokens.sqlite of an earlier run; during the run 0 texts "
            f"tokenized, {texts:,} read back") in out
    assert "target: R ≤ 1.10 (every text's ids stored)" in out
    assert "tokenization alone" not in out
    simulate(pairs, model, tmp_path, speedup=1.0, max_tokens=512, stored=False)
    out = capsys.readouterr().out
    assert f"token store: empty; during the run {texts:,} texts tokenized, 0 read back" in out
