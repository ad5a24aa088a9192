"""list_calendar_events and check_calendar_conflicts over the owner's .ics calendar."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
from pydantic import Field

from wakeful.channels.email.ics import CalendarEntry, CalendarError, describe, load_entries
from wakeful.core.effects import Effect
from wakeful.core.tool import ToolArgs, ToolContext, ToolOutput

_TIME_HELP = "ISO 8601 time, e.g. 2026-03-02T14:00:00+00:00 (no zone: UTC)"


def _when(value: str, name: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise CalendarError(f"{name} {value!r} is not an {_TIME_HELP}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


async def _entries(path: Path, start: datetime, end: datetime) -> list[CalendarEntry]:
    if end <= start:
        raise CalendarError("end must be after start")
    return await anyio.to_thread.run_sync(load_entries, path, start, end)


class ListCalendarEvents:
    name = "list_calendar_events"
    group = "calendar"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "List the owner's calendar events overlapping a time window (default: the next 7 "
        "days), with times in UTC. Recurring events are expanded (basic RRULE support). "
        'Example: {"start": "2026-03-02T00:00:00Z", "end": "2026-03-09T00:00:00Z"}'
    )

    class Args(ToolArgs):
        start: str | None = Field(default=None, description=f"window start; {_TIME_HELP}")
        end: str | None = Field(default=None, description=f"window end; {_TIME_HELP}")

    read_only = True
    effect = Effect.READ
    timeout_s: float | None = 30.0

    def __init__(self, path: Path) -> None:
        self._path = path

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        try:
            start = _when(a.start, "start") if a.start else datetime.now(UTC)
            end = _when(a.end, "end") if a.end else start + timedelta(days=7)
            entries = await _entries(self._path, start, end)
        except (CalendarError, OSError) as exc:
            return ToolOutput(str(exc), is_error=True)
        window = f"{start.isoformat()} to {end.isoformat()}"
        if not entries:
            return ToolOutput(f"no calendar events from {window}", data={"events": []})
        return ToolOutput(
            f"{len(entries)} event(s) from {window}:\n{describe(entries)}",
            data={"events": [e.as_dict() for e in entries]},
        )


class CheckCalendarConflicts:
    name = "check_calendar_conflicts"
    group = "calendar"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "Check whether a proposed time slot (e.g. a meeting invitation's start and end) "
        "overlaps anything in the owner's calendar. Returns 'free' or the conflicting events. "
        'Example: {"start": "2026-03-02T14:00:00Z", "end": "2026-03-02T15:00:00Z"}'
    )

    class Args(ToolArgs):
        start: str = Field(description=f"slot start; {_TIME_HELP}")
        end: str = Field(description=f"slot end; {_TIME_HELP}")

    read_only = True
    effect = Effect.READ
    timeout_s: float | None = 30.0

    def __init__(self, path: Path) -> None:
        self._path = path

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        try:
            start, end = _when(a.start, "start"), _when(a.end, "end")
            conflicts = await _entries(self._path, start, end)
        except (CalendarError, OSError) as exc:
            return ToolOutput(str(exc), is_error=True)
        slot = f"{start.isoformat()} to {end.isoformat()}"
        if not conflicts:
            return ToolOutput(f"free: nothing in the calendar overlaps {slot}", data={"free": True})
        return ToolOutput(
            f"conflict: {len(conflicts)} event(s) overlap {slot}:\n{describe(conflicts)}",
            data={"free": False, "conflicts": [e.as_dict() for e in conflicts]},
        )
