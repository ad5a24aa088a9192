"""What a due timer does: enqueue one event with a deterministic id, nothing else.

The executor replaces APScheduler's: it runs no job function. For each due
run it records the run as in flight (see ``wakeful.store.timers.sqlite``), then commits either
a ``timer.trigger`` event or, when the run is later than the grace window
(the daemon was down), a ``system.alert`` saying the run was missed. The
missed run is an event rather than only a log line so the event log keeps
it and the agent learns that, say, the 09:00 summary did not happen; it is
routine (queued), never an interrupt. Both ids are derived from the job and
the scheduled time, so a run fired twice — after a crash, or by a race —
is stored once. With the Redis backend several daemons schedule the same
job; each asks its job store to claim the run first (``claim_fire``), and
only the one that won submits the event.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog
from anyio.abc import TaskGroup
from apscheduler.executors.base import BaseExecutor
from apscheduler.job import Job

from wakeful.core.front_door import DaemonUnavailable, SubmitResult
from wakeful.kernel.event_kinds import EventKind
from wakeful.kernel.events import Event
from wakeful.store.timers.port import PendingFire, TimerJobStore

log = structlog.get_logger(__name__)

JOB_FUNC = "wakeful.sources.timers.firing:timer_job"
_MAX_COUNTED_MISSES = 1000
TIMER_SOURCE = {"type": "system", "principal": "timer", "trusted": True}

Submit = Callable[[Event], Awaitable[SubmitResult]]


def timer_job(**_: Any) -> None:
    """The stored job function; a textual reference is what makes a job persistable."""
    raise RuntimeError("timer jobs are run by TimerExecutor, never called directly")


def iso_utc(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def fire_body(job: Job, run_time: datetime, now: datetime) -> dict[str, Any]:
    """The run's facts, taken while the job still shows its first missed time."""
    info = dict(job.kwargs)
    next_fire = job.trigger.get_next_fire_time(run_time, now)
    info.update(
        timer_id=job.id,
        run_time=iso_utc(run_time),
        coalesced_runs=_runs_between(job, job.next_run_time, run_time),
        next_fire_time=iso_utc(next_fire) if next_fire else None,
    )
    return info


def _runs_between(job: Job, first: datetime | None, last: datetime) -> int:
    """Earlier due runs folded into ``last`` (counted up to a cap)."""
    count, moment = 0, first
    while moment is not None and moment < last and count < _MAX_COUNTED_MISSES:
        count += 1
        moment = job.trigger.get_next_fire_time(moment, moment)
    return count


@dataclass(frozen=True)
class Outcome:
    result: SubmitResult
    missed: bool
    late_s: float


def build_event(fire: PendingFire, now: datetime, grace_s: float) -> tuple[Event, bool]:
    """The ``timer.trigger`` event, or the ``system.alert`` for a run beyond grace."""
    body = fire.body
    late = now - fire.run_time
    missed = late > timedelta(seconds=grace_s)
    label = body.get("name") or fire.job_id
    data = {
        **{k: body.get(k) for k in ("timer_id", "name", "schedule", "next_fire_time")},
        "scheduled_for": iso_utc(fire.run_time),
        "fired_at": iso_utc(now),
        "late_s": round(late.total_seconds(), 3),
        "coalesced_runs": body.get("coalesced_runs", 0),
    }
    source = TIMER_SOURCE
    if body.get("tainted_by"):
        data["tainted_by"] = body["tainted_by"]
        source = {**TIMER_SOURCE, "trusted": False}
    if missed:
        kind, event_id, text = EventKind.SYSTEM_ALERT, f"timer-missed:{fire.job_id}:", _missed_text
    else:
        kind, event_id, text = EventKind.TIMER_TRIGGER, "timer:" + fire.job_id + ":", _fired_text
    event = Event.parse(
        {
            "id": event_id + iso_utc(fire.run_time),
            "kind": kind,
            "source": source,
            "channel": "timer",
            "content": {
                "text": text(body, late, grace_s),
                "subject": f"timer {label} ({fire.job_id}), scheduled for {iso_utc(fire.run_time)}",
                "data": data,
            },
            "context": {"related_task_id": fire.job_id},
            "session": body["session"],
            "occurred_at": fire.run_time,
        }
    )
    return event, missed


