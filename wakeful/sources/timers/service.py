"""The timer service: APScheduler on the daemon's event loop, and its timers.

One AsyncIOScheduler sleeps (``loop.call_later``) until the next fire time
and does nothing in between, so an idle daemon is not woken by timers.
Timers set by tools get ids ``t-<hex>``; timers from the config file use
``config:<name>`` and are reconciled at start and on SIGHUP: same schedule → the stored
job is kept as it is (so a run missed while the daemon was down is not
lost by rescheduling), changed → replaced, gone from the file → removed.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import structlog
from apscheduler.job import Job

from wakeful.kernel.schedules import Schedule
from wakeful.sources.timers.aps_scheduler import AsyncIOScheduler, BaseScheduler
from wakeful.sources.timers.config import TimerConfig
from wakeful.sources.timers.firing import JOB_FUNC, TimerExecutor, iso_utc
from wakeful.sources.timers.store_port import TimerJobStore

log = structlog.get_logger(__name__)

CONFIG_PREFIX = "config:"
# A timer never outruns its own fires: each run is one quick commit, so a
# generous cap only guards against a runaway interval.
_MAX_INSTANCES = 1000
_APS_LOGGER = logging.getLogger("wakeful.timers.apscheduler")
_APS_LOGGER.setLevel(logging.WARNING)  # its INFO lines repeat what we log ourselves


class _Scheduler(AsyncIOScheduler):  # type: ignore[misc]
    """Shuts down at once: the stock one defers shutdown to a later loop turn."""

    def shutdown(self, wait: bool = False) -> None:
        BaseScheduler.shutdown(self, wait)
        self._stop_timer()


@dataclass(frozen=True)
class TimerRequest:
    schedule: Schedule
    message: str
    session: str
    name: str = ""
    # Set when a tainted run set the timer: its event is then untrusted too, so
    # a stranger cannot launder an instruction through "remind me later".
    tainted_by: str | None = None


class TimerService:
    def __init__(self, store: TimerJobStore, executor: TimerExecutor) -> None:
        self.store = store
        self.executor = executor
        self.scheduler = _Scheduler(
            timezone=UTC,
            jobstores={"default": store},
            executors={"default": executor},
            job_defaults={
                "coalesce": True,
                # None: APScheduler drops nothing; our executor applies the grace window.
                "misfire_grace_time": None,
                "max_instances": _MAX_INSTANCES,
            },
            logger=_APS_LOGGER,
        )

    # -- lifecycle ------------------------------------------------------------------

    def start(self, config_timers: list[TimerConfig]) -> None:
        """Load stored jobs and reconcile the config's, without firing any yet."""
        self.scheduler.start(paused=True)
        self.sync_config(config_timers)

    def resume(self) -> None:
        """Begin firing (the run phase: events may be sent from now on)."""
        self.scheduler.resume()

    def stop(self) -> None:
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)

    # -- timers -------------------------------------------------------------------------

    def add(self, request: TimerRequest, timer_id: str | None = None) -> dict[str, Any]:
        job = self.scheduler.add_job(
            JOB_FUNC,
            trigger=request.schedule.trigger(),
            id=timer_id or f"t-{uuid.uuid4().hex[:10]}",
            name=request.name or "timer",
            kwargs=_kwargs(request),
            replace_existing=True,
        )
        return describe(job)

    def get(self, timer_id: str) -> Job | None:
        job: Job | None = self.scheduler.get_job(timer_id)
        return job

    def cancel(self, timer_id: str) -> dict[str, Any] | None:
        job = self.get(timer_id)
        if job is None:
            return None
        found = describe(job)
        self.scheduler.remove_job(timer_id)
        return {**found, "state": "cancelled"}

    def timers(self, session: str | None = None) -> list[dict[str, Any]]:
        jobs: list[Job] = self.scheduler.get_jobs()
        return [describe(j) for j in jobs if session is None or j.kwargs["session"] == session]

    # -- config -------------------------------------------------------------------------

    def sync_config(self, config_timers: list[TimerConfig]) -> None:
        wanted = {CONFIG_PREFIX + timer.name: timer for timer in config_timers}
        for job in self.scheduler.get_jobs():
            if job.id.startswith(CONFIG_PREFIX) and job.id not in wanted:
                log.info("config timer removed", timer_id=job.id)
                self.scheduler.remove_job(job.id)
        for timer_id, timer in wanted.items():
            self._upsert(timer_id, timer)

    def _upsert(self, timer_id: str, timer: TimerConfig) -> None:
        request = TimerRequest(timer.schedule(), timer.message, timer.session, timer.name)
        existing = self.get(timer_id)
        if existing is not None and existing.kwargs.get("schedule") == request.schedule.as_dict():
            if existing.kwargs != _kwargs(request):
                existing.modify(kwargs=_kwargs(request))  # keeps its next run time
            return
        if existing is None and _has_passed(request.schedule):
            log.info("config timer's time has passed; not scheduled", timer_id=timer_id)
            return
        self.add(request, timer_id)
        log.info("config timer scheduled", timer_id=timer_id)


def _has_passed(schedule: Schedule) -> bool:
    return schedule.kind == "at" and datetime.fromisoformat(schedule.value) <= datetime.now(UTC)


def _kwargs(request: TimerRequest) -> dict[str, Any]:
    return {
        "message": request.message,
        "session": request.session,
        "name": request.name,
        "schedule": request.schedule.as_dict(),
        **({"tainted_by": request.tainted_by} if request.tainted_by else {}),
    }


def describe(job: Job) -> dict[str, Any]:
    """A timer as the tools, task_status and /api/status show it."""
    schedule = Schedule.from_dict(job.kwargs["schedule"])
    next_run = job.next_run_time
    return {
        "task_id": job.id,
        "timer_id": job.id,
        "kind": "timer",
        "state": "scheduled" if next_run else "paused",
        "name": job.kwargs.get("name") or "",
        "schedule": schedule.describe(),
        "next_fire_time": iso_utc(next_run) if next_run else None,
        "message": job.kwargs["message"],
        "session": job.kwargs["session"],
        "source": "config" if job.id.startswith(CONFIG_PREFIX) else "tool",
    }
