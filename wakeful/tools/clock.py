"""get_time: the current date and time in a time zone."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field

from wakeful.core.effects import Effect
from wakeful.core.tool import ToolArgs, ToolContext, ToolOutput


def _utc_now() -> datetime:
    return datetime.now(UTC)


class GetTime:
    name = "get_time"
    group = "time"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "Get the current date, time and weekday, in UTC or in an IANA time zone such as "
        "'Europe/Berlin' or 'America/New_York'. Use it whenever the answer depends on the "
        "current time; do not guess the time from earlier messages. It does not convert "
        "other times or know the user's zone unless you pass it. "
        'Example: {"timezone": "Asia/Tokyo"}'
    )

    class Args(ToolArgs):
        timezone: str | None = Field(default=None, description="IANA time zone name; omit for UTC")

    read_only = True
    effect = Effect.READ
    timeout_s: float | None = 5.0

    def __init__(self, *, now: Callable[[], datetime] = _utc_now) -> None:
        self._now = now  # injectable so tests can fix the clock

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        zone_name = a.timezone or "UTC"
        try:
            zone = ZoneInfo(zone_name)
        except (ZoneInfoNotFoundError, ValueError):
            return ToolOutput(
                f"unknown time zone {zone_name!r}; use an IANA name such as 'UTC', "
                "'Europe/London', 'America/Los_Angeles' or 'Asia/Shanghai'.",
                is_error=True,
            )
        local = self._now().astimezone(zone)
        text = (
            f"{local:%A, %Y-%m-%d %H:%M:%S} {local.tzname()} "
            f"(UTC{local:%z}, time zone {zone_name}); ISO 8601: {local.isoformat()}"
        )
        return ToolOutput(text, data={"iso": local.isoformat(), "timezone": zone_name})
