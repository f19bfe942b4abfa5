"""Text-pair sources for dataset-transfer probes, read in their public release formats.

Each source is a :class:`Source`: the folder it expects under the transfer-data directory
(``--transfer-data DIR`` → ``options["transfer_data"]``), a local loader for that folder and,
where a hub copy carries the fields the probe needs, an online loader (Hugging Face
``datasets`` or ``ir_datasets``, imported lazily and used only with
``options["transfer_online"]``). Absent data raises :class:`~abnirml.data.pairs.DataNotFound`
so that the probe is skipped with reason ``no-data`` instead of failing the whole run.

Loaders take ``keep(key) -> bool``: sources with many large records (XSum, CNN/Daily Mail)
test it *before* reading a record, so a 10 % sub-sample reads 10 % of the files. Rejected
records come back as ``Skip("sub-sampled")`` and are counted like any other discard.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from abnirml.data.pairs import DataNotFound, TextPair
from abnirml.errors import ConfigError
from abnirml.types import Skip

Keep = Callable[[str], bool]
Item = TextPair | Skip
LocalLoader = Callable[[Path, Keep], Iterator[Item]]
HubLoader = Callable[[Keep], Iterator[Item]]

SUB_SAMPLED = "sub-sampled"


def keep_all(_: str) -> bool:
    return True


@dataclass(frozen=True)
class Source:
    """Where a probe's pairs come from. ``folder`` is relative to the transfer-data directory;
    ``hub_id`` documents the online copy ``hub`` reads (empty when there is none)."""

    folder: str
    local: LocalLoader
    hub: HubLoader | None = None
    hub_id: str = ""

    def items(self, options: Mapping[str, Any], keep: Keep = keep_all) -> Iterator[Item]:
        """The source's pairs: local files first, then the hub copy when allowed.

        Raises :class:`DataNotFound` naming the expected location when neither is available.
        """
        root = options.get("transfer_data")
        folder = None if root in (None, "") else Path(str(root)) / self.folder
        if folder is not None and folder.is_dir():
            return self.local(folder, keep)
        if _truthy(options.get("transfer_online")) and self.hub is not None:
            return self.hub(keep)
        if folder is None:
            raise DataNotFound(f"--transfer-data not given (expected a {self.folder}/ folder)")
        raise DataNotFound(str(folder))


def check_transfer_data(value: Any) -> str | None:
    """Validate ``options["transfer_data"]``: a directory the user named must exist."""
    if value in (None, ""):
        return None
    path = Path(str(value))
    if not path.is_dir():
        raise ConfigError(f"--transfer-data {path}: not a directory")
    return str(path)


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)
