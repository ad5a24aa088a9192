"""Schedule expressions: one-shot times, durations, intervals and crontab lines.

Parsed in one place for the config file (``[[timers]]``) and the timer tools,
so both refuse the same mistakes with the same words. Every error is a
:class:`ScheduleError` saying what was wrong and giving a good example.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger

ScheduleKind = Literal["at", "cron", "interval"]

_DURATION = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
_DURATION_EXAMPLE = "'90s', '15m', '2h' or '1h30m'"
# Standard crontab numbers weekdays from Sunday = 0 (and 7); APScheduler 3
# numbers them from Monday = 0 (its documented "historical mistake", issue
# 286). Weekdays are therefore handed over as names, which both agree on.
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_MIN_INTERVAL = timedelta(seconds=1)


class ScheduleError(ValueError):
    """A schedule expression cannot be used; the message says how to fix it."""


def parse_zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleError(
            f"unknown time zone {name!r}; use an IANA name such as 'UTC', "
            "'Europe/Berlin' or 'America/New_York'"
        ) from None


def parse_duration(text: str) -> timedelta:
    """``90s``, ``15m``, ``2h``, ``1d``, or combinations such as ``1h30m``."""
    match = _DURATION.match(text.replace(" ", "").lower())
    if not text.strip() or match is None or not any(match.groups()):
        raise ScheduleError(
            f"cannot read the duration {text!r}; write a number with a unit "
            f"(d, h, m, s), e.g. {_DURATION_EXAMPLE}"
        )
    days, hours, minutes, seconds = (int(g or 0) for g in match.groups())
    return timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)


def parse_time(text: str, zone: tzinfo) -> datetime:
    """An ISO 8601 time; without an offset it is read in ``zone``."""
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ScheduleError(
            f"cannot read the time {text!r}; use ISO 8601 such as "
            "'2026-05-01T09:30:00+02:00' (or without the offset, read in the given timezone)"
        ) from None
    return value if value.tzinfo else value.replace(tzinfo=zone)


class WallClockCronTrigger(CronTrigger):  # type: ignore[misc]
    """A cron trigger that runs a fixed-time job once when the clocks go back.

    APScheduler 3 fires ``30 2 * * *`` twice on the night a zone leaves
    summer time (02:30 happens twice). Like Vixie cron, a job with fixed
    hours skips a run whose wall-clock time is not after its previous run;
    jobs with a wildcard hour (``*/30 * * * *``) keep every real interval.
    """

    def get_next_fire_time(
        self, previous_fire_time: datetime | None, now: datetime
    ) -> datetime | None:
        candidate: datetime | None = super().get_next_fire_time(previous_fire_time, now)
        if previous_fire_time is None or self._hour_is_wildcard():
            return candidate
        last_wall = previous_fire_time.astimezone(self.timezone).replace(tzinfo=None)
        while candidate is not None and candidate.replace(tzinfo=None) <= last_wall:
            candidate = super().get_next_fire_time(candidate, candidate)
        return candidate

    def _hour_is_wildcard(self) -> bool:
        hour = next(f for f in self.fields if f.name == "hour")
        return str(hour).startswith("*")


def cron_trigger(expression: str, zone: tzinfo) -> CronTrigger:
    """A trigger for a five-field crontab line, weekdays numbered as crontab does."""
    fields = expression.split()
    if len(fields) != 5:
        raise ScheduleError(
            f"the cron expression {expression!r} has {len(fields)} fields, not 5; write "
            "'minute hour day-of-month month day-of-week', e.g. '0 9 * * 1-5' for 09:00 on "
            "weekdays"
        )
    minute, hour, day, month, weekday = fields
    try:
        return WallClockCronTrigger(
            minute=minute,
            hour=hour,
            day=day,
            month=month,
            day_of_week=_weekday_names(weekday),
            timezone=zone,
        )
    except ValueError as exc:
        raise ScheduleError(
            f"invalid cron expression {expression!r}: {exc}; e.g. '30 7 * * *' is 07:30 daily"
        ) from None


def _weekday_names(field: str) -> str:
    if field == "*" or not any(ch.isdigit() for ch in field):
        return field
    days: set[int] = set()
    for part in field.split(","):
        days |= _weekday_numbers(part)
    return ",".join(_WEEKDAYS[d] for d in sorted(days))


def _weekday_numbers(part: str) -> set[int]:
    span, slash, step_text = part.partition("/")
    if slash and not (step_text.isdigit() and int(step_text) > 0):
        raise ScheduleError(f"invalid day-of-week step {step_text!r}; e.g. '*/2'")
    step = int(step_text) if slash else 1
    if span == "*":
        low, high = 0, 6
    else:
        first, dash, last = span.partition("-")
        low = _weekday_number(first)
        high = _weekday_number(last) if dash else (7 if slash else low)
    if high < low:
        raise ScheduleError(f"invalid day-of-week range {span!r}; write it low-high, e.g. '1-5'")
    return {day % 7 for day in range(low, high + 1, step)}


def _weekday_number(text: str) -> int:
    """0-7 as crontab writes them (7 kept as 7 so '5-7' is Friday to Sunday)."""
    text = text.strip().lower()
    if text.isdigit() and 0 <= int(text) <= 7:
        return int(text)
    if text[:3] in _WEEKDAYS:
        return _WEEKDAYS.index(text[:3])
    raise ScheduleError(
        f"invalid day of week {text!r}; use 0-7 (0 and 7 are Sunday) or names such as 'mon'"
    )


@dataclass(frozen=True)
class Schedule:
    """When a timer fires, in the words it was given (stored with the job)."""

    kind: ScheduleKind
    value: str  # ISO time (UTC) for "at", the crontab line, or the interval duration
    timezone: str = "UTC"

    def trigger(self) -> DateTrigger | CronTrigger | IntervalTrigger:
        zone = parse_zone(self.timezone)
        if self.kind == "at":
            return DateTrigger(run_date=datetime.fromisoformat(self.value), timezone=zone)
        if self.kind == "cron":
            return cron_trigger(self.value, zone)
        seconds = parse_duration(self.value).total_seconds()
        return IntervalTrigger(seconds=seconds, timezone=zone)

    def describe(self) -> str:
        if self.kind == "at":
            return f"once at {self.value}"
        if self.kind == "cron":
            return f"cron '{self.value}' ({self.timezone})"
        return f"every {self.value}"

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "value": self.value, "timezone": self.timezone}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Schedule:
        return cls(kind=data["kind"], value=str(data["value"]), timezone=str(data["timezone"]))


def make_schedule(
    *,
    at: str | None = None,
    after: str | None = None,
    cron: str | None = None,
    interval: str | None = None,
    timezone: str | None = None,
    now: datetime | None = None,
    allow_past: bool = False,
) -> Schedule:
    """Validate exactly one way of saying when, and return it in stored form."""
    given = [name for name, v in (("at", at), ("after", after), ("cron", cron),
                                  ("interval", interval)) if v is not None]  # fmt: skip
    if len(given) != 1:
        which = ", ".join(given) if given else "none"
        raise ScheduleError(
            f"give exactly one of at, after, cron or interval (got {which}); e.g. "
            "after='15m', at='2026-05-01T09:30:00+02:00', cron='0 9 * * 1-5' or interval='1h'"
        )
    zone_name = timezone or "UTC"
    zone = parse_zone(zone_name)
    now = now or datetime.now(UTC)
    if after is not None:
        return _one_shot(now + parse_duration(after), zone_name)
    if at is not None:
        when = parse_time(at, zone)
        if when <= now and not allow_past:
            raise ScheduleError(
                f"the time {at!r} is in the past (now is {now.isoformat(timespec='seconds')}); "
                "give a future time, or use after='15m' for a delay"
            )
        return _one_shot(when, zone_name)
    if cron is not None:
        if cron_trigger(cron, zone).get_next_fire_time(None, now) is None:
            raise ScheduleError(f"the cron expression {cron!r} never fires; check day and month")
        return Schedule("cron", " ".join(cron.split()), zone_name)
    assert interval is not None
    if parse_duration(interval) < _MIN_INTERVAL:
        raise ScheduleError(f"the interval {interval!r} is too short; the minimum is '1s'")
    return Schedule("interval", interval.replace(" ", "").lower(), zone_name)


def _one_shot(when: datetime, zone_name: str) -> Schedule:
    return Schedule("at", when.astimezone(UTC).isoformat(), zone_name)
