"""Output folders that are not a run folder: ``compare --out``, ``rank-origin --out``,
``masking --out``.

Those commands write a few fixed file names into a folder that may hold anything else (the
user's runs, notes, an earlier output). Writing is fine; *replacing* is only fine for a file
the same command wrote before. Each such file starts with bytes the command always writes
(a CSV header, a Markdown title, the PNG signature), so an existing file that does not start
with them is a user's file of the same name and is refused, touching nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from abnirml.errors import ConfigError


def check_output_folder(out: Path, signatures: Mapping[str, bytes], flag: str = "--out",
                        inputs: Iterable[str | Path] = ()) -> None:
    """Refuse (before any work) an ``out`` that is a file or sits under one, and any existing
    ``out/NAME`` of ``signatures`` (a glob such as ``rank_origin_*.png`` works too) that does
    not start with its signature or is one of the command's ``inputs``."""
    refuse_unusable_folder(out, flag)
    if not out.is_dir():
        return
    sources = {Path(p).resolve() for p in inputs if Path(p).exists()}
    for pattern, signature in signatures.items():
        for path in sorted(out.glob(pattern)):
            if path.is_symlink():   # writing would change the file it points to, elsewhere
                raise ConfigError(f"{flag} {out}: {path.name} is a symbolic link; abnirml "
                                  "writes only its own regular files (remove the link or "
                                  "choose another folder)")
            if path.resolve() in sources:
                raise ConfigError(f"{flag} {out}: writing {path.name} would replace an input "
                                  "of this command; choose another folder")
            if not _starts_with(path, signature):
                raise ConfigError(f"{flag} {out} holds a {path.name} that abnirml did not "
                                  "write; refusing to overwrite it (choose another folder)")


def check_owned_files(out: Path, names: Iterable[str], flag: str = "--out") -> None:
    """Refuse (before any work) an ``out`` that cannot be a folder, and any existing
    ``out/NAME`` of ``names`` that is not the file abnirml wrote there: listed in the
    folder's manifest with the digest it has now — the rule ``report`` follows, so a
    hand-edited file is never replaced however it starts."""
    from abnirml.files.ownership import check_overwritable

    refuse_unusable_folder(out, flag)
    if out.is_dir():
        check_overwritable(out, names, flag)


def write_owned_files(out: Path, contents: Mapping[str, str]) -> list[Path]:
    """Write ``contents`` {name: text} into ``out`` and record them in its manifest (one is
    created when the folder has none; it lists only the tool's files, so the user's files
    beside them stay the user's), intent first: :func:`~abnirml.files.ownership.
    write_recorded`."""
    from abnirml.files.ownership import read_ownership, write_manifest, write_recorded

    out.mkdir(parents=True, exist_ok=True)
    if read_ownership(out) is None:
        write_manifest(out, {})
    return write_recorded(out, {name: text.encode("utf-8") for name, text in contents.items()})


def refuse_unusable_folder(out: Path, flag: str = "--out") -> None:
    """One line for an output folder that cannot be one: a link to nothing, a file, or a
    path under a file (the checks every command with an output folder makes first)."""
    if out.is_symlink() and not out.exists():
        raise ConfigError(f"{flag} {out} is a symbolic link to a missing folder "
                          f"({os.readlink(out)}); give a real folder")
    if out.exists() and not out.is_dir():
        from abnirml.files.ownership import kind_of

        kind = kind_of(out)
        what = "a file" if kind == "regular file" else f"a {kind}, a special file"
        raise ConfigError(f"{flag} {out} is {what}, not a directory")
    refuse_path_under_file(out, f"{flag} {out}")


def refuse_path_under_file(path: Path, label: str) -> None:
    """One line, not an OS error deep in a write, when a folder above ``path`` is a file."""
    for ancestor in path.absolute().parents:
        if ancestor.exists() and not ancestor.is_dir():
            raise ConfigError(f"{label}: {ancestor} is a file, not a folder")


def _starts_with(path: Path, signature: bytes) -> bool:
    if not path.is_file():
        return False
    try:
        with path.open("rb") as handle:
            return handle.read(len(signature)) == signature
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it to check what it holds ({exc.strerror})"
                          ) from None
