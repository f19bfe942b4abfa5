"""Models are built one at a time per process. While transformers builds a model it swaps
torch's weight-initialisation functions module-wide and puts back what it found; two builds
on two threads (two rankers' background preloads) can put back each other's swaps and leave
the process's initialisers replaced, so that models created later start from other weights
(seen as a tiny T5 saved after a run getting other weights than the same seed gave before)."""

from __future__ import annotations

import threading
import time

from abnirml.rankers.support.hf import ModelRef, load_pretrained


def _swapping_load(state: dict[str, object]):
    """A ``from_pretrained`` that does what transformers does with torch's initialisers:
    remember the current one, swap in its own, build, put back the remembered one."""

    def load(path: str, **kwargs: object) -> str:
        found = state["init"]
        state["init"] = f"swapped by {threading.current_thread().name}"
        time.sleep(0.2)                 # building the model
        state["init"] = found
        return path

    return load


def test_two_threads_loading_models_leave_the_initialisers_as_they_were(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"")
    ref = ModelRef(str(tmp_path), tmp_path)
    state: dict[str, object] = {"init": "torch's own"}
    load = _swapping_load(state)
    threads = [threading.Thread(target=load_pretrained, args=(load, ref, f"r{i}"),
                                name=f"preload-{i}") for i in range(2)]
    for thread in threads:
        thread.start()
        time.sleep(0.05)                # the second starts while the first builds
    for thread in threads:
        thread.join(120)
    assert state["init"] == "torch's own"


def test_a_load_may_load_another_model_inside_it(tmp_path):
    """The lock is re-entrant: a family whose load builds a second model still loads."""
    (tmp_path / "model.safetensors").write_bytes(b"")
    ref = ModelRef(str(tmp_path), tmp_path)

    def outer(path: str, **kwargs: object) -> str:
        return load_pretrained(lambda p, **k: p + "/inner", ref, "inner")

    done: list[str] = []
    thread = threading.Thread(target=lambda: done.append(load_pretrained(outer, ref, "outer")))
    thread.start()
    thread.join(120)
    assert done == [f"{tmp_path}/inner"]
