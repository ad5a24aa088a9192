"""The system-events component: one task per watch, all of them event-driven.

What wakes an idle daemon: the resource check's one timer (every
``check_interval_s``, 60 s by default). Everything else sleeps until its own
deadline (the oldest pending event's, a silence's end, a failure window's
end) or until the feed, the supervisor or the kernel (PSI) says something
changed. ``process.timeout`` is raised by the shell channel, which owns the
tasks and their declared limits (``wakeful/sources/shell/limits.py``).
"""

from __future__ import annotations

from typing import Any

import anyio
from anyio.abc import TaskStatus

from wakeful.core.components.context import ComponentHealth, ComponentSetup
from wakeful.core.feed import FeedItem
from wakeful.sources.system.alerts import AlertBook
from wakeful.sources.system.component_failures import ComponentFailureWatch
from wakeful.sources.system.inactivity import InactivityWatch
from wakeful.sources.system.pending_age import PendingAgeWatch
from wakeful.sources.system.resources import ResourceWatch


class SystemComponent:
    name = "system"

    async def configure(self, setup: ComponentSetup) -> None:
        config = setup.settings.system
        self.setup = setup
        self.book = AlertBook(setup.submit, setup.state, config.session)
        self.resources = ResourceWatch(self.book, config, setup.data_dir)
        self.failures = ComponentFailureWatch(
            self.book, config.component_failures, config.component_failure_window_s
        )
        setup.on_component_failure(self.failures.on_failure)
        self.pending = (
            PendingAgeWatch(
                setup.store,
                self.book,
                config.pending_age_max_s,
                model=setup.settings.llm.configured,
            )
            if config.pending_age_max_s
            else None
        )
        after_s = config.user_inactive_after_s()
        self.inactivity = (
            InactivityWatch(setup.submit, setup.state, after_s, config.user_inactive_after or "")
            if after_s is not None
            else None
        )
        setup.add_status("system", self._status)
        setup.add_check("open alerts", self.book.open_alerts)
        setup.set_health("system", ComponentHealth(ok=True, detail="watching"))

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        await self.book.load()
        await self.resources.first_check()
        with self.setup.feed.observe(self._observe):
            async with anyio.create_task_group() as group:
                group.start_soon(self.resources.run, name="system: disk and memory")
                group.start_soon(self.failures.run, name="system: component failures")
                if self.pending is not None:
                    group.start_soon(self.pending.run, name="system: pending age")
                if self.inactivity is not None:
                    group.start_soon(self.inactivity.run, name="system: user inactivity")
                task_status.started()

    def _observe(self, item: FeedItem) -> None:
        # Called inside every feed publish: only look and wake, never block.
        if self.pending is not None:
            self.pending.on_feed(item)
        if self.inactivity is not None:
            self.inactivity.on_feed(item)

    def _status(self) -> dict[str, Any]:
        status = self.book.status()
        status["memory_pressure_trigger"] = self.resources.trigger_note
        status["resource_checks"] = self.resources.checks
        if self.inactivity is not None:
            status["user_inactive_sent"] = self.inactivity.fired
        return status
