"""What the lent GPU machines have installed, so a CPU smoke run can refuse everything else.

The GPU machines (see the device tool's KINDS.md) run Python 3.12 with PyTorch,
transformers, sentence-transformers and a fixed set of scientific packages, no network; the
benchmark adds only the wheels ``gpu.py --prepare`` carries. :func:`guard` makes an
interpreter here behave the same way for imports: a top-level module that is neither in the
standard library, nor from a distribution on the image or carried, nor abnirml's own,
raises ImportError when abnirml or the benchmark imports it (what the image's own packages
import is theirs: their versions there bring what they need) — so a
``--smoke`` run here fails where the GPU run would, instead of on the GPU's clock.
"""

from __future__ import annotations

import sys
from importlib.abc import MetaPathFinder

# Distributions on the image (KINDS.md, as read on 2026-11-17), normalised names.
_IMAGE_WORDS = (
    "absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs "
    "botorch build certifi charset-normalizer chex click cloudpickle cmake colorama contourpy "
    "coverage cuda-bindings cuda-core cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython "
    "diffrax e3nn einops equinox etils execnet filelock flatbuffers flax fonttools formulaic "
    "frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx huggingface-hub humanize "
    "hypothesis idna imageio iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin "
    "jaxlib jaxtyping jinja2 joblib kiwisolver lazy-loader lightning lightning-utilities "
    "linear-operator lineax llvmlite lxml markdown markdown-it-py markupsafe matplotlib mdurl "
    "meson ml-dtypes mpi4py mpmath msgpack multidict multipledispatch mypy-extensions nanobind "
    "narwhals networkx ninja numba numba-cuda numpy numpyro nvidia-ml-py onnx onnx-ir "
    "onnxruntime onnxscript opencv-python-headless optax opt-einsum opt-einsum-fx optimistix "
    "orbax-checkpoint packaging pandas pathspec patsy peft pillow pip pluggy portalocker "
    "prometheus-client propcache psutil pyarrow pybind11 py-cpuinfo pygments pyparsing "
    "pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock "
    "pytest-timeout pytest-xdist python-dateutil pytorch-lightning pyyaml regex requests rich "
    "sacrebleu safetensors scikit-build-core scikit-image scikit-learn scipy seaborn "
    "sentencepiece sentence-transformers setuptools shellingham simplejson six "
    "sortedcontainers statsmodels sympy tabulate tensorboard tensorboard-data-server tensorstore "
    "threadpoolctl tifffile tiktoken timm tokenizers toolz torch torchaudio torchdiffeq "
    "torch-geometric torchmetrics torchvision tqdm transformers treescope triton typer "
    "typing-extensions typing-inspect urllib3 uvloop wadler-lindig werkzeug wheel wrapt xarray "
    "xxhash yarl zipp")
IMAGE = frozenset(_IMAGE_WORDS.split())
CARRIED = frozenset({"pystemmer"})          # wheels gpu.py --prepare downloads
OWN = frozenset({"abnirml", "benchmarks", "tests"})


def _normalise(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


class _ImageOnly(MetaPathFinder):
    def __init__(self) -> None:
        from importlib.metadata import packages_distributions

        self.owners = packages_distributions()      # top-level module → distributions

    def find_spec(self, fullname, path, target=None):
        top = fullname.partition(".")[0]
        if top in OWN or top in sys.stdlib_module_names or top.startswith("_"):
            return None
        if _importer() not in OWN:
            return None        # the image's packages bring their own dependencies
        owners = {_normalise(d) for d in self.owners.get(top, [])}
        if not owners or owners & (IMAGE | CARRIED):
            return None        # a module no distribution claims is part of the interpreter
        raise ImportError(f"{top} ({', '.join(sorted(owners))}) is not on the GPU machines' "
                          "image (benchmarks/_gpu_image.py): carry its wheel with "
                          "gpu.py --prepare, or avoid the import")


def _importer() -> str:
    """Top-level package of the code that asked for the import (past importlib's frames)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(
            ("importlib", "_frozen_importlib")):
        frame = frame.f_back
    return "" if frame is None else frame.f_globals.get("__name__", "").partition(".")[0]


def guard() -> None:
    """Refuse, from now on, imports of top-level modules the GPU image lacks."""
    if not any(isinstance(f, _ImageOnly) for f in sys.meta_path):
        sys.meta_path.insert(0, _ImageOnly())
