"""A component restarted by its supervisor ``component_failures`` times within a window.

The supervisor (``wakeful/core/components/supervision.py``) tells every
listener of each failure as it happens; nothing is polled. The episode ends
when the window passes with no new failure (a one-shot timer at the last
failure + the window).
"""

from __future__ import annotations

import time
from collections import deque

import anyio

from wakeful.sources.system.alerts import AlertBook
from wakeful.sources.system.waiting import until_change_or

PREFIX = "component:"


class ComponentFailureWatch:
    def __init__(self, book: AlertBook, threshold: int, window_s: float) -> None:
        self._book = book
        self._threshold = threshold
        self._window_s = window_s
        self._failures: dict[str, deque[float]] = {}
        self._last_error: dict[str, str] = {}
        self._new: deque[str] = deque()
        self._changed = anyio.Event()

    def on_failure(self, component: str, detail: str) -> None:
        """Called by the supervisor, in the event loop; only records and wakes."""
        self._failures.setdefault(component, deque()).append(time.time())
        self._last_error[component] = detail
        self._new.append(component)
        self._changed.set()

    async def run(self) -> None:
        # The counts start afresh with the process: an episode from before a restart ends.
        await self._book.settle_unseen(PREFIX, "the daemon restarted; no failure since")
        while True:
            self._changed = anyio.Event()
            while self._new:
                await self._note(self._new.popleft())
            await until_change_or(self._changed, await self._resolve_quiet())

    async def _note(self, component: str) -> None:
        times = self._recent(component)
        if len(times) < self._threshold:
            return
        await self._book.raise_(
            PREFIX + component,
            f"Component {component!r} failed {len(times)} times in the last "
            f"{self._window_s:g} s and keeps being restarted (last error: "
            f"{self._last_error.get(component, '?')}). What it provides may not work "
            "meanwhile. To fix: see its line under components in `wakeful status` and the "
            "daemon's log.",
            component=component,
            failures=len(times),
            last_error=self._last_error.get(component, ""),
        )

    async def _resolve_quiet(self) -> float | None:
        """End the episodes whose window has passed quietly; the next such deadline."""
        now = time.time()
        deadline: float | None = None
        for condition in [c for c in self._book.active if c.startswith(PREFIX)]:
            component = condition.removeprefix(PREFIX)
            times = self._failures.get(component)
            last = times[-1] if times else 0.0
            due = last + self._window_s
            if due <= now:
                await self._book.resolve(
                    condition,
                    f"Component {component!r} has not failed for {self._window_s:g} s.",
                )
            else:
                deadline = due if deadline is None else min(deadline, due)
        return deadline

    def _recent(self, component: str) -> deque[float]:
        times = self._failures.setdefault(component, deque())
        while times and times[0] < time.time() - self._window_s:
            times.popleft()
        return times