def _fired_text(body: dict[str, Any], late: timedelta, grace_s: float) -> str:
    text = str(body["message"])
    folded = int(body.get("coalesced_runs") or 0)
    if folded:
        text += (
            f"\n(Fired once for {folded + 1} runs that fell due while the daemon was not running.)"
        )
    return text


def _missed_text(body: dict[str, Any], late: timedelta, grace_s: float) -> str:
    nxt = body.get("next_fire_time")
    return (
        f"A timer run was missed: the daemon was not running when it fell due, and it is "
        f"now {late.total_seconds():.0f} s late, beyond the {grace_s:g} s grace window, so "
        "it was skipped. "
        + (f"It fires next at {nxt}. " if nxt else "It will not fire again. ")
        + f"Its message was: {body['message']}"
    )


async def deliver(fire: PendingFire, submit: Submit, grace_s: float) -> Outcome:
    """Commit the run's event; calling it twice for one run stores one event."""
    now = datetime.now(UTC)
    event, missed = build_event(fire, now, grace_s)
    result = await submit(event)
    return Outcome(result, missed, (now - fire.run_time).total_seconds())


class TimerExecutor(BaseExecutor):  # type: ignore[misc]
    """Hands each due run to a task in the timers' task group."""

    def __init__(
        self,
        store: TimerJobStore,
        group: TaskGroup | None,
        submit: Submit,
        grace_s: float,
        on_outcome: Callable[[PendingFire, Outcome], None] | None = None,
    ) -> None:
        super().__init__()
        self._store = store
        self._group = group  # None until the timers component runs and attaches its group
        self._submit = submit
        self._grace_s = grace_s
        self.on_outcome = on_outcome  # called after each commit (metrics, benchmarks)

    def attach(self, group: TaskGroup) -> None:
        """The task group that owns each fire from now on (the component's)."""
        self._group = group

    def _do_submit_job(self, job: Job, run_times: list[datetime]) -> None:
        run_time = run_times[-1]  # coalesced: one run stands for all that fell due
        fire = PendingFire(job.id, run_time, fire_body(job, run_time, datetime.now(UTC)))
        self._store.record_fire(fire)  # queued before APScheduler's own update of the job
        if self._group is None:  # the scheduler is resumed only after attach(); a bug if reached
            raise RuntimeError("a timer fired before the timers component runs")
        self._group.start_soon(self._run, fire, name=f"timer fire {job.id}")

    async def _run(self, fire: PendingFire) -> None:
        # The task inherits the context of whoever last woke the scheduler (a tool
        # call, say); its log fields would be wrong here.
        structlog.contextvars.clear_contextvars()
        try:
            await self.fire(fire)
        finally:
            self._run_job_success(fire.job_id, [])

    async def fire(self, fire: PendingFire, *, replayed: bool = False) -> Outcome | None:
        """Deliver one run; on failure it stays in flight and is retried at the next start."""
        if replayed:
            self._store.record_fire(fire, replayed=True)  # stored; this counts it in flight
        if not await self._store.claim_fire(fire):
            self._store.fire_ended(fire, delivered=False)
            log.info("timer run fired by another daemon", timer_id=fire.job_id)
            return None
        outcome = None
        try:
            outcome = await deliver(fire, self._submit, self._grace_s)
        except DaemonUnavailable as exc:
            log.warning("timer run not delivered; retried at next start",
                        timer_id=fire.job_id, error=str(exc))  # fmt: skip
            return None
        finally:
            self._store.fire_ended(fire, delivered=outcome is not None)
        log.info(
            "timer missed" if outcome.missed else "timer fired",
            timer_id=fire.job_id,
            session=fire.body["session"],
            late_s=round(outcome.late_s, 4),
            duplicate=outcome.result.duplicate,
        )
        if self.on_outcome is not None:
            self.on_outcome(fire, outcome)
        return outcome
