"""sentence-transformers imported without scikit-learn, which it only needs for a function the
bi-encoder never calls; that function still works, and scikit-learn stays importable."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=900, env={**os.environ, "PYTHONPATH": SRC})


def test_sentence_transformers_without_sklearn_until_its_function_is_called():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("sklearn")
    done = _python("""
        import sys
        from abnirml.rankers.lean_imports import import_sentence_transformers
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
        from abnirml.rankers.lean_imports import import_sentence_transformers
        import_sentence_transformers()
        from sentence_transformers.util import similarity
        from sklearn.metrics import pairwise_distances
        print(similarity.pairwise_distances is pairwise_distances)
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "True"
