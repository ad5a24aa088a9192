"""Run a shell command in its own process group and never leave it behind.

The command gets a new session (so its process group id is its pid). When it
times out, when the caller cancels, or when it exits leaving background
children (``sleep 1000 &``), the whole group is stopped: SIGTERM, a grace
period, then SIGKILL. Cleanup after cancellation runs shielded with its own
deadline, then the cancellation is re-raised.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, Process

from wakeful.safety.sandbox import NO_SANDBOX, Sandbox

DEFAULT_GRACE_S = 2.0
DEFAULT_MAX_OUTPUT_BYTES = 8 * 1024 * 1024
_POLL_S = 0.02
_SETTLE_S = 0.05
# Extra time, beyond the grace period, for SIGKILL to take effect and for
# reading what is left in the pipe.
_KILL_SLACK_S = 1.0


@dataclass(frozen=True)
class ProcessResult:
    exit_code: int | None  # negative: killed by that signal (subprocess convention)
    output: str  # stdout and stderr interleaved as written
    duration_s: float
    killed: bool  # stopped by us because timeout_s ran out
    background_stopped: bool  # the command exited but left processes we stopped


class _Capture:
    """Bounded output buffer: keeps the first and last ``limit / 2`` bytes."""

    def __init__(self, limit: int) -> None:
        self._half = max(1, limit // 2)
        self._head = bytearray()
        self._tail = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = self._half - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        self._tail += chunk
        excess = len(self._tail) - self._half
        if excess > 0:
            del self._tail[:excess]
            self.dropped += excess

    def text(self) -> str:
        if not self.dropped:
            return bytes(self._head + self._tail).decode("utf-8", errors="replace")
        marker = f"\n[... {self.dropped} bytes of output were not kept in memory ...]\n"
        head = self._head.decode("utf-8", errors="replace")
        return head + marker + self._tail.decode("utf-8", errors="replace")


async def run_process(
    command: str,
    *,
    cwd: Path,
    timeout_s: float | None = None,
    grace_s: float = DEFAULT_GRACE_S,
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    env: dict[str, str] | None = None,
    on_start: Callable[[int], None] | None = None,
    sandbox: Sandbox = NO_SANDBOX,
) -> ProcessResult:
    """Run ``command`` with ``/bin/sh -c`` (inside ``sandbox``) and collect its output.

    ``timeout_s`` is part of the result (partial output, ``killed=True``)
    rather than an exception; cancellation by the caller stops the group and
    propagates. ``on_start`` receives the pid, which is also the group id.
    """
    started = time.monotonic()
    proc = await _spawn(sandbox.argv(command, cwd=cwd), cwd, env)
    capture = _Capture(max_output_bytes)
    try:
        if on_start is not None:
            on_start(proc.pid)
        killed, leftovers = await _supervise(proc, capture, timeout_s, grace_s)
    except BaseException:
        with anyio.CancelScope(shield=True), anyio.move_on_after(grace_s + _KILL_SLACK_S):
            await stop_group(proc.pid, grace_s)
        raise
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(_KILL_SLACK_S):
            await proc.aclose()
    return ProcessResult(
        exit_code=proc.returncode,
        output=capture.text(),
        duration_s=time.monotonic() - started,
        killed=killed,
        background_stopped=leftovers,
    )


async def _spawn(argv: list[str], cwd: Path, env: dict[str, str] | None) -> Process:
    # A new session makes the pid the group id, and keeps our own group (and
    # terminal signals such as Ctrl-C) apart from the command's.
    return await anyio.open_process(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )


async def _supervise(
    proc: Process, capture: _Capture, timeout_s: float | None, grace_s: float
) -> tuple[bool, bool]:
    """Wait for the command, then stop whatever is left of its group."""
    assert proc.stdout is not None  # we asked for a pipe
    drained = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(_pump, proc.stdout, capture, drained)
        with anyio.move_on_after(timeout_s) as deadline:
            await proc.wait()
        # After a normal exit, live group members are background children
        # still holding the pipe open; stopping them is what lets the read end.
        leftovers = not deadline.cancelled_caught and await _outlives_settle(proc.pid)
        await stop_group(proc.pid, grace_s)
        await proc.wait()
        # A process that escaped the group (setsid) could hold the pipe forever.
        with anyio.move_on_after(_KILL_SLACK_S):
            await drained.wait()
        tg.cancel_scope.cancel()
    killed = deadline.cancelled_caught
    return killed, leftovers and not killed


async def _outlives_settle(pgid: int) -> bool:
    """True when the group still runs ``_SETTLE_S`` after its leader exited.

    A sandbox's own init (bubblewrap's pid 1) ends a moment after the leader
    reports; it is not the command's background work, and need not be signalled.
    """
    delay = 0.0005
    give_up = time.monotonic() + _SETTLE_S
    while group_alive(pgid):
        if time.monotonic() >= give_up:
            return True
        await anyio.sleep(delay)  # no event for a non-child's exit; short polls, bounded
        delay = min(delay * 2, 0.01)
    return False


async def _pump(stream: ByteReceiveStream, capture: _Capture, drained: anyio.Event) -> None:
    try:
        async for chunk in stream:
            capture.add(chunk)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass
    finally:
        drained.set()


async def stop_group(pgid: int, grace_s: float = DEFAULT_GRACE_S) -> None:
    """SIGTERM the process group, wait up to ``grace_s``, then SIGKILL it."""
    if not _signal_group(pgid, signal.SIGTERM):
        return
    if await _wait_gone(pgid, grace_s):
        return
    _signal_group(pgid, signal.SIGKILL)
    await _wait_gone(pgid, _KILL_SLACK_S)


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    """Send ``sig`` to the group; False when no process of the group exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    return True


async def _wait_gone(pgid: int, within_s: float) -> bool:
    # Process exit of non-children has no event to await; poll, bounded.
    with anyio.move_on_after(within_s):
        while group_alive(pgid):  # noqa: ASYNC110 - nothing to await, see above
            await anyio.sleep(_POLL_S)
        return True
    return False


def group_alive(pgid: int) -> bool:
    """True while a process of group ``pgid`` is still running.

    Zombies do not count: orphaned grandchildren are reaped by init, which in
    some containers never happens, and a zombie holds no resources or pipes.
    """
    if not Path("/proc").is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True
    return bool(group_members(pgid))


def group_members(pgid: int) -> list[int]:
    """The running (non-zombie) processes of group ``pgid``, from /proc."""
    return [
        int(entry.name)
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit() and _stat_pgrp_running(entry / "stat") == pgid
    ]


def _stat_pgrp_running(stat_path: Path) -> int | None:
    """The process group of a running (non-zombie) process, else None."""
    try:
        stat = stat_path.read_text()
    except OSError:
        return None
    # The command name may contain spaces and parentheses; fields follow the last ")".
    fields = stat[stat.rfind(")") + 2 :].split()
    if len(fields) < 3 or fields[0] in ("Z", "X"):
        return None
    return int(fields[2])
