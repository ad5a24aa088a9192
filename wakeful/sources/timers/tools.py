"""set_timer, cancel_timer, list_timers: the agent's side of the timer service."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import anyio
from pydantic import Field

from wakeful.core.effects import Effect
from wakeful.core.tool import ToolArgs, ToolContext, ToolOutput
from wakeful.kernel.schedules import ScheduleError, make_schedule
from wakeful.sources.timers.service import TimerRequest, TimerService

_MAX_MESSAGE = 4000


class SetTimer:
    name = "set_timer"
    group = "timers"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "Set a timer that wakes you later. Returns the timer id and its next fire time at "
        "once; when it fires, a separate timer.trigger event carrying your message arrives "
        "in this session (it does not interrupt you). Give exactly one of: after (a delay "
        "such as '90s', '15m', '2h', '1h30m'), at (an ISO 8601 time, e.g. "
        "'2026-05-01T09:30:00+02:00'; without an offset it is read in timezone), cron (a "
        "five-field crontab line for a recurring timer, e.g. '0 9 * * 1-5', read in "
        "timezone) or interval (a recurring delay, e.g. '30m'). Timers survive restarts; "
        "a run missed while the daemon was down fires once if it is only a little late. "
        'Example: {"after": "15m", "message": "check whether the build finished"}'
    )

    class Args(ToolArgs):
        message: str = Field(
            min_length=1,
            max_length=_MAX_MESSAGE,
            description="what you want to be reminded of when it fires",
        )
        after: str | None = Field(default=None, description="one-shot delay, e.g. '15m'")
        at: str | None = Field(default=None, description="one-shot ISO 8601 time")
        cron: str | None = Field(default=None, description="recurring crontab line")
        interval: str | None = Field(default=None, description="recurring delay, e.g. '1h'")
        timezone: str | None = Field(
            default=None, description="IANA zone for cron and for at without offset; UTC if omitted"
        )
        name: str | None = Field(default=None, max_length=64, description="a short label")

    read_only = False
    effect = Effect.CONTROL
    timeout_s: float | None = 10.0

    def __init__(self, service: TimerService) -> None:
        self._service = service

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        try:
            schedule = make_schedule(
                at=a.at, after=a.after, cron=a.cron, interval=a.interval, timezone=a.timezone
            )
        except ScheduleError as exc:
            return ToolOutput(f"set_timer: {exc}", is_error=True)
        tainted_by = ctx.taint.summary() if ctx.taint else None
        request = TimerRequest(schedule, a.message, ctx.session, a.name or "", tainted_by)
        timer = self._service.add(request)
        await self._service.store.flush(durable=True)  # stored before we promise it
        text = (
            f"timer {timer['timer_id']} set ({timer['schedule']}); next fire at "
            f"{timer['next_fire_time']}{_from_now(timer['next_fire_time'])}. A timer.trigger "
            "event with your message will arrive then; cancel it with cancel_timer."
        )
        return ToolOutput(text, data={"timer": timer})


class CancelTimer:
    name = "cancel_timer"
    group = "timers"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "Cancel a timer of this session by its id (from set_timer or list_timers). It will "
        "not fire again; a run already delivered is not taken back. "
        'Example: {"timer_id": "t-3f2a9c01be"}'
    )

    class Args(ToolArgs):
        timer_id: str = Field(min_length=1, description="the id set_timer returned")

    read_only = False
    effect = Effect.CONTROL
    timeout_s: float | None = 10.0

    def __init__(self, service: TimerService) -> None:
        self._service = service

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        job = self._service.get(a.timer_id)
        if job is None or job.kwargs["session"] != ctx.session:
            known = [t["timer_id"] for t in self._service.timers(ctx.session)]
            listing = ", ".join(known) or "(none - this session has no timers)"
            return ToolOutput(
                f"cancel_timer: no timer {a.timer_id!r} in this session (it may have fired "
                f"already, if it was one-shot); this session's timers are: {listing}",
                is_error=True,
            )
        timer = self._service.cancel(a.timer_id)
        await self._service.store.flush(durable=True)
        note = ""
        if a.timer_id.startswith("config:"):
            note = " It is declared in the config file and returns at the next restart."
        return ToolOutput(f"timer {a.timer_id} cancelled.{note}", data={"timer": timer})


class ListTimers:
    name = "list_timers"
    group = "timers"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "List this session's active timers: id, schedule, next fire time and message. "
        "It only reads. Example: {}"
    )

    class Args(ToolArgs):
        pass  # no arguments (a docstring here would become the schema's description)

    read_only = True
    effect = Effect.READ
    timeout_s: float | None = 5.0

    def __init__(self, service: TimerService) -> None:
        self._service = service

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        await anyio.lowlevel.checkpoint()
        timers = self._service.timers(ctx.session)
        if not timers:
            return ToolOutput("no active timers in this session", data={"timers": []})
        shown = [
            {k: t[k] for k in ("timer_id", "name", "schedule", "next_fire_time", "message")}
            for t in timers
        ]
        text = json.dumps(shown, indent=2, ensure_ascii=False)
        return ToolOutput(text, data={"timers": shown})


def _from_now(iso: str | None) -> str:
    if not iso:
        return ""
    seconds = (datetime.fromisoformat(iso) - datetime.now(UTC)).total_seconds()
    return f" (in {seconds:.0f} s)" if seconds < 120 else f" (in {seconds / 60:.0f} min)"
