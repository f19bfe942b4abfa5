"""Heavy libraries imported in the background while samples are built (cold runs only)."""

from __future__ import annotations

import sys
import threading
import time
import types

from abnirml.rankers.support import background_import
from abnirml.rankers.support.cache import ScoreCache


def _keys(text: str) -> list[str]:
    from abnirml.rankers.base import RankerSpec
    from abnirml.rankers.registry import family_records

    return [record.key for record in family_records(RankerSpec.parse(text))]


def test_the_families_of_a_spec_are_read_by_the_one_spec_parser():
    assert _keys("cross-encoder:/m/x+dtype=bf16") == ["cross-encoder"]
    assert _keys("splade") == ["splade"]
    assert _keys("BM25+k1=0.9") == ["bm25"]
    assert _keys("biencoder@bi") == ["biencoder"]
    assert _keys("wmd:glove@wmd") == ["wmd"]
    # wrappers: the wrapper's record, then the wrapped ranker's
    assert _keys("maxp:biencoder+similarity=dot") == ["maxp", "biencoder"]
    assert _keys("listwise-of:maxp:cross-encoder:/m/x+window=5@lw") == [
        "listwise-of", "maxp", "cross-encoder"]
    assert _keys("nosuch:x") == []
    assert _keys("maxp:nosuch") == ["maxp"]


def test_background_imports_of_specs_follow_wrappers_and_never_raise(monkeypatch):
    started: list[tuple[str, ...]] = []
    monkeypatch.setattr(background_import, "start", lambda modules: started.append(
        tuple(modules)))
    # none of these parses or names a family: the registry reports them when building
    background_import.for_specs(["bm25@1st", "bm25+k1", "nosuch:x", "maxp:", "", "maxp:@x"])
    assert started == [()]
    started.clear()
    background_import.for_specs(["listwise-of:splade+window=5", "bm25"])
    assert started == [("torch", "transformers")]       # the wrapped splade's eager imports


def test_a_ranker_under_a_display_name_imports_what_its_family_needs(monkeypatch):
    from abnirml.rankers.base import RankerSpec
    from abnirml.rankers.family import BuiltRanker
    from abnirml.rankers.registry import lookup, name_ranker

    started: list[tuple[str, ...]] = []
    monkeypatch.setattr(background_import, "start", lambda modules: started.append(
        tuple(modules)))

    class Ranker:
        name = "biencoder"

    ranker = Ranker()
    spec = RankerSpec.parse("biencoder@bi")
    name_ranker(ranker, spec.display, spec.canonical)
    background_import.for_scoring(BuiltRanker(ranker, spec, lookup("biencoder")))
    assert started == [("torch", "transformers", "sentence_transformers")]
    assert not hasattr(ranker, "canonical_spec")      # the name is the only attribute set
    # a ranker given as an object imports nothing, whatever it is called
    background_import.for_scoring(BuiltRanker(Ranker()))
    assert started[-1] == ()


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
    from abnirml.rankers.family import BuiltRanker

    gate = _module(tmp_path, monkeypatch, "abnirml_bg_cold")
    _module(tmp_path, monkeypatch, "abnirml_bg_warm").set()

    class Ranker:
        def __init__(self, name: str, module: str):
            self.name = self.fingerprint = name
            self.scoring_imports = (module,)

    cold, warm = Ranker("cold", "abnirml_bg_cold"), Ranker("warm", "abnirml_bg_warm")
    with ScoreCache(None) as cache:
        cache.store("warm", [(b"q" * 16, b"d" * 16, 1.0)])
        _preload_uncached([BuiltRanker(cold), BuiltRanker(warm)], cache)
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
