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

A kill at any step leaves nothing the tool cannot own again: the staging folder keeps its
mark through the rename into place, so the next command completes or rolls back a swap cut
short (:func:`finish_interrupted_swap`); a file rewritten in place is recorded in the
manifest as *pending* before it is written (:func:`write_recorded`), so it is the tool's
under its old digest or its new one. :data:`fault_point` lets the tests stop the process at
each of these steps.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import socket
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
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
    it is not one this tool wrote: not a regular file, not its JSON). A file recorded as
    about to be written (:func:`write_recorded`) counts under its new digest when it has
    it: see :func:`read_ownership` for both."""
    ownership = read_ownership(folder)
    return None if ownership is None else ownership.settled(folder)


class Ownership:
    """What a folder's manifest says abnirml wrote there: ``files`` {relative path: sha256}
    and ``pending`` {relative path: sha256}, the files a command recorded *before*
    rewriting them. A file is the tool's while it matches either digest, so a command
    killed between rewriting a file and recording it never leaves a folder the tool
    refuses to own."""

    def __init__(self, files: Mapping[str, str], pending: Mapping[str, str] | None = None):
        self.files = dict(files)
        self.pending = dict(pending or {})

    def owns(self, rel: str, digest: str) -> bool:
        return digest in (self.files.get(rel), self.pending.get(rel))

    def lists(self, rel: str) -> bool:
        return rel in self.files or rel in self.pending

    def names(self) -> set[str]:
        return set(self.files) | set(self.pending)

    def settled(self, folder: Path) -> dict[str, str]:
        """{path: sha256} of what is there now: a pending file that was written counts
        under its new digest."""
        files = dict(self.files)
        for rel, digest in self.pending.items():
            path = folder / rel
            if kind_of(path, follow=False) == "regular file" and file_digest(path) == digest:
                files[rel] = digest
        return files


def read_ownership(folder: Path) -> Ownership | None:
    """The folder's manifest (:class:`Ownership`), or None when it has none or the file is
    not one this tool writes. An entry that is not a relative path inside the folder
    (absolute, ``..``, empty, the manifest itself) is one :class:`ConfigError`: such a
    manifest was not written by abnirml, and nothing it names may be trusted."""
    path = folder / MANIFEST
    if kind_of(path, follow=False) != "regular file":
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("format") != _MANIFEST_FORMAT:
        return None
    files, pending = data.get("files"), data.get("pending", {})
    if not isinstance(files, dict) or not isinstance(pending, dict) or \
            not all(isinstance(k, str) and isinstance(v, str)
                    for d in (files, pending) for k, v in d.items()):
        return None
    for rel in (*files, *pending):
        if not is_inside_name(rel):
            raise ConfigError(f"{path}: the entry {rel!r} is not a relative path inside "
                              f"{folder} (abnirml lists only such paths); refusing to use the "
                              "folder (correct or remove the manifest)")
    return Ownership(files, pending)


def is_inside_name(rel: str) -> bool:
    """Whether ``rel`` is a folder-relative POSIX path naming something inside the folder:
    not absolute, no empty, ``.`` or ``..`` part, no NUL, not the manifest itself."""
    parts = rel.split("/")
    return bool(rel) and "\x00" not in rel and "\\" not in rel and \
        all(part not in ("", ".", "..") for part in parts) and rel != MANIFEST


def write_manifest(folder: Path, files: Mapping[str, str],
                   pending: Mapping[str, str] | None = None) -> None:
    """Write the manifest (atomically) for ``files`` = {relative path: sha256}; ``pending``
    lists files about to be (re)written, with their new digests."""
    document: dict[str, object] = {
        "format": _MANIFEST_FORMAT,
        "note": "files abnirml wrote here, with their SHA-256; abnirml replaces this folder "
                "only while every file in it is listed here unchanged",
        "files": dict(sorted(files.items()))}
    if pending:
        document["pending"] = dict(sorted(pending.items()))
    text = json.dumps(document, indent=1, allow_nan=False) + "\n"
    write_file_atomically(folder / MANIFEST, text.encode("utf-8"))


#: fault injection for tests: called with the name of each step of a folder swap and of a
#: recorded rewrite, so a test can end the process there (tests/robustness/
#: test_kill_points.py); None in normal use
fault_point: Callable[[str], None] | None = None


def _reached(step: str) -> None:
    if fault_point is not None:
        fault_point(step)


def manifest_of_tree(folder: Path) -> dict[str, str]:
    """{relative path: sha256} of every regular file under ``folder`` (the manifest aside)."""
    return {rel: file_digest(folder / rel) for rel, kind in _walk(folder)
            if kind == "regular file" and rel not in (MANIFEST, STAGING_MARK)}


def record_written(folder: Path, paths: Iterable[Path]) -> None:
    """Add (or update) ``paths`` in ``folder``'s manifest, when it has one: a command that
    writes into an ``abnirml run`` folder (``rank-origin``) keeps the folder replaceable by
    the next run."""
    ownership = read_ownership(folder)
    if ownership is None:
        return
    files = ownership.settled(folder)
    for path in paths:
        files[Path(path).relative_to(folder).as_posix()] = file_digest(Path(path))
    write_manifest(folder, files)


def record_intent(folder: Path, digests: Mapping[str, str]) -> bool:
    """Record in ``folder``'s manifest (when it has one) that the files ``digests`` =
    {relative path: sha256} are about to be written: until :func:`record_written` (or the
    next command) settles them, each is the tool's under its old or its new digest.
    Returns whether the folder has a manifest."""
    ownership = read_ownership(folder)
    if ownership is None:
        return False
    write_manifest(folder, ownership.settled(folder), digests)
    _reached("intent recorded")
    return True


def intent_in(outer: Path, target: Path) -> Callable[[Path], None]:
    """A ``before_swap`` for :func:`replacing_folder` of a ``target`` folder inside the
    folder ``outer`` (``patch`` into a run folder), so a kill at any step leaves ``outer``
    one the tool owns. At once (before :func:`replacing_folder` makes ``target``'s parent
    folders) it records ``target``'s manifest as pending in ``outer``'s, with no digest yet:
    the folders on the way are then the tool's. The hook records every file of the
    finished staging folder, under its path in ``target``, as pending."""
    prefix = target.relative_to(outer).as_posix()
    listed = read_ownership(outer)
    if listed is not None and not listed.lists(f"{prefix}/{MANIFEST}"):
        # no file has the digest "": the entry only makes the folders on its way the tool's
        record_intent(outer, {f"{prefix}/{MANIFEST}": ""})

    def record(staging: Path) -> None:
        files = {**manifest_of_tree(staging), MANIFEST: file_digest(staging / MANIFEST)}
        record_intent(outer, {f"{prefix}/{rel}": digest for rel, digest in files.items()})

    return record


def write_recorded(folder: Path, contents: Mapping[str, bytes]) -> list[Path]:
    """Write ``contents`` {relative path: bytes} into ``folder``, each file atomically, and
    record them in its manifest (when it has one) *before* writing and after: a kill at any
    point leaves every file the old or the new one the manifest names."""
    digests = {rel: hashlib.sha256(data).hexdigest() for rel, data in contents.items()}
    recorded = record_intent(folder, digests)
    written = []
    for rel, data in contents.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file_atomically(path, data)
        _reached(f"wrote {rel}")
        written.append(path)
    if recorded:
        record_written(folder, written)
        _reached("recorded")
    return written


def first_foreign(folder: Path, manifest: Ownership | Mapping[str, str] | None
                  ) -> str | None:
    """The first (sorted) folder-relative path under ``folder`` that this tool did not write:
    not in ``manifest``, changed since, not a regular file, or a folder holding none of the
    manifest's files. None when everything there is this tool's, counting what a killed
    command of the tool left (:func:`_is_leftover`)."""
    ownership = manifest if isinstance(manifest, Ownership) or manifest is None \
        else Ownership(manifest)
    names = ownership.names() if ownership is not None else set()
    folders = {ancestor for rel in names for ancestor in _ancestors(rel)}
    skipped = None
    for rel, kind in _walk(folder):
        if skipped is not None and rel.startswith(skipped):
            continue
        if rel == MANIFEST and kind == "regular file":
            continue
        path = folder / rel
        if kind == "folder":
            if rel in folders:
                continue
            if _is_leftover(path):
                skipped = rel + "/"
                continue
            return rel + "/"
        if kind != "regular file":
            return rel
        if ownership is not None and ownership.lists(rel):
            if ownership.owns(rel, file_digest(path)):
                continue
            return rel
        if not _is_leftover_file(path, ownership, folder):
            return rel
    return None


def check_overwritable(folder: Path, relative: Iterable[str], what: str) -> None:
    """Refuse, before writing, to overwrite any ``folder/rel`` that exists but is not the
    file this tool wrote there (edited, someone else's, a link, not a regular file), or to
    write through a linked folder on the way to it."""
    ownership = read_ownership(folder)
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
                if ownership is None or not ownership.owns(rel, file_digest(here)):
                    why = ("this folder has no abnirml manifest" if ownership is None
                           else "it differs from what abnirml wrote there")
                    raise ConfigError(f"{what} {folder}: {rel} was edited or not written by "
                                      f"abnirml ({why}); refusing to overwrite it (move it "
                                      "away to rebuild it)")


def check_replaceable_folder(path: Path, label: str) -> None:
    """Refuse (before any work) to replace a folder holding anything this tool did not
    write there: a file not in its manifest or changed since, a link, a FIFO… The message
    names the first such entry. A swap of this folder that a killed command left half
    done is finished first (:func:`finish_interrupted_swap`)."""
    folder = Path(os.path.realpath(path))
    finish_interrupted_swap(folder)
    if kind_of(folder) != "folder":
        return
    ownership = read_ownership(folder)
    foreign = first_foreign(folder, ownership)
    if foreign is not None:
        why = ("this folder has no abnirml manifest" if ownership is None else
               "abnirml did not write it there, or it changed since")
        raise ConfigError(f"{label} {path} holds {foreign!r} ({why}); refusing to replace "
                          "the folder: choose a new or empty folder")


@contextmanager
def replacing_folder(target: Path, recheck: Callable[[], None],
                     before_swap: Callable[[Path], None] | None = None) -> Iterator[Path]:
    """Write a new ``target`` folder: yields a marked staging folder beside it (after
    finishing what a killed earlier write of ``target`` left); when the block ends cleanly,
    writes the staging folder's manifest, calls ``recheck`` (nobody put a file of theirs in
    ``target`` meanwhile) and ``before_swap(staging)`` (a caller recording intent), and
    swaps the staging folder in. On any error the staging folder is removed and ``target``
    stays as it was; after a kill at any point, the next write of ``target`` (or
    :func:`finish_interrupted_swap`) completes the swap or rolls it back."""
    target.parent.mkdir(parents=True, exist_ok=True)
    finish_interrupted_swap(target)
    staging = make_staging_folder(target.parent, target.name)
    try:
        yield staging
        _reached("staging written")
        write_manifest(staging, manifest_of_tree(staging))
        _reached("staging recorded")
        recheck()
        if before_swap is not None:
            before_swap(staging)
        swap_in(staging, target)
    finally:
        if os.path.lexists(staging):
            remove_tree(staging)


def swap_in(staging: Path, target: Path) -> None:
    """Put the finished ``staging`` folder in ``target``'s place with renames inside one
    parent folder; the earlier ``target`` (checked replaceable) is removed only after.

    The staging folder keeps its mark through the rename and loses it only in ``target``:
    at every moment each folder of the swap is recognisable — the staging folder by its
    mark, the retired one by its manifest, a just-swapped ``target`` by the mark of a
    process that is gone — so :func:`finish_interrupted_swap` can complete it."""
    retired = None
    if os.path.lexists(target):
        retired = retired_name(target.parent, target.name)
        os.replace(target, retired)
        _reached("retired")
    try:
        os.replace(staging, target)
    except BaseException:
        if retired is not None:
            os.replace(retired, target)  # put the earlier output back
        raise
    _reached("swapped")
    (target / STAGING_MARK).unlink(missing_ok=True)
    _reached("unmarked")
    if retired is not None:
        remove_tree(retired)


def remove_tree(path: Path) -> None:
    """Remove a folder of the tool's (staging or retired), its mark and manifest last: a
    removal cut short leaves a folder still recognisably the tool's, never an unmarked
    part of one."""
    import shutil

    last = (MANIFEST, STAGING_MARK)
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.name in last:
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            Path(entry.path).unlink(missing_ok=True)
    _reached("emptied")
    for name in last:
        (path / name).unlink(missing_ok=True)
    with suppress(OSError):
        os.rmdir(path)


def finish_interrupted_swap(target: Path) -> None:
    """Complete or roll back a swap of ``target`` that a killed process (on this host) left
    half done, then remove what it left:

    * ``target`` missing while the process's retired copy exists (killed between the two
      renames): its complete staging folder (marked, every file matching its manifest) is
      renamed into place — the new output, finished — else the retired copy is put back;
    * ``target`` holding the mark of a process that is gone (killed right after the
      rename): the mark is removed when everything else matches the manifest;
    * then :func:`clean_leftovers`."""
    parent, name = target.parent, target.name
    if not os.path.lexists(target):
        found = _leftovers(parent, name)
        for pid in sorted({pid for prefix, pid, _ in found if prefix == RETIRED_PREFIX}):
            staged = [p for prefix, p_id, p in found
                      if prefix == STAGING_PREFIX and p_id == pid and _complete(p, pid)]
            retired = [p for prefix, p_id, p in found
                       if prefix == RETIRED_PREFIX and p_id == pid and _owned(p)]
            if staged or retired:
                os.replace((staged or retired)[0], target)
                break
    mark = target / STAGING_MARK
    if kind_of(target, follow=False) == "folder" and _mark_of_gone_process(mark):
        try:
            ownership = read_ownership(target)
        except ConfigError:
            ownership = None
        if ownership is not None and first_foreign(target, ownership) is None:
            mark.unlink(missing_ok=True)
    clean_leftovers(parent, name)


def write_file_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` under a fresh temporary sibling name, then rename it over ``path``:
    a reader never sees half a file, and the file's mode follows the umask."""
    partial = path.with_name(f".abnirml-tmp-{path.name}-{secrets.token_hex(4)}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        _reached(f"wrote {partial.name[:-9]}")
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
        _reached("staging made")
        fd = os.open(path / STAGING_MARK, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as handle:
            handle.write(f"{socket.gethostname()}\n{os.getpid()}\n".encode())
        _reached("staging marked")
        return path


def retired_name(parent: Path, name: str) -> Path:
    """A free ``.abnirml-retired-<name>-<pid>-<random>`` name in ``parent``."""
    while True:
        path = parent / f"{RETIRED_PREFIX}{name}-{os.getpid()}-{secrets.token_hex(4)}"
        if kind_of(path, follow=False) is None:
            return path


def clean_leftovers(parent: Path, name: str) -> list[Path]:
    """Remove what a killed earlier write of output ``name`` left in ``parent``: staging
    folders holding this host's :data:`STAGING_MARK` whose process is gone (or nothing yet:
    killed while making it), and retired copies of the output whose files all match their
    manifest. Anything else (a live run's staging, another host's, a name that merely
    looks alike) stays. Returns what was removed."""
    removed = []
    for _, _, path in _leftovers(parent, name):
        if _is_leftover(path):
            remove_tree(path)
            removed.append(path)
    return removed


def _leftovers(parent: Path, name: str) -> list[tuple[str, int, Path]]:
    """(prefix, pid, path) of the staging and retired folders of output ``name`` in
    ``parent`` whose process is gone."""
    try:
        entries = sorted(os.scandir(parent), key=lambda e: e.name)
    except OSError:
        return []
    found = []
    for entry in entries:
        for prefix in (STAGING_PREFIX, RETIRED_PREFIX):
            if not entry.name.startswith(prefix + name + "-") or \
                    not entry.is_dir(follow_symlinks=False):
                continue
            pid = _pid_in(entry.name[len(prefix) + len(name) + 1:])
            if pid is not None and not _alive(pid):
                found.append((prefix, pid, Path(entry.path)))
    return found


def _is_leftover(path: Path) -> bool:
    """Whether folder ``path`` is a staging or retired folder a killed process of the tool
    left (its process gone): marked on this host (or still empty), or, retired, every
    file matching its manifest."""
    base = path.name
    prefix = next((p for p in (STAGING_PREFIX, RETIRED_PREFIX) if base.startswith(p)), None)
    head, _, token = base.rpartition("-")
    pid_text = head.rpartition("-")[2]
    if prefix is None or not pid_text.isdigit() or len(token) != 8 or _alive(int(pid_text)):
        return False
    if prefix == RETIRED_PREFIX:
        return _owned(path)
    return _marked_here(path, int(pid_text)) or _just_made(path)


def _is_leftover_file(path: Path, ownership: Ownership | None, folder: Path) -> bool:
    """Whether file ``path`` is what a killed command of the tool left: the mark of a
    swap whose process is gone, or the temporary of an atomic write of a file the manifest
    lists (``.abnirml-tmp-NAME-RANDOM``)."""
    if path.name == STAGING_MARK:
        return _mark_of_gone_process(path)
    if not path.name.startswith(".abnirml-tmp-"):
        return False
    stem, _, token = path.name[len(".abnirml-tmp-"):].rpartition("-")
    if len(token) != 8 or not all(c in "0123456789abcdef" for c in token):
        return False
    if stem == MANIFEST:
        return True
    sibling = (path.parent / stem).relative_to(folder).as_posix()
    return ownership is not None and ownership.lists(sibling)


def _complete(staging: Path, pid: int) -> bool:
    """A staging folder whose writing finished: marked, with a manifest every file matches."""
    return _marked_here(staging, pid) and _owned(staging, need_manifest=True)


def _owned(path: Path, need_manifest: bool = False) -> bool:
    try:
        ownership = read_ownership(path)
    except ConfigError:
        return False
    if ownership is None and need_manifest:
        return False
    return first_foreign(path, ownership) is None


def _just_made(path: Path) -> bool:
    """A staging folder its process was killed in the middle of making: empty, or holding
    only an empty mark."""
    try:
        names = os.listdir(path)
    except OSError:
        return False
    return not names or (names == [STAGING_MARK] and
                         kind_of(path / STAGING_MARK, follow=False) == "regular file" and
                         (path / STAGING_MARK).stat().st_size == 0)


def _mark_of_gone_process(mark: Path) -> bool:
    """Whether ``mark`` is a :data:`STAGING_MARK` of this host whose process is gone."""
    host_pid = _mark_owner(mark)
    return host_pid is not None and host_pid[0] == socket.gethostname() and \
        not _alive(host_pid[1])


def _mark_owner(mark: Path) -> tuple[str, int] | None:
    if kind_of(mark, follow=False) != "regular file":
        return None
    try:
        host, pid_text = mark.read_text(encoding="utf-8").split()[:2]
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return (host, int(pid_text)) if pid_text.isdigit() else None


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
    owner = _mark_owner(path / STAGING_MARK)
    if owner != (socket.gethostname(), pid):
        return False
    return all(kind in ("regular file", "folder") for _, kind in _walk(path))


def _ancestors(rel: str) -> Iterator[str]:
    """The folders above a folder-relative path, nearest last: ``a/b/c`` → ``a``, ``a/b``
    (finite for any string: the path is split, never walked up to a root)."""
    parts = rel.split("/")
    for depth in range(1, len(parts)):
        yield "/".join(parts[:depth])


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
