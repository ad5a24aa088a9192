"""Finding the process group a test's shell command runs in (via /proc), and what it reports."""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio

from wakeful.tools.process import group_members

__all__ = ["find_pgid", "group_members", "wait_for_file", "wait_for_pgid"]


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


async def wait_for_file(path: Path, within_s: float = 10.0) -> str:
    """The complete first line of ``path`` once the command under test wrote it."""
    # The command reports from inside a shell; there is no event to await.
    apath = anyio.Path(path)
    with anyio.fail_after(within_s):
        while True:
            if await apath.exists():
                text = await apath.read_text()
                if text.endswith("\n"):
                    return text.strip()
            await anyio.sleep(0.02)
