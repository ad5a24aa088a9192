"""Is the file system holding the data directory nearly full?

Measured on the resource timer (``check_interval_s``, a minute by default)
and at start, not after each large write. The measurement is cheap (one
statvfs); hearing of the writes is not. They come from several owners: shell
task output (the shell channel), write_file and tool outputs (the handlers),
the store's own growth (SQLite or Redis, in the core). Reporting bytes from
each to this package would wire the core to a channel, which components do
not do; an inotify watch of the data directory instead would wake the daemon
on every write of every running task (IN_MODIFY per write), the opposite of
an idle daemon; fanotify's filesystem-wide events need CAP_SYS_ADMIN. The
margin is the answer instead: the default 512 MB / 5 % leaves minutes at
the rate a task writes, and an operator expecting faster bursts lowers
``[system] check_interval_s``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from wakeful.sources.system.config import SystemSection

CONDITION = "disk"
MIB = 1024 * 1024


@dataclass(frozen=True)
class DiskReading:
    path: str
    free_mb: float
    total_mb: float

    @property
    def free_percent(self) -> float:
        return 100.0 * self.free_mb / self.total_mb if self.total_mb else 100.0


def read_disk(path: Path) -> DiskReading:
    stats = os.statvfs(path)
    # f_bavail: what an unprivileged writer (the daemon) may still use.
    return DiskReading(
        str(path), stats.f_bavail * stats.f_frsize / MIB, stats.f_blocks * stats.f_frsize / MIB
    )


def disk_problem(reading: DiskReading, config: SystemSection) -> str | None:
    """What is wrong, in one sentence with the fix, or None when there is room."""
    low_mb = config.disk_free_min_mb is not None and reading.free_mb < config.disk_free_min_mb
    low_percent = (
        config.disk_free_min_percent is not None
        and reading.free_percent < config.disk_free_min_percent
    )
    if not (low_mb or low_percent):
        return None
    limits = []
    if config.disk_free_min_mb is not None:
        limits.append(f"{config.disk_free_min_mb:g} MB")
    if config.disk_free_min_percent is not None:
        limits.append(f"{config.disk_free_min_percent:g} %")
    return (
        f"The disk holding the data directory {reading.path} is nearly full: "
        f"{reading.free_mb:.0f} MB free ({reading.free_percent:.1f} %), below the "
        f"minimum of {' / '.join(limits)} ([system] disk_free_min_mb / disk_free_min_percent). "
        "When it is full, new events and replies cannot be stored. To fix: free space "
        "there (old task outputs are under tasks/ and outputs/)."
    )


def disk_fine(reading: DiskReading) -> str:
    return (
        f"The disk holding the data directory {reading.path} has room again: "
        f"{reading.free_mb:.0f} MB free ({reading.free_percent:.1f} %)."
    )
