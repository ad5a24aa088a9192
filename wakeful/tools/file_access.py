"""How the file tools find, open, walk and replace files, in one place.

read_file, grep and find_file may look inside the workspace and, read-only, in
the saved outputs (``ctx.output_dir``); write_file and edit_file only inside the
workspace. Every path goes through the one confinement check
(:func:`wakeful.safety.confinement.resolve_inside`), so the tools and the
policy chain cannot disagree about what is inside. Files are opened without
following a final symlink and only if they are regular files (a FIFO would
block a worker thread forever), and a file small enough to be the agent's own
is read once, so the bytes shown are the bytes hashed for the taint ledger.
"""

from __future__ import annotations

import errno
import io
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cached_property
from pathlib import Path
from typing import Generic, TypeVar

from wakeful.core.tool import ToolContext, ToolOutput
from wakeful.kernel.atomic_file import sync_directory
from wakeful.safety.confinement import Outside, resolve_inside
from wakeful.tools.written_files import WrittenFiles, digest

# write_file refuses more; a file this size or smaller is read whole (and hashed).
MAX_WRITE_BYTES = 5 * 1024 * 1024
SNIFF_BYTES = 8192
# Directories the search tools never enter: version-control internals.
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})

T = TypeVar("T")


class Unreadable(Exception):
    """Why a file cannot be read as text, in words for the model."""


class BinaryFile(Unreadable):
    """The file has NUL bytes: not text (the search tools skip it quietly)."""


@dataclass
class Scanned(Generic[T]):
    result: T
    content: bytes | None  # the bytes the result came from; None: too large to be the agent's

    @cached_property
    def sha256(self) -> str | None:
        # Hashed on demand: grep needs it only for files it shows.
        return None if self.content is None else digest(self.content)


def locate_readable(tool: str, given: str, ctx: ToolContext) -> Path | ToolOutput:
    """``given`` resolved inside the workspace or the saved outputs, or the refusal."""
    return _located(tool, resolve_inside(given, ctx.workspace, also=(ctx.output_dir,)))


def locate_writable(tool: str, given: str, ctx: ToolContext) -> Path | ToolOutput:
    """``given`` resolved inside the workspace (saved outputs are read-only), or the refusal."""
    return _located(tool, resolve_inside(given, ctx.workspace))


def _located(tool: str, where: Path | Outside) -> Path | ToolOutput:
    if isinstance(where, Outside):
        return ToolOutput(f"{tool} refused: {where.reason}", is_error=True)
    return where


def shown(path: Path, ctx: ToolContext) -> str:
    """How a path is shown to the model: relative to the workspace when inside it."""
    workspace = Path(os.path.realpath(ctx.workspace))
    if path.is_relative_to(workspace):
        relative = path.relative_to(workspace).as_posix()
        return relative or "."
    return str(path)


def in_saved_outputs(path: Path, ctx: ToolContext) -> bool:
    return path.is_relative_to(Path(os.path.realpath(ctx.output_dir)))


async def is_own(path: Path, sha256: str | None, ctx: ToolContext, ledger: WrittenFiles) -> bool:
    """Whether the bytes read from ``path`` are the agent's: a saved output of its own
    tools, or exactly what write_file/edit_file last wrote there."""
    if in_saved_outputs(path, ctx):
        return True
    return sha256 is not None and await ledger.wrote(path, sha256)


async def record_authorship(
    ledger: WrittenFiles, path: Path, data: bytes, ctx: ToolContext, *, own_before: bool
) -> None:
    """After a write: count the file as the agent's own only if all of its text is —
    the rest was already its own (``own_before``) and the session is untainted (a
    tainted run may be copying a third party's words)."""
    if own_before and ctx.taint is None:
        await ledger.record(path, digest(data))
    else:
        await ledger.forget(path)


def scan_text(
    path: Path,
    given: str,
    consume: Callable[[Iterable[str]], T],
    *,
    prefilter: re.Pattern[str] | None = None,
) -> Scanned[T]:
    """Run ``consume`` over the lines of the text file at ``path`` (blocking; run it in a
    worker thread). A file read whole in which ``prefilter`` finds nothing gets no lines
    (one search of the whole text is far cheaper than one per line). Raises
    :class:`Unreadable` with a message naming ``given``."""
    with _open_regular(path, given) as f:
        size = os.fstat(f.fileno()).st_size
        if size <= MAX_WRITE_BYTES:
            content = f.read()
            _refuse_binary(content[:SNIFF_BYTES], given)
            # Universal newlines, as for a streamed file: "\r\n" and "\r" end a line.
            text = content.decode("utf-8", errors="replace")
            if "\r" in text:
                text = text.replace("\r\n", "\n").replace("\r", "\n")
            if prefilter is not None and prefilter.search(text) is None:
                return Scanned(consume(()), content)
            return Scanned(consume(io.StringIO(text)), content)
        _refuse_binary(f.read(SNIFF_BYTES), given)
        f.seek(0)
        return Scanned(consume(_lines(f)), None)


def read_whole(path: Path, given: str) -> bytes:
    """The bytes of a text file of at most MAX_WRITE_BYTES (blocking)."""
    with _open_regular(path, given) as f:
        size = os.fstat(f.fileno()).st_size
        if size > MAX_WRITE_BYTES:
            raise Unreadable(
                f"{given} is {size} bytes, more than the {MAX_WRITE_BYTES} bytes file tools "
                "change; edit it with shell_exec (sed, patch) instead."
            )
        content = f.read()
    _refuse_binary(content[:SNIFF_BYTES], given)
    return content


