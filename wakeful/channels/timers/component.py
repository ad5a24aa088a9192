"""The timers component: job store, scheduler, tools and status, in one lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import structlog

from wakeful.channels.timers.firing import TimerExecutor
from wakeful.channels.timers.jobstore import PendingFire, SqliteJobStore
from wakeful.channels.timers.service import TimerService
from wakeful.channels.timers.tools import CancelTimer, ListTimers, SetTimer
from wakeful.daemon.components.context import ComponentHealth, Services
from wakeful.daemon.config import Settings

log = structlog.get_logger(__name__)

_STATUS_LIMIT = 50  # timers listed in /api/status; the count is always exact
_STOP_DEADLINE_S = 5.0


class TimerTaskView:
    """A session's timers for task_status / cancel_task (state "scheduled")."""

    def __init__(self, service: TimerService, session: str) -> None:
        self._service = service
        self._session = session

    def describe(self, task_id: str) -> dict[str, Any] | None:
        job = self._service.get(task_id)
        if job is None or job.kwargs["session"] != self._session:
            return None
        return next(t for t in self._service.timers(self._session) if t["task_id"] == task_id)

    def list_tasks(self) -> list[dict[str, Any]]:
        return self._service.timers(self._session)

    async def cancel(self, task_id: str) -> dict[str, Any] | None:
        if self.describe(task_id) is None:
            return None
        found = self._service.cancel(task_id)
        await self._service.store.flush(durable=True)
        return found


class TimerReloader:
    """SIGHUP: ``[[timers]]`` added, changed or removed in the config apply without a restart.

    The same reconciliation as at start: an unchanged timer keeps its next run,
    a changed one is rescheduled, one gone from the file is removed; timers set
    by tools are never touched. Committed before the reload is reported done.
    """

    def __init__(self, service: TimerService) -> None:
        self.service = service

    async def reload(self, settings: Settings) -> list[str]:
        self.service.sync_config(settings.timers)
        await self.service.store.flush(durable=True)
        return ["timers"]


@asynccontextmanager
async def timers_component(services: Services) -> AsyncIterator[TimerReloader]:
    """Run the timer service for the daemon's lifetime."""
    settings = services.settings
    store = SqliteJobStore(
        services.data_dir / "wakeful.db", durable_synchronous=settings.store.sqlite_synchronous
    )
    await store.open()
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(store.run_writer, name="timer job store writer")
            executor = TimerExecutor(
                store, group, services.submit, settings.scheduler.misfire_grace_s
            )
            service = TimerService(store, executor)
            service.start(settings.timers)
            _register(services, service)
            for fire in store.pending_fires:  # runs in flight when the daemon last stopped
                group.start_soon(_replay, executor, fire, name=f"timer replay {fire.job_id}")
            try:
                yield TimerReloader(service)
            finally:
                service.stop()
                # Fires still in flight stay recorded and are replayed at the next start.
                group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(_STOP_DEADLINE_S):
            await store.drain()
        store.close()


async def _replay(executor: TimerExecutor, fire: PendingFire) -> None:
    await executor.fire(fire, replayed=True)


def _register(services: Services, service: TimerService) -> None:
    for tool in (SetTimer(service), CancelTimer(service), ListTimers(service)):
        services.tools.register(tool)
    services.task_views.append(lambda session: TimerTaskView(service, session))
    services.status_providers["timers"] = lambda: _status(service)
    services.health["timers"] = ComponentHealth(True, "scheduler running")


def _status(service: TimerService) -> dict[str, Any]:
    timers = sorted(service.timers(), key=lambda t: t["next_fire_time"] or "~")
    return {
        "active": len(timers),
        "timers": [
            {k: t[k] for k in ("timer_id", "session", "schedule", "next_fire_time", "name")}
            for t in timers[:_STATUS_LIMIT]
        ],
    }
