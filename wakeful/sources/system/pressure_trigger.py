"""A kernel PSI trigger on /proc/pressure/memory: woken by the kernel, never polled.

Writing ``some <stall µs> <window µs>`` to the file arms a trigger; ``poll()``
then reports ``POLLPRI`` when tasks stalled on memory that long within a
window (at most once per window). The event loop's selector does not watch
``POLLPRI``, so one thread blocks in ``poll()`` on the trigger and on a pipe
that wakes it when the watch ends (a blocked thread costs no wake-ups).
Where PSI is missing or may not be written (old kernels, some containers),
:func:`open_trigger` says so and the periodic check alone watches memory.
"""

from __future__ import annotations

import os
import select
from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.to_thread

from wakeful.sources.system.memory import PRESSURE_FILE


class PressureTrigger:
    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._wake_r, self._wake_w = os.pipe()

    def close(self) -> None:
        for fd in (self._fd, self._wake_r, self._wake_w):
            os.close(fd)

    async def watch(self, on_stall: Callable[[], None]) -> None:
        """Call ``on_stall`` (in the event loop) each time the kernel reports a stall."""
        async with anyio.create_task_group() as group:
            group.start_soon(self._wake_thread_when_cancelled)
            while True:
                # Not abandoned on cancel: the thread is ours until it returns, which the
                # byte written by the task above makes it do at once.
                if await anyio.to_thread.run_sync(self._wait):
                    on_stall()

    async def _wake_thread_when_cancelled(self) -> None:
        try:
            await anyio.sleep_forever()
        finally:
            os.write(self._wake_w, b"x")

    def _wait(self) -> bool:
        poller = select.poll()
        poller.register(self._fd, select.POLLPRI)
        poller.register(self._wake_r, select.POLLIN)
        for fd, events in poller.poll():
            if fd == self._wake_r:
                os.read(self._wake_r, 64)
                return False
            if events & (select.POLLERR | select.POLLNVAL):
                raise OSError(f"the memory pressure trigger failed (poll events {events})")
            if events & select.POLLPRI:
                return True
        return False


def open_trigger(
    stall_ms: int, window_s: float, path: Path = PRESSURE_FILE
) -> PressureTrigger | str:
    """An armed trigger, or why there is none."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
    except OSError as exc:
        return f"no PSI trigger ({path}: {exc.strerror})"
    try:
        os.write(fd, f"some {stall_ms * 1000} {int(window_s * 1_000_000)}\0".encode())
    except OSError as exc:
        os.close(fd)
        return f"no PSI trigger (writing {path}: {exc.strerror})"
    return PressureTrigger(fd)
