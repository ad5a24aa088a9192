"""Finding the process group a test's shell command runs in, via /proc."""

from __future__ import annotations

import os
import time
from pathlib import Path

from wakeful.handlers.process import group_members

__all__ = ["find_pgid", "group_members", "wait_for_pgid"]


def find_pgid(marker: str) -> int:
    """The process group of the `sh -c` whose command line carries `marker`."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and b"sh\x00-c" in cmdline:
            return os.getpgid(int(pid))
    raise LookupError(marker)


def wait_for_pgid(marker: str, timeout_s: float = 10.0) -> int:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return find_pgid(marker)
        except (LookupError, ProcessLookupError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)  # polling the process table: there is no event to await
