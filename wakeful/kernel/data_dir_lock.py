"""One daemon per data_dir: an exclusive ``flock`` held for the process's life.

Two daemons on one data_dir would both run crash recovery on the same
sessions, write placeholders for each other's running calls and answer the
same message twice. The lock is ``flock(LOCK_EX)`` on ``<data_dir>/wakeful.lock``:
the kernel drops it when the holder's last descriptor closes, so a SIGKILLed
daemon never leaves a lock behind — a file with a dead pid in it is just an
old note, and the next start takes the lock and overwrites it.

The pid, host and start time written into the file are only there for the
refusal message; the lock itself is the ``flock``, never the file's contents.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

LOCK_FILE = "wakeful.lock"


class DataDirLocked(Exception):
    """Another live process holds the data_dir lock; the message says which and what to do."""


@contextmanager
def hold_data_dir_lock(data_dir: Path) -> Iterator[Path]:
    """Hold the data_dir lock until the block ends (or the process dies)."""
    path = data_dir / LOCK_FILE
    # Python opens descriptors non-inheritable, so tools the daemon spawns
    # (shell tasks that outlive it) never keep the lock alive.
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DataDirLocked(_refusal(data_dir, _read_holder(fd))) from None
        _write_holder(fd)
        try:
            yield path
        finally:
            # Empty the note before letting go, so nobody reads a stale pid.
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _write_holder(fd: int) -> None:
    holder = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(holder) + "\n").encode(), 0)


def _read_holder(fd: int) -> dict[str, object]:
    try:
        text = os.pread(fd, 4096, 0).decode("utf-8", "replace")
        holder = json.loads(text) if text.strip() else {}
    except (OSError, ValueError):
        return {}
    return holder if isinstance(holder, dict) else {}


def _refusal(data_dir: Path, holder: dict[str, object]) -> str:
    # The holder writes its note just after taking the lock: a start racing it
    # may find the file still empty.
    pid = holder.get("pid", "unknown")
    where = f" on {holder['host']}" if holder.get("host") else ""
    since = f", since {holder['started']}" if holder.get("started") else ""
    return (
        f"another wakeful (pid {pid}{where}{since}) is running with data_dir {data_dir}; "
        f"stop it, or give this one its own [daemon] data_dir"
    )
