"""What abnirml may create, replace or delete on disk, in one place (docs/reliability.md).

The rule: abnirml creates, moves, replaces and deletes **regular files and folders that it
wrote itself**, and nothing else. Three things make that checkable:

* a *manifest* (:data:`MANIFEST`) in every output folder it writes, naming each file it wrote
  with the file's SHA-256; a folder is replaced, and a file overwritten, only when what is
  there now is exactly what the manifest records: a file added, edited or linked in by
  someone else stops the command with one line naming it, before any work;
* a *kind check* before any path is opened: a FIFO, a device or a socket is never opened (a
  FIFO would block forever, a device would be written through), it is one clear error;
* *recognisable temporary names*: a half-written output lives in a sibling folder named
  ``.abnirml-staging-<name>-<pid>-<random>`` holding a :data:`STAGING_MARK` file; when the
  process that made it is gone (killed), the next command writing the same output removes it.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import socket
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from abnirml.errors import ConfigError

MANIFEST = ".abnirml-manifest.json"
STAGING_MARK = ".abnirml-staging"
STAGING_PREFIX = ".abnirml-staging-"
RETIRED_PREFIX = ".abnirml-retired-"
_MANIFEST_FORMAT = "abnirml-manifest/1"

_KINDS = ((stat.S_ISREG, "regular file"), (stat.S_ISDIR, "folder"),
          (stat.S_ISLNK, "symbolic link"), (stat.S_ISFIFO, "named pipe (FIFO)"),
          (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"),
          (stat.S_ISSOCK, "socket"))


def kind_of(path: str | Path, follow: bool = True) -> str | None:
    """``"regular file"``, ``"folder"``, ``"named pipe (FIFO)"``… or None when absent;
    from ``stat`` alone, so a FIFO is never opened to find out. ``follow=False`` reports a
    symbolic link as one."""
    try:
        mode = (os.stat if follow else os.lstat)(path).st_mode
    except FileNotFoundError:
        return None
    except OSError:
        if not follow:
            return None
        # a dangling or looping link: say what the name itself is
        return kind_of(path, follow=False)
    return next((name for test, name in _KINDS if test(mode)), "special file")


def refuse_special_file(path: str | Path, label: str) -> None:
    """One line for a path that exists and is neither a regular file nor a folder (a FIFO,
    device or socket): checked with ``stat`` before anything opens it."""
    kind = kind_of(path)
    if kind not in (None, "regular file", "folder", "symbolic link"):
        raise ConfigError(f"{label}: is a {kind}, not a regular file; abnirml reads and "
                          "writes only regular files")


def file_digest(path: Path) -> str:
    """SHA-256 of a regular file, read in blocks."""
    h = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_manifest(folder: Path) -> dict[str, str] | None:
    """The manifest's {folder-relative path: sha256}, or None when the folder has none (or
    it is not one this tool wrote: not a regular file, not its JSON)."""
    path = folder / MANIFEST
    if kind_of(path, follow=False) != "regular file":
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    files = data.get("files") if isinstance(data, dict) else None
    if (data.get("format") if isinstance(data, dict) else None) != _MANIFEST_FORMAT or \
            not isinstance(files, dict) or \
            not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        return None
    return dict(files)


def write_manifest(folder: Path, files: Mapping[str, str]) -> None:
    """Write the manifest (atomically) for ``files`` = {relative path: sha256}."""
    text = json.dumps({"format": _MANIFEST_FORMAT,
                       "note": "files abnirml wrote here, with their SHA-256; abnirml "
                               "replaces this folder only while every file in it is listed "
                               "here unchanged",
                       "files": dict(sorted(files.items()))}, indent=1) + "\n"
    write_file_atomically(folder / MANIFEST, text.encode("utf-8"))


def manifest_of_tree(folder: Path) -> dict[str, str]:
    """{relative path: sha256} of every regular file under ``folder`` (the manifest aside)."""
    return {rel: file_digest(folder / rel) for rel, kind in _walk(folder)
            if kind == "regular file" and rel not in (MANIFEST, STAGING_MARK)}


def record_written(folder: Path, paths: Iterable[Path]) -> None:
    """Add (or update) ``paths`` in ``folder``'s manifest, when it has one: a command that
    writes into an ``abnirml run`` folder (``report``, ``rank-origin``) keeps the folder
    replaceable by the next run."""
    manifest = read_manifest(folder)
    if manifest is None:
        return
    for path in paths:
        manifest[Path(path).relative_to(folder).as_posix()] = file_digest(Path(path))
    write_manifest(folder, manifest)


def first_foreign(folder: Path, manifest: Mapping[str, str] | None) -> str | None:
    """The first (sorted) folder-relative path under ``folder`` that this tool did not write:
    not in ``manifest``, changed since, not a regular file, or a folder holding none of the
    manifest's files. None when everything there is this tool's."""
    manifest = manifest or {}
    folders = {str(Path(rel).parent.as_posix()) for rel in manifest}
    folders |= {p for rel in manifest for p in _ancestors(rel)}
    for rel, kind in _walk(folder):
        if rel == MANIFEST and kind == "regular file":
            continue
        if kind == "folder":
            if rel not in folders:
                return rel + "/"
            continue
        if kind != "regular file" or rel not in manifest:
            return rel
        if file_digest(folder / rel) != manifest[rel]:
            return rel
    return None


def check_overwritable(folder: Path, relative: Iterable[str], what: str) -> None:
    """Refuse, before writing, to overwrite any ``folder/rel`` that exists but is not the
    file this tool wrote there (edited, someone else's, a link, not a regular file), or to
    write through a linked folder on the way to it."""
    manifest = read_manifest(folder)
    for rel in relative:
        parts = Path(rel).parts
        for depth in range(1, len(parts) + 1):
            here = folder.joinpath(*parts[:depth])
            kind = kind_of(here, follow=False)
            if kind is None:
                break
            last = depth == len(parts)
            if not last and kind != "folder":
                raise ConfigError(f"{what} {folder}: {Path(*parts[:depth])} is a {kind}, not "
                                  "a folder abnirml wrote; refusing to write through it")
            if last:
                if kind != "regular file":
                    raise ConfigError(f"{what} {folder}: {rel} is a {kind}, not a file "
                                      "abnirml wrote; refusing to replace it")
                if manifest is None or manifest.get(rel) != file_digest(here):
                    why = ("this folder has no abnirml manifest" if manifest is None
                           else "it differs from what abnirml wrote there")
                    raise ConfigError(f"{what} {folder}: {rel} was edited or not written by "
                                      f"abnirml ({why}); refusing to overwrite it (move it "
                                      "away to rebuild it)")


def check_replaceable_folder(path: Path, label: str) -> None:
    """Refuse (before any work) to replace a folder holding anything this tool did not
    write there: a file not in its manifest or changed since, a link, a FIFO… The message
    names the first such entry."""
    folder = Path(os.path.realpath(path))
    if kind_of(folder) != "folder":
        return
    manifest = read_manifest(folder)
    foreign = first_foreign(folder, manifest)
    if foreign is not None:
        why = ("this folder has no abnirml manifest" if manifest is None else
               "abnirml did not write it there, or it changed since")
        raise ConfigError(f"{label} {path} holds {foreign!r} ({why}); refusing to replace "
                          "the folder: choose a new or empty folder")


@contextmanager
def replacing_folder(target: Path, recheck: Callable[[], None]) -> Iterator[Path]:
    """Write a new ``target`` folder: yields a marked staging folder beside it (after
    removing what a killed earlier write of ``target`` left); when the block ends cleanly,
    writes the staging folder's manifest, calls ``recheck`` (nobody put a file of theirs in
    ``target`` meanwhile) and swaps the staging folder in. On any error the staging folder
    is removed and ``target`` stays as it was."""
    import shutil

    target.parent.mkdir(parents=True, exist_ok=True)
    clean_leftovers(target.parent, target.name)
    staging = make_staging_folder(target.parent, target.name)
    try:
        yield staging
        write_manifest(staging, manifest_of_tree(staging))
        recheck()
        swap_in(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def swap_in(staging: Path, target: Path) -> None:
    """Put the finished ``staging`` folder in ``target``'s place with renames inside one
    parent folder; the earlier ``target`` (checked replaceable) is removed only after."""
    import shutil

    (staging / STAGING_MARK).unlink(missing_ok=True)
    if not os.path.lexists(target):
        os.replace(staging, target)
        return
    retired = retired_name(target.parent, target.name)
    os.replace(target, retired)
    try:
        os.replace(staging, target)
    except BaseException:
        os.replace(retired, target)  # put the earlier output back
        raise
    shutil.rmtree(retired, ignore_errors=True)


def write_file_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` under a fresh temporary sibling name, then rename it over ``path``:
    a reader never sees half a file, and the file's mode follows the umask."""
    partial = path.with_name(f".abnirml-tmp-{path.name}-{secrets.token_hex(4)}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def make_staging_folder(parent: Path, name: str) -> Path:
    """A new, marked ``.abnirml-staging-<name>-<pid>-<random>`` folder in ``parent``, its
    mode following the umask (``mkdtemp`` would make it 0700 for good)."""
    while True:
        path = parent / f"{STAGING_PREFIX}{name}-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            os.mkdir(path, 0o777)
        except FileExistsError:
            continue
        (path / STAGING_MARK).write_text(f"{socket.gethostname()}\n{os.getpid()}\n",
                                         encoding="utf-8")
        return path


def retired_name(parent: Path, name: str) -> Path:
    """A free ``.abnirml-retired-<name>-<pid>-<random>`` name in ``parent``."""
    while True:
        path = parent / f"{RETIRED_PREFIX}{name}-{os.getpid()}-{secrets.token_hex(4)}"
        if kind_of(path, follow=False) is None:
            return path


def clean_leftovers(parent: Path, name: str) -> list[Path]:
    """Remove what a killed earlier write of output ``name`` left in ``parent``: staging
    folders holding this host's :data:`STAGING_MARK` whose process is gone, and retired
    copies of the output whose files all match their manifest. Anything else (a live
    run's staging, another host's, a name that merely looks alike) stays. Returns what
    was removed."""
    import shutil

    removed = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for entry in entries:
        for prefix in (STAGING_PREFIX, RETIRED_PREFIX):
            rest = entry.name[len(prefix):] if entry.name.startswith(prefix + name + "-") \
                else None
            if rest is None or not entry.is_dir(follow_symlinks=False):
                continue
            pid = _pid_in(rest[len(name) + 1:])
            if pid is None or _alive(pid):
                continue
            path = Path(entry.path)
            if prefix == STAGING_PREFIX and not _marked_here(path, pid):
                continue
            if prefix == RETIRED_PREFIX and first_foreign(path, read_manifest(path)) is not None:
                continue
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _pid_in(tail: str) -> int | None:
    head, _, token = tail.partition("-")
    return int(head) if head.isdigit() and len(token) == 8 else None


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:       # exists, someone else's
        return True
    return True


def _marked_here(path: Path, pid: int) -> bool:
    mark = path / STAGING_MARK
    if kind_of(mark, follow=False) != "regular file":
        return False
    try:
        host, pid_text = mark.read_text(encoding="utf-8").split()[:2]
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    if host != socket.gethostname() or pid_text != str(pid):
        return False
    return all(kind in ("regular file", "folder") for _, kind in _walk(path))


def _ancestors(rel: str) -> Iterator[str]:
    parent = Path(rel).parent
    while parent != Path("."):
        yield parent.as_posix()
        parent = parent.parent


def _walk(folder: Path, prefix: str = "") -> Iterator[tuple[str, str]]:
    """(relative path, kind) of everything under ``folder``, sorted, links not followed."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return
    for name in names:
        rel = f"{prefix}{name}"
        kind = kind_of(folder / name, follow=False) or "missing"
        yield rel, kind
        if kind == "folder":
            yield from _walk(folder / name, rel + "/")
