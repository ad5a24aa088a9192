"""Is the file system holding the data directory nearly full?"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from wakeful.channels.system.config import SystemSection

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
