"""When the next beat is: from the start of each day's active hours, every N minutes
until they end (a window may run over midnight, e.g. 22:00-06:00); outside them, the
first beat of the next window. Steps are real minutes, so a DST change moves no beat."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from wakeful.sources.heartbeat.config import HeartbeatSection


def active(moment: datetime, section: HeartbeatSection, zone: ZoneInfo) -> bool:
    """Whether ``moment`` is inside the active hours (yesterday's window may still run)."""
    day = moment.astimezone(zone).date()
    spans = (windows(day + timedelta(days=k), section, zone) for k in (-1, 0))
    return any(opens <= moment < closes for opens, closes in spans)


def windows(day: date, section: HeartbeatSection, zone: ZoneInfo) -> tuple[datetime, datetime]:
    """The active hours that start on ``day`` (local), as aware datetimes."""
    start, end = section.window()
    opens = datetime.combine(day, start, tzinfo=zone)
    closes_on = day if end is not None and end > start else day + timedelta(days=1)
    closes = datetime.combine(closes_on, end or time(0), tzinfo=zone)
    return opens, closes


def next_beat(now: datetime, section: HeartbeatSection, zone: ZoneInfo) -> datetime:
    """The first beat after ``now`` (UTC)."""
    step = timedelta(minutes=section.every_minutes)
    today = now.astimezone(zone).date()
    for offset in (-1, 0, 1, 2):  # yesterday's window may run past midnight
        opens, closes = windows(today + timedelta(days=offset), section, zone)
        opens_utc, closes_utc = opens.astimezone(UTC), closes.astimezone(UTC)
        if closes_utc <= now:
            continue
        beat = opens_utc
        if beat <= now:
            beat += step * ((now - opens_utc) // step + 1)
        if beat < closes_utc:
            return beat
    return now + step  # not reached: every day has a window
