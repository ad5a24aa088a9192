"""Replacing a file whole, so that a crash at any point leaves the old file or the new
one, never a truncated mix: the text goes to a temporary file beside it (the same
file system, so the rename is atomic), is fsynced, renamed over the file, and the
directory is fsynced (the rename is durable only once its entry is on disk).

Standard library only: ``wakeful init`` writes with it without the daemon's deps.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path


def write_atomic(path: Path, text: str, *, mode: int | None = None) -> None:
    """Replace ``path``'s content with ``text`` (UTF-8).

    ``mode``: the file's permissions (0o600 for a secret), set before any byte is
    written. None: an existing file keeps its mode, a new one gets the umask's default,
    as ``write_text`` would. A symlink is followed: the file it names is replaced,
    the link stays. Raises ``OSError`` naming ``path`` (not the temporary, which is
    removed), so the caller's one-line error names the file the user knows."""
    try:
        _replace(Path(os.path.realpath(path)), text, mode)
    except OSError as exc:
        # OSError(errno, ...) is the errno's own subclass (PermissionError, ...).
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc


def _replace(target: Path, text: str, mode: int | None) -> None:
    if mode is None:
        with contextlib.suppress(FileNotFoundError):  # a new file: the umask decides
            mode = stat.S_IMODE(os.stat(target).st_mode)
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    descriptor = os.open(temporary, flags, 0o666 if mode is None else mode)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)  # open's mode is masked by the umask
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    sync_directory(target.parent)


def sync_directory(directory: Path) -> None:
    """fsync ``directory``, making a rename in it durable; a file system that cannot
    (some network ones) is let be: the rename itself has happened."""
    try:
        descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
