"""A Linux inotify watch of one directory (and, when asked, the tree under it), read on the
event loop.

The inotify descriptor is non-blocking and awaited with ``anyio.wait_readable``
(epoll under the loop), so an idle watch costs no wake-up at all and a
cancellation needs no thread to notice a stop flag. (``watchfiles``' Rust loop
checks its stop flag every ``step`` ms: four wake-ups a second per watch.)

Changes are (what, path) pairs, ``what`` one of added, modified, deleted, or
changed when the kernel dropped events (its queue overflowed) and only "something
under the root changed" is known. Directories created under a recursive watch
are watched as they appear and what they already hold is reported added.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

import anyio

Change = tuple[str, str]

IN_MODIFY = 0x002
IN_ATTRIB = 0x004
IN_CLOSE_WRITE = 0x008
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

_WATCHED = (
    IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
    | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR
)  # fmt: skip
_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len (struct inotify_event)
_READ_BYTES = 64 * 1024

_libc = ctypes.CDLL(None, use_errno=True)


def _checked(result: int, what: str, path: str = "") -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}", path or None)
    return result


class RootGone(FileNotFoundError):
    """The watched directory was deleted or moved away."""


class DirectoryWatch:
    """``async with DirectoryWatch(root, recursive=True) as watch: changes = await
    watch.next_batch(quiet_ms, max_ms)``."""

    def __init__(self, root: Path, *, recursive: bool) -> None:
        self._root = root
        self._recursive = recursive
        self._fd = -1
        self._dirs: dict[int, Path] = {}  # watch descriptor -> the directory it watches
        self._pending: list[Change] = []  # found while adding watches (a new tree's files)

    async def __aenter__(self) -> DirectoryWatch:
        self._fd = _checked(_libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC), "inotify_init1")
        try:
            self._add(self._root, root=True)
        except BaseException:
            os.close(self._fd)
            raise
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        os.close(self._fd)  # the kernel drops every watch with the descriptor
        self._fd = -1

    def _add(self, directory: Path, *, root: bool = False, report: bool = False) -> None:
        """Watch ``directory`` (and below it when recursive); ``report``: what is already
        there counts as added (it appeared with a directory made after the watch began)."""
        for path in self._directories(directory):
            try:
                wd = _checked(
                    _libc.inotify_add_watch(self._fd, os.fsencode(path), _WATCHED),
                    "inotify_add_watch",
                    str(path),
                )
            except OSError as exc:
                if root and path == directory:
                    raise
                if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                    continue  # gone again before it could be watched
                raise
            self._dirs[wd] = path
            if report:
                with os.scandir(path) as entries:
                    self._pending += [("added", entry.path) for entry in entries]

    def _directories(self, top: Path) -> Iterator[Path]:
        yield top
        if not self._recursive:
            return
        for parent, dirs, _ in os.walk(top):
            for name in dirs:
                yield Path(parent) / name

    async def next_batch(self, quiet_ms: int, max_ms: int) -> list[Change]:
        """The next changes: from the first, until none came for ``quiet_ms`` or ``max_ms``
        passed. Raises :class:`RootGone` when the root directory goes away."""
        changes = self._pending
        self._pending = []
        while not changes:
            await anyio.wait_readable(self._fd)
            changes = self._read()
        deadline = anyio.current_time() + max_ms / 1000
        while (left := deadline - anyio.current_time()) > 0:
            with anyio.move_on_after(min(quiet_ms / 1000, left)) as quiet:
                await anyio.wait_readable(self._fd)
            if quiet.cancelled_caught:
                break
            changes += self._read()
        return changes

    def _read(self) -> list[Change]:
        changes: list[Change] = []
        while True:
            try:
                data = os.read(self._fd, _READ_BYTES)
            except BlockingIOError:
                break
            changes += self._parse(data)
        changes += self._pending  # what the new directories met while parsing held
        self._pending = []
        return changes

    def _parse(self, data: bytes) -> Iterator[Change]:
        offset = 0
        while offset + _HEADER.size <= len(data):
            wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
            raw = data[offset + _HEADER.size : offset + _HEADER.size + length].rstrip(b"\0")
            offset += _HEADER.size + length
            if mask & IN_Q_OVERFLOW:
                yield ("changed", str(self._root))
                continue
            directory = self._dirs.get(wd)
            if directory is None:
                continue  # a watch already dropped
            if mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED):
                if directory == self._root:
                    raise RootGone(errno.ENOENT, "the watched directory is gone", str(directory))
                if mask & IN_IGNORED:
                    del self._dirs[wd]
                continue
            path = directory / os.fsdecode(raw)
            if mask & (IN_CREATE | IN_MOVED_TO):
                if mask & IN_ISDIR and self._recursive:
                    self._add(path, report=True)
                yield ("added", str(path))
            elif mask & (IN_DELETE | IN_MOVED_FROM):
                yield ("deleted", str(path))
            elif not mask & IN_ISDIR:  # a directory's own attributes are not news
                yield ("modified", str(path))


def net_changes(changes: list[Change]) -> dict[str, str]:
    """One change per path, what the batch did to it overall: made and removed again is
    nothing; removed and made again (an editor saving by rename) is modified."""
    first: dict[str, str] = {}
    last: dict[str, str] = {}
    for what, path in changes:
        first.setdefault(path, what)
        last[path] = what
    net = {}
    for path, began in first.items():
        ended = last[path]
        if began == "added":
            if ended != "deleted":
                net[path] = "added"
        elif ended == "deleted":
            net[path] = "deleted"
        elif began == "deleted" or ended == "added":
            net[path] = "modified"
        else:
            net[path] = ended
    return net
