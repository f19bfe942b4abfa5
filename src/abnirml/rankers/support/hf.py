"""Finding and loading Hugging Face models, offline first, and naming what was loaded.

A model argument is either a local directory or a hub name. Local directories load without
touching the network and are identified by a content hash of their files; hub names are
looked up in the local Hugging Face cache first, then (unless ``HF_HUB_OFFLINE`` is set, or
a connection to the hub does not open within seconds) on the hub, and are identified by
name and commit. Every failure becomes one
:class:`~abnirml.errors.ConfigError` line naming the ranker, never a traceback.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from abnirml.errors import ConfigError

T = TypeVar("T")

_SKIPPED_FILES = {"README.md", ".gitattributes"}
_PICKLED_SUFFIXES = {".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt"}
_allow_pickle = False


def set_pickle_policy(allow: bool) -> None:
    """Whether pickled weight files in user-supplied directories may be loaded (--allow-pickle).

    Unpickling a file can run arbitrary code, so by default a local model directory must
    hold safetensors weights; the process-wide policy is set when rankers are built.
    """
    global _allow_pickle
    _allow_pickle = allow


_SAFE_WEIGHTS = {"model.safetensors", "model.safetensors.index.json",
                 "adapter_model.safetensors"}
"""The names under which transformers and sentence-transformers look for safetensors weights
(they then ignore pickled files beside them); any other ``*.safetensors`` is never loaded."""


def check_weights_safe(root: Path, ranker: str) -> None:
    """Refuse a local model directory where a pickled file would be loaded, unless allowed.

    Decided per folder (a sentence-transformers model has modules in sub-folders): pickled
    files there are only safe to ignore if that same folder has weights under a name the
    loaders prefer. A stray ``notes.safetensors`` proves nothing.
    """
    if _allow_pickle or not root.is_dir():
        return
    by_folder: dict[Path, list[Path]] = {}
    for path in root.rglob("*"):
        if path.is_file():
            by_folder.setdefault(path.parent, []).append(path)
    for folder in sorted(by_folder):
        names = {p.name for p in by_folder[folder]}
        if names & _SAFE_WEIGHTS:
            continue   # the loaders take these and never unpickle the rest
        pickled = sorted(p.name for p in by_folder[folder] if p.suffix in _PICKLED_SUFFIXES)
        if pickled:
            where = folder.relative_to(root) / pickled[0]
            raise ConfigError(f"ranker {ranker}: {root} has only pickled weights ({where}) "
                              "where the loaders look; "
                              "loading them could run code from the file — convert them to "
                              "safetensors, or pass --allow-pickle if you trust their source")
_digest_memo: dict[tuple[str, tuple[tuple[str, int, int], ...]], str] = {}


@dataclass(frozen=True)
class ModelRef:
    """What a spec's argument names: a local directory (``path``) or a hub name."""

    text: str
    path: Path | None = None
    revision: str | None = None

    @property
    def is_local(self) -> bool:
        return self.path is not None

    @property
    def source(self) -> str:
        return str(self.path) if self.path is not None else self.text


def resolve_model(argument: str, ranker: str, revision: str | None = None,
                  example: str = "") -> ModelRef:
    """Classify ``argument``: an existing directory, a missing path (error) or a hub name."""
    if not argument:
        hint = f", e.g. {example}" if example else ""
        raise ConfigError(f"ranker {ranker}: needs a model name or directory{hint}")
    path = Path(argument).expanduser()
    if path.is_dir():
        return ModelRef(argument, path.resolve(), None)
    if argument.startswith(("/", "./", "../", "~")) or path.exists() or argument.count("/") > 1:
        raise ConfigError(f"ranker {ranker}: model directory {argument!r} not found")
    return ModelRef(argument, None, revision)


def hub_offline() -> bool:
    """True when the user asked Hugging Face libraries not to use the network."""
    flag = os.environ.get("HF_HUB_OFFLINE", "") or os.environ.get("TRANSFORMERS_OFFLINE", "")
    return flag.strip().lower() in {"1", "true", "yes", "on"}


HUB_CHECK_TIMEOUT = 3.0
_hub_reachable: dict[str, bool] = {}


def hub_host() -> tuple[str, int]:
    """Host and port of the Hugging Face endpoint ($HF_ENDPOINT, else huggingface.co)."""
    from urllib.parse import urlsplit

    url = urlsplit(os.environ.get("HF_ENDPOINT", "").strip() or "https://huggingface.co")
    return url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)


