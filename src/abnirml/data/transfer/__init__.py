"""Text-pair sources for dataset-transfer probes, read in their public release formats.

Each source is a :class:`Source`: the folder it expects under the transfer-data directory
(``--transfer-data DIR`` → ``dtp.data`` setting), a local loader for that folder and,
where a hub copy carries the fields the probe needs, an online loader (Hugging Face
``datasets`` or ``ir_datasets``, imported lazily and used only with
the ``dtp.online`` setting). Absent data raises :class:`~abnirml.data.pairs.DataNotFound`
so that the probe is skipped with reason ``no-data`` instead of failing the whole run.
The value ``demo`` names the small demo corpus shipped with the package
(``abnirml/data/demo_transfer/``, original text in the same formats), found through
:mod:`importlib.resources` like the demo collection.

Loaders take ``keep(key) -> bool``: sources with many large records (XSum, CNN/Daily Mail)
test it *before* reading a record, so a 10 % sub-sample reads 10 % of the files. Rejected
records come back as ``Skip("sub-sampled")`` and are counted like any other discard.
"""

from __future__ import annotations

import atexit
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Generic, TypeVar

from abnirml.data.pairs import DataNotFound, TextPair
from abnirml.errors import ConfigError
from abnirml.samples import Skip

Keep = Callable[[str], bool]
Item = TextPair | Skip
#: what a source yields: text pairs (and skips) for most probes, records for factuality
ItemT = TypeVar("ItemT")

SUB_SAMPLED = "sub-sampled"
#: ``--transfer-data demo``: the packaged demo corpus (a folder literally named demo: ./demo)
DEMO = "demo"
DEMO_PACKAGE = ("abnirml.data", "demo_transfer")


def keep_all(_: str) -> bool:
    return True


@dataclass(frozen=True)
class Source(Generic[ItemT]):
    """Where a probe's pairs come from. ``folder`` is relative to the transfer-data directory;
    ``hub_id`` documents the online copy ``hub`` reads (empty when there is none)."""

    folder: str
    local: Callable[[Path, Keep], Iterator[ItemT]]
    hub: Callable[[Keep], Iterator[ItemT]] | None = None
    hub_id: str = ""

    def items(self, data: Any = None, online: bool = False,
              keep: Keep = keep_all) -> Iterator[ItemT]:
        """The source's pairs: local files under the transfer-data directory ``data`` first,
        then the hub copy when ``online`` allows it (the probes pass their typed
        ``dtp.data``/``dtp.online`` settings).

        Raises :class:`DataNotFound` naming the expected location when neither is available.
        """
        root = transfer_root(data)
        folder = None if root is None else root / self.folder
        if folder is not None and folder.is_dir():
            return self.local(folder, keep)
        if online and self.hub is not None:
            return self.hub(keep)
        if folder is None:
            raise DataNotFound(f"--transfer-data not given (expected a {self.folder}/ folder)")
        raise DataNotFound(str(folder))


def transfer_root(value: Any) -> Path | None:
    """The directory an ``dtp.data`` setting value names: None when unset, the
    packaged demo corpus for ``demo``, else the path as given."""
    if value in (None, ""):
        return None
    if str(value) == DEMO:
        return demo_transfer_path()
    return Path(str(value))


@lru_cache(maxsize=1)
def demo_transfer_path() -> Path:
    """The packaged demo transfer corpus on the file system (through importlib.resources;
    a zipped install is extracted once, for the life of the process)."""
    package, name = DEMO_PACKAGE
    stack = ExitStack()
    path = Path(stack.enter_context(resources.as_file(resources.files(package) / name)))
    atexit.register(stack.close)
    return path


def check_transfer_data(value: Any) -> str | None:
    """Validate ``dtp.data`` setting: a directory the user named must exist.

    ``demo`` is kept as given (the report and run.json say ``demo``); it must resolve to
    the packaged corpus."""
    if value in (None, ""):
        return None
    if str(value) == DEMO:
        if not demo_transfer_path().is_dir():
            raise ConfigError("--transfer-data demo: the packaged demo corpus is missing "
                              f"({demo_transfer_path()}); reinstall abnirml")
        return DEMO
    path = Path(str(value))
    if not path.is_dir():
        raise ConfigError(f"--transfer-data {path}: not a directory")
    return str(path)
