"""Awaiting a condition instead of sleeping: whatever the core does that a test can
observe (a feed item, a model call, a tool starting, a message delivered) pings one
:class:`Changes`, and :meth:`Changes.until` re-checks its condition after each ping."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable

import anyio

Check = Callable[[], bool | Awaitable[bool]]

# Generous: each core test finishes in milliseconds; this only bounds a broken one.
DEFAULT_TIMEOUT_S = 10.0


class Changes:
    def __init__(self) -> None:
        self._moved = anyio.Event()
        self.count = 0

    def ping(self) -> None:
        """Something observable moved; called *after* the change it reports."""
        self.count += 1
        self._moved.set()
        self._moved = anyio.Event()

    async def until(self, check: Check, what: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        """Return once ``check`` holds; fail naming ``what`` after ``timeout_s``."""
        with anyio.move_on_after(timeout_s):
            while True:
                # Taken before the check: a ping while an async check awaits is not missed.
                moved = self._moved
                result = check()
                if inspect.isawaitable(result):
                    result = await result
                if result:
                    return
                await moved.wait()
        raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