def hub_reachable(timeout: float = HUB_CHECK_TIMEOUT) -> bool:
    """Whether a TCP connection to the hub opens within ``timeout`` seconds (once per process).

    Without it, a hub name that is not cached makes transformers retry for most of a minute
    before giving up. Name resolution runs in a daemon thread, since ``getaddrinfo`` ignores
    socket timeouts.
    """
    import socket
    import threading

    host, port = hub_host()
    key = f"{host}:{port}"
    if key not in _hub_reachable:
        answer: list[bool] = []

        def probe() -> None:
            try:
                socket.create_connection((host, port), timeout=timeout).close()
                answer.append(True)
            except OSError:
                answer.append(False)

        thread = threading.Thread(target=probe, daemon=True, name="abnirml-hub-check")
        thread.start()
        thread.join(timeout + 0.5)
        _hub_reachable[key] = bool(answer and answer[0])
    return _hub_reachable[key]


def not_available_locally(ranker: str, model: str, why: str) -> ConfigError:
    """The one line for a hub model that is neither a directory nor cached and cannot be
    downloaded now: what to do to provide it locally."""
    return ConfigError(f"ranker {ranker}: model {model!r} is not a local directory nor in the "
                       f"Hugging Face cache, and {why}: download it where there is network "
                       f"(huggingface-cli download {model}) and pass its directory, or copy "
                       "that cache here ($HF_HOME)")


def first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]


#: held while a model is built or loaded: see :func:`load_pretrained`
MODEL_BUILD_LOCK = threading.RLock()


def load_pretrained(load: Callable[..., T], ref: ModelRef, ranker: str, **kwargs: Any) -> T:
    """Call a ``from_pretrained``-style ``load`` for ``ref``, offline first.

    Hub names are tried in the local cache before the network, so a cached model never
    waits on connection retries; any failure is reported as one line naming the ranker.

    One load at a time per process (:data:`MODEL_BUILD_LOCK`): while transformers builds a
    model it swaps torch's weight-initialisation functions, module-wide, for its own (or
    for no-ops) and puts back the ones it found. Two loads on two threads (the background
    preloads of two rankers) can each put back what the other swapped in, leaving torch's
    initialisers replaced for the rest of the process, so that every model created
    afterwards in it — a user's own, in a notebook — starts from other weights.
    """
    with MODEL_BUILD_LOCK, quiet_transformers():
        if ref.path is not None:
            check_weights_safe(ref.path, ranker)
            try:
                return load(str(ref.path), local_files_only=True, **kwargs)
            except Exception as exc:
                raise ConfigError(f"ranker {ranker}: cannot load the model in {ref.path}: "
                                  f"{first_line(exc)}") from exc
        revision = {"revision": ref.revision} if ref.revision else {}
        try:
            return load(ref.text, local_files_only=True, **revision, **kwargs)
        except Exception as exc:
            cached_error = exc
        if hub_offline():
            raise not_available_locally(ranker, ref.text, "HF_HUB_OFFLINE is set"
                                        ) from cached_error
        if not hub_reachable():
            raise not_available_locally(ranker, ref.text, f"{hub_host()[0]} cannot be reached "
                                        "(offline?)") from cached_error
        try:
            return load(ref.text, **revision, **kwargs)
        except Exception as exc:
            raise ConfigError(f"ranker {ranker}: cannot load model {ref.text!r}: it is not a "
                              "local directory and the Hugging Face hub could not provide it "
                              f"({first_line(exc)})") from exc


def model_identity(ref: ModelRef, config: Any = None) -> str:
    """A stable identity for fingerprints: a content hash for directories, name@commit else."""
    if ref.path is not None:
        return f"dir:{directory_digest(ref.path)}"
    commit = getattr(config, "_commit_hash", None) if config is not None else None
    return f"hub:{ref.text}@{commit or ref.revision or 'unpinned'}"


def directory_digest(root: Path) -> str:
    """Hash of every model file under ``root`` (names and bytes), memoised per process.

    Documentation files are skipped; weights, configuration and tokenizer files all count,
    since each of them changes scores.
    """
    files = sorted(p for p in root.rglob("*")
                   if p.is_file() and p.name not in _SKIPPED_FILES
                   and not any(part.startswith(".") for part in p.relative_to(root).parts))
    stamp = tuple((str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns)
                  for p in files)
    key = (str(root), stamp)
    cached = _digest_memo.get(key)
    if cached is not None:
        return cached
    h = hashlib.blake2b(digest_size=12)
    for path, (rel, size, _) in zip(files, stamp, strict=True):
        h.update(f"{rel}\x00{size}\x00".encode())
        with path.open("rb") as handle:
            h.update(hashlib.file_digest(handle, "blake2b").digest())
    result = _digest_memo[key] = h.hexdigest()
    return result


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """Silence transformers' load reports and progress bars while loading, then restore."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        yield
        return
    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()
