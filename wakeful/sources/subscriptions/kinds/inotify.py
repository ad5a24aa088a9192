"""Linux inotify watches of directories (and, when asked, the trees under them), read on
the event loop through one shared inotify descriptor.

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


RawEvent = tuple[int, int, bytes]  # wd, mask, name


class Inotify:
    """One inotify descriptor shared by every :class:`DirectoryWatch` given it.

    The kernel limits instances per user (128 by default) far below watches, so
    the file subscriptions share one and each holds watch descriptors in it.
    Two watches of one directory get the same descriptor from the kernel: it is
    counted, and removed only when its last watch goes. The descriptor is opened
    with the first watch and closed with the last.

    Whichever watch is waiting reads for all (no task of its own to own): the
    events are sorted into each watch's queue by descriptor, and when the reader
    stops (its batch is done, or it was cancelled) every waiter is woken, so one
    of them takes over.
    """

    def __init__(self) -> None:
        self._fd = -1
        self._owners: dict[int, set[DirectoryWatch]] = {}  # wd -> the watches holding it
        self._watches: set[DirectoryWatch] = set()
        self._reading = False
        self._woken = anyio.Event()

    @property
    def watch_count(self) -> int:
        """Kernel watch descriptors held (for tests and status)."""
        return len(self._owners)

    def join(self, watch: DirectoryWatch) -> None:
        if self._fd < 0:
            self._fd = _checked(_libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC), "inotify_init1")
        self._watches.add(watch)

    def leave(self, watch: DirectoryWatch, wds: list[int]) -> None:
        """``watch`` is done: drop the descriptors only it held; close with the last."""
        for wd in wds:
            self.release(watch, wd)
        self._watches.discard(watch)
        if not self._watches and self._fd >= 0:
            os.close(self._fd)  # the kernel drops every watch with the descriptor
            self._fd = -1
            self._owners.clear()

    def add(self, watch: DirectoryWatch, path: Path) -> int:
        wd = _checked(
            _libc.inotify_add_watch(self._fd, os.fsencode(path), _WATCHED),
            "inotify_add_watch",
            str(path),
        )
        self._owners.setdefault(wd, set()).add(watch)
        return wd

    def release(self, watch: DirectoryWatch, wd: int) -> None:
        owners = self._owners.get(wd)
        if owners is None:
            return
        owners.discard(watch)
        if not owners:
            del self._owners[wd]
            # EINVAL: the kernel already dropped it (the directory went away).
            _libc.inotify_rm_watch(self._fd, wd)

    async def wait(self, watch: DirectoryWatch) -> None:
        """Until ``watch`` has events queued (it may have to read them itself)."""
        while not watch.queued:
            if self._reading:
                woken = self._woken
                await woken.wait()
                continue
            self._reading = True
            try:
                await anyio.wait_readable(self._fd)
                self._read()
            finally:
                self._reading = False
                self._woken.set()  # the events read, or a reader gone: every waiter looks
                self._woken = anyio.Event()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self._fd, _READ_BYTES)
            except BlockingIOError:
                return
            offset = 0
            while offset + _HEADER.size <= len(data):
                wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
                raw = data[offset + _HEADER.size : offset + _HEADER.size + length].rstrip(b"\0")
                offset += _HEADER.size + length
                if mask & IN_Q_OVERFLOW:  # events were dropped: everyone may have missed some
                    for each in self._watches:
                        each.queued.append((wd, mask, raw))
                    continue
                for each in self._owners.get(wd, ()):
                    each.queued.append((wd, mask, raw))
                if mask & IN_IGNORED:
                    self._owners.pop(wd, None)  # the kernel removed it; it may reuse the number


class DirectoryWatch:
    """``async with DirectoryWatch(root, recursive=True) as watch: changes = await
    watch.next_batch(quiet_ms, max_ms)``; watches given one :class:`Inotify` share its
    descriptor (without one, the watch has its own)."""

    def __init__(self, root: Path, *, recursive: bool, inotify: Inotify | None = None) -> None:
        self._root = root
        self._recursive = recursive
        self._inotify = inotify if inotify is not None else Inotify()
        self._dirs: dict[int, Path] = {}  # watch descriptor -> the directory it watches
        self._pending: list[Change] = []  # found while adding watches (a new tree's files)
        self.queued: list[RawEvent] = []  # read by whichever watch was reading, for this one

    async def __aenter__(self) -> DirectoryWatch:
        self._inotify.join(self)
        try:
            self._add(self._root, root=True)
        except BaseException:
            self._inotify.leave(self, list(self._dirs))
            raise
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._inotify.leave(self, list(self._dirs))
        self._dirs.clear()

    def _add(self, directory: Path, *, root: bool = False, report: bool = False) -> None:
        """Watch ``directory`` (and below it when recursive); ``report``: what is already
        there counts as added (it appeared with a directory made after the watch began)."""
        for path in self._directories(directory):
            try:
                wd = self._inotify.add(self, path)
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
            await self._inotify.wait(self)
            changes = self._read()
        deadline = anyio.current_time() + max_ms / 1000
        while (left := deadline - anyio.current_time()) > 0:
            with anyio.move_on_after(min(quiet_ms / 1000, left)) as quiet:
                await self._inotify.wait(self)
            if quiet.cancelled_caught:
                break
            changes += self._read()
        return changes

    def _read(self) -> list[Change]:
        queued, self.queued = self.queued, []
        changes = list(self._parse(queued))
        changes += self._pending  # what the new directories met while parsing held
        self._pending = []
        return changes

    def _parse(self, queued: list[RawEvent]) -> Iterator[Change]:
        for wd, mask, raw in queued:
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
