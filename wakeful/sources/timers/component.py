"""The timers component: job store, scheduler, tools and status."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import structlog
from anyio.abc import TaskStatus

from wakeful.core.components.context import ComponentHealth, ComponentSetup
from wakeful.sources.timers.firing import TimerExecutor
from wakeful.sources.timers.service import TimerService
from wakeful.sources.timers.tools import CancelTimer, ListTimers, SetTimer
from wakeful.store.timers.port import PendingFire, TimerJobStore

if TYPE_CHECKING:  # the composed config lives in the app; its type only
    from wakeful.app.config import Settings

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


class TimersComponent:
    """set_timer / cancel_timer / list_timers, the scheduler and ``[[timers]]``."""

    name = "timers"

    async def configure(self, setup: ComponentSetup) -> None:
        settings = setup.settings
        store = await _open_job_store(setup)
        setup.resources.push_async_callback(_close, store)
        self.store = store
        self.executor = TimerExecutor(store, None, setup.submit, settings.scheduler.misfire_grace_s)
        self.service = TimerService(store, self.executor)
        # Paused: jobs are loaded and the config's reconciled, so list_timers and the
        # status bar are right from a session's first request; nothing fires yet.
        self.service.start(settings.timers)
        setup.resources.callback(self.service.stop)
        _register(setup, self.service)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(self.store.run_writer, name="timer job store writer")
            self.executor.attach(group)
            for fire in self.store.pending_fires:  # runs in flight when the daemon last stopped
                group.start_soon(_replay, self.executor, fire, name=f"timer replay {fire.job_id}")
            self.service.resume()
            task_status.started()
            # Cancelled when the daemon stops: fires still in flight stay recorded and
            # are replayed at the next start.
            await anyio.sleep_forever()

    async def reload(self, settings: Settings) -> list[str]:
        """SIGHUP: ``[[timers]]`` added, changed or removed apply without a restart.

        The same reconciliation as at start: an unchanged timer keeps its next run,
        a changed one is rescheduled, one gone from the file is removed; timers set
        by tools are never touched. Committed before the reload is reported done.
        """
        self.service.sync_config(settings.timers)
        await self.service.store.flush(durable=True)
        return ["timers"]


async def _open_job_store(setup: ComponentSetup) -> TimerJobStore:
    """The jobs where the event store is (its SQLite file, or shared in Redis)."""
    return await setup.resources.enter_async_context(setup.store.timer_jobs())


async def _close(store: TimerJobStore) -> None:
    with anyio.CancelScope(shield=True), anyio.move_on_after(_STOP_DEADLINE_S):
        await store.drain()
    store.close()


async def _replay(executor: TimerExecutor, fire: PendingFire) -> None:
    await executor.fire(fire, replayed=True)


def _register(setup: ComponentSetup, service: TimerService) -> None:
    for tool in (SetTimer(service), CancelTimer(service), ListTimers(service)):
        setup.add_tool(tool)
    setup.add_task_view(lambda session: TimerTaskView(service, session))
    setup.add_status("timers", lambda: _status(service))
    setup.set_health("timers", ComponentHealth(True, "scheduler running"))


def _status(service: TimerService) -> dict[str, Any]:
    timers = sorted(service.timers(), key=lambda t: t["next_fire_time"] or "~")
    return {
        "active": len(timers),
        "timers": [
            {k: t[k] for k in ("timer_id", "session", "schedule", "next_fire_time", "name")}
            for t in timers[:_STATUS_LIMIT]
        ],
    }
