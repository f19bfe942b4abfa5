"""Heavy libraries imported in the background while samples are built (cold runs only)."""

from __future__ import annotations

import sys
import threading
import time
import types

from abnirml.rankers import background_import
from abnirml.rankers.cache import ScoreCache


def test_family_of_reads_the_family_of_a_spec():
    assert background_import.family_of("cross-encoder:/m/x+dtype=bf16") == "cross-encoder"
    assert background_import.family_of("splade") == "splade"
    assert background_import.family_of("maxp:biencoder+similarity=dot") == "biencoder"
    assert background_import.family_of("BM25+k1=0.9") == "bm25"
    assert background_import.family_of("biencoder@bi") == "biencoder"
    assert background_import.family_of("wmd:glove@wmd") == "wmd"


def test_a_ranker_under_a_display_name_imports_what_its_family_needs(monkeypatch):
    from abnirml.rankers.registry import name_ranker

    started: list[tuple[str, ...]] = []
    monkeypatch.setattr(background_import, "start", lambda modules: started.append(
        tuple(modules)))

    class Ranker:
        name = "biencoder"

    ranker = Ranker()
    name_ranker(ranker, "bi", "biencoder")
    background_import.for_scoring(ranker)
    assert started == [("torch", "transformers", "sentence_transformers")]


def _module(tmp_path, monkeypatch, name: str) -> threading.Event:
    """A module ``name`` whose import waits until the returned gate opens."""
    gate = threading.Event()
    holder = types.ModuleType(f"{name}_gate")
    holder.GATE = gate
    monkeypatch.setitem(sys.modules, f"{name}_gate", holder)
    (tmp_path / f"{name}.py").write_text(
        f"from {name}_gate import GATE\nGATE.wait(600)\nLOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return gate


def test_a_ranker_with_nothing_cached_gets_its_libraries_imported_in_the_background(
        tmp_path, monkeypatch):
    from abnirml.pipeline import _preload_uncached

    gate = _module(tmp_path, monkeypatch, "abnirml_bg_cold")
    _module(tmp_path, monkeypatch, "abnirml_bg_warm").set()

    class Ranker:
        def __init__(self, name: str, module: str):
            self.name = self.fingerprint = name
            self.scoring_imports = (module,)

    cold, warm = Ranker("cold", "abnirml_bg_cold"), Ranker("warm", "abnirml_bg_warm")
    with ScoreCache(None) as cache:
        cache.store("warm", [(b"q" * 16, b"d" * 16, 1.0)])
        _preload_uncached([cold, warm], cache)
        # returned while the import still waits at its gate
        assert not getattr(sys.modules.get("abnirml_bg_cold"), "LOADED", False)
    gate.set()
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if "abnirml_bg_cold" in sys.modules and getattr(sys.modules["abnirml_bg_cold"],
                                                        "LOADED", False):
            break
        time.sleep(0.05)
    assert sys.modules["abnirml_bg_cold"].LOADED
    assert "abnirml_bg_warm" not in sys.modules              # warm rankers import nothing


def test_background_import_can_be_switched_off_and_skips_imported_modules(
        tmp_path, monkeypatch):
    _module(tmp_path, monkeypatch, "abnirml_bg_off").set()
    monkeypatch.setenv("ABNIRML_BACKGROUND_IMPORT", "off")
    assert background_import.start(["abnirml_bg_off"]) is None
    assert "abnirml_bg_off" not in sys.modules
    monkeypatch.delenv("ABNIRML_BACKGROUND_IMPORT")
    assert background_import.start(["numpy"]) is None       # already imported
    thread = background_import.start(["abnirml_bg_off"])
    assert thread is not None
    thread.join(timeout=600)
    assert sys.modules["abnirml_bg_off"].LOADED
