"""Memory pressure: the daemon's own RSS, the host's MemAvailable, the kernel's PSI."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wakeful.sources.system.config import SystemSection

CONDITION = "memory"
PRESSURE_FILE = Path("/proc/pressure/memory")


@dataclass(frozen=True)
class MemoryReading:
    rss_mb: float | None
    available_mb: float | None
    stall_avg10: float | None  # % of the last 10 s some task stalled on memory


def _kib_field(path: Path, name: str) -> float | None:
    try:
        for line in path.read_text(encoding="ascii").splitlines():
            if line.startswith(name + ":"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _stall_avg10() -> float | None:
    try:
        some = PRESSURE_FILE.read_text(encoding="ascii").splitlines()[0]
        return float(some.split()[1].partition("=")[2])
    except (OSError, ValueError, IndexError):
        return None


def read_memory() -> MemoryReading:
    return MemoryReading(
        rss_mb=_kib_field(Path("/proc/self/status"), "VmRSS"),
        available_mb=_kib_field(Path("/proc/meminfo"), "MemAvailable"),
        stall_avg10=_stall_avg10(),
    )


def memory_problem(reading: MemoryReading, config: SystemSection, *, stalled: bool) -> str | None:
    """What is wrong, with the fix, or None. ``stalled``: the kernel's PSI trigger
    fired since the last reading (tasks waited on memory beyond the set stall)."""
    problems = []
    if config.rss_max_mb and (reading.rss_mb or 0) > config.rss_max_mb:
        problems.append(
            f"the daemon uses {reading.rss_mb:.0f} MB of memory (RSS), over "
            f"[system] rss_max_mb = {config.rss_max_mb:g}"
        )
    available = reading.available_mb
    minimum = config.mem_available_min_mb
    if minimum is not None and available is not None and available < minimum:
        problems.append(
            f"the host has only {available:.0f} MB available (MemAvailable), under "
            f"[system] mem_available_min_mb = {minimum:g}"
        )
    if stalled:
        problems.append(
            f"the kernel reports tasks stalled waiting for memory "
            f"(PSI some avg10 {reading.stall_avg10 or 0:.1f} %)"
        )
    if not problems:
        return None
    return (
        "Memory pressure: "
        + "; ".join(problems)
        + ". The system may start swapping or kill processes. To fix: stop large "
        "background tasks (task_status lists them), or give the host more memory; a "
        "daemon RSS that keeps growing is worth a restart and a bug report."
    )


def memory_fine(reading: MemoryReading) -> str:
    rss = f"{reading.rss_mb:.0f} MB" if reading.rss_mb is not None else "unknown"
    available = f"{reading.available_mb:.0f} MB" if reading.available_mb is not None else "unknown"
    return f"Memory pressure is over: daemon RSS {rss}, host MemAvailable {available}."