def _lines(raw: io.BufferedReader) -> Iterator[str]:
    # Universal newlines: "\r\n" and "\r" end a line like "\n" does.
    yield from io.TextIOWrapper(raw, encoding="utf-8", errors="replace")


def _open_regular(path: Path, given: str) -> io.BufferedReader:
    # O_NOFOLLOW: the path was resolved, so a final symlink here appeared since;
    # O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below).
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise Unreadable(
            f"no such file: {given} (resolved to {path}). Check the name, or look for it "
            f'with find_file (pattern "{path.name}").'
        ) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Unreadable(f"{given} became a symlink while being opened; try again") from None
        raise Unreadable(f"cannot read {given} (resolved to {path}): {exc.strerror}") from None
    mode = os.fstat(fd).st_mode
    if stat.S_ISDIR(mode):
        os.close(fd)
        raise Unreadable(
            f'{given} is a directory; list it with find_file (path "{given}", pattern "*").'
        )
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise Unreadable(f"{given} is not a regular file (a device, pipe or socket)")
    return os.fdopen(fd, "rb")


def _refuse_binary(sample: bytes, given: str) -> None:
    if b"\0" in sample:
        raise BinaryFile(
            f"{given} looks binary (it contains NUL bytes), so it cannot be shown as text; "
            f"use shell_exec with 'file {given}', 'strings {given} | head' or "
            f"'xxd {given} | head'."
        )


def write_atomically(path: Path, data: bytes) -> int | None:
    """Replace ``path`` by ``data`` through a temporary file and a rename, so a reader
    sees the old content or the new, never half. Parents are created; an existing
    file keeps its permissions. The previous size, or None for a new file (blocking).
    Raises :class:`Unreadable` (the message names the path) when it cannot."""
    not_a_directory = Unreadable(
        f"cannot create the directory for {path}: a part of it is a file, not a directory"
    )
    try:
        previous = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        previous = None
    except NotADirectoryError:
        raise not_a_directory from None
    except OSError as exc:
        raise Unreadable(f"cannot write {path}: {exc.strerror}") from None
    if previous is not None and not stat.S_ISREG(previous.st_mode):
        raise Unreadable(f"{path} exists and is not a regular file; choose another path")
    try:
        created = _make_parents(path.parent)
    except (FileExistsError, NotADirectoryError):
        raise not_a_directory from None
    except OSError as exc:
        raise Unreadable(f"cannot create the directory {path.parent}: {exc.strerror}") from None
    temporary = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(temporary, flags, 0o666)  # the umask decides, as for any new file
        try:
            if previous is not None:
                os.fchmod(fd, stat.S_IMODE(previous.st_mode))
            _keep_owner(fd, previous or created or os.stat(path.parent))
            with os.fdopen(fd, "wb", closefd=False) as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise Unreadable(f"cannot write {path}: {exc.strerror}") from None
    sync_directory(path.parent)  # the rename is durable once its entry is on disk
    return None if previous is None else previous.st_size


def _make_parents(directory: Path) -> os.stat_result | None:
    """Create ``directory`` and its missing parents, each owned like the nearest one
    that existed; that one's stat, or None when nothing had to be created."""
    missing: list[Path] = []
    existing = directory
    while not existing.exists():
        missing.append(existing)
        existing = existing.parent
    if not missing:
        return None
    directory.mkdir(parents=True, exist_ok=True)
    owner = os.stat(existing)
    if os.geteuid() == 0:
        for made in missing:
            os.lchown(made, owner.st_uid, owner.st_gid)
    return owner


def _keep_owner(fd: int, like: os.stat_result) -> None:
    # As root (the daemon under systemd), a file the tools write would be root's and
    # the sandboxed commands, which run as another user, could not change it: it
    # keeps the replaced file's owner, or takes its directory's.
    if os.geteuid() == 0:
        os.fchown(fd, like.st_uid, like.st_gid)


def count_lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


@dataclass(frozen=True)
class Entry:
    path: Path  # as walked (not resolved): a symlink stays a symlink
    relative: str  # posix, relative to the walk's root
    is_dir: bool


def walk(root: Path) -> Iterator[Entry]:
    """Every entry under ``root`` in sorted order, never entering version-control
    directories or following a symlinked directory (blocking)."""
    top = str(root)
    for directory, dirnames, filenames in os.walk(top, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
        # Plain strings here: pathlib's parsing per entry costs more than the walk.
        prefix = "" if directory == top else os.path.relpath(directory, top) + "/"
        for name in dirnames:
            yield Entry(Path(directory, name), prefix + name, True)
        for name in sorted(filenames):
            yield Entry(Path(directory, name), prefix + name, False)


def glob_matches(pattern: str, entry: Entry) -> bool:
    """A pattern with "/" is matched against the path under the root ("src/*.py",
    "**/test_*.py"); one without, against the name ("*.py")."""
    if "/" not in pattern:
        return fnmatchcase(entry.path.name, pattern)
    if fnmatchcase(entry.relative, pattern):
        return True
    return pattern.startswith("**/") and fnmatchcase(entry.relative, pattern[3:])
