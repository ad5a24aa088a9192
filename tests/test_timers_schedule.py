"""Schedule expressions: durations, crontab weekdays, DST, and the errors they give."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from wakeful.kernel.schedules import ScheduleError, cron_trigger, make_schedule, parse_duration

BERLIN = ZoneInfo("Europe/Berlin")


def fire_times(expression: str, start: datetime, count: int) -> list[datetime]:
    """The next `count` fire times of a crontab line in Berlin, as the scheduler walks them."""
    trigger = cron_trigger(expression, BERLIN)
    times: list[datetime] = []
    previous, now = None, start
    for _ in range(count):
        nxt = trigger.get_next_fire_time(previous, now)
        assert nxt is not None
        times.append(nxt)
        previous = now = nxt
    return times


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


def test_daily_cron_keeps_local_time_across_spring_forward() -> None:
    """09:00 Berlin stays 09:00 local when summer time starts (UTC moves 08:00 → 07:00)."""
    times = fire_times("0 9 * * *", utc(2026, 3, 27), 4)
    assert [t.astimezone(UTC) for t in times] == [
        utc(2026, 3, 27, 8),
        utc(2026, 3, 28, 8),
        utc(2026, 3, 29, 7),
        utc(2026, 3, 30, 7),
    ]
    assert {t.astimezone(BERLIN).hour for t in times} == {9}


def test_daily_cron_keeps_local_time_across_fall_back() -> None:
    """09:00 Berlin stays 09:00 local when summer time ends (UTC moves 07:00 → 08:00)."""
    times = fire_times("0 9 * * *", utc(2026, 10, 24), 3)
    assert [t.astimezone(UTC) for t in times] == [
        utc(2026, 10, 24, 7),
        utc(2026, 10, 25, 8),
        utc(2026, 10, 26, 8),
    ]


def test_job_in_repeated_hour_runs_once_when_clocks_go_back() -> None:
    """02:30 happens twice on 2026-10-25 in Berlin; a daily 02:30 job runs once that day."""
    times = fire_times("30 2 * * *", utc(2026, 10, 24), 3)
    assert [t.astimezone(UTC) for t in times] == [
        utc(2026, 10, 24, 0, 30),
        utc(2026, 10, 25, 0, 30),
        utc(2026, 10, 26, 1, 30),
    ]


def test_job_in_skipped_hour_still_runs_that_day() -> None:
    """02:30 does not exist on 2026-03-29 in Berlin; the daily job still runs once that day."""
    times = fire_times("30 2 * * *", utc(2026, 3, 28, 12), 2)
    assert [t.astimezone(UTC) for t in times] == [utc(2026, 3, 29, 1, 30), utc(2026, 3, 30, 0, 30)]


def test_wildcard_hour_job_keeps_every_real_interval_through_fall_back() -> None:
    """Every 30 minutes stays every 30 real minutes through the repeated hour."""
    times = [t.astimezone(UTC) for t in fire_times("*/30 * * * *", utc(2026, 10, 24, 23, 45), 6)]
    gaps = {b - a for a, b in itertools.pairwise(times)}
    assert gaps == {timedelta(minutes=30)}


@pytest.mark.parametrize(
    ("weekday", "names"),
    [("0", "sun"), ("7", "sun"), ("1-5", "mon,tue,wed,thu,fri"), ("5-7", "sun,fri,sat")],
)
def test_crontab_weekday_numbers_mean_what_crontab_means(weekday: str, names: str) -> None:
    """Weekday 0 and 7 are Sunday as in crontab, not Monday as in APScheduler 3."""
    trigger = cron_trigger(f"0 9 * * {weekday}", BERLIN)
    assert f"day_of_week='{names}'" in str(trigger)


def test_sunday_cron_fires_on_sunday() -> None:
    """'0 9 * * 0' fires on a Sunday."""
    (first,) = fire_times("0 9 * * 0", utc(2026, 5, 4), 1)  # a Monday
    assert first.astimezone(BERLIN).strftime("%A %H:%M") == "Sunday 09:00"


def test_durations() -> None:
    """Durations read d/h/m/s in any combination."""
    assert parse_duration("90s") == timedelta(seconds=90)
    assert parse_duration("1h30m") == timedelta(hours=1, minutes=30)
    assert parse_duration("2d") == timedelta(days=2)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"cron": "0 9 * *"}, "has 4 fields, not 5"),
        ({"cron": "0 25 * * *"}, "invalid cron expression"),
        ({"cron": "0 9 * * 9"}, "invalid day of week"),
        ({"after": "soon"}, "cannot read the duration"),
        ({"at": "tomorrow"}, "cannot read the time"),
        ({"at": "2000-01-01T00:00:00Z"}, "is in the past"),
        ({"cron": "0 9 * * *", "timezone": "Mars/Olympus"}, "unknown time zone"),
        ({"after": "1m", "cron": "0 9 * * *"}, "exactly one of"),
        ({}, "exactly one of"),
        ({"interval": "0s"}, "too short"),
        ({"cron": "0 0 30 2 *"}, "never fires"),
    ],
)
def test_bad_schedules_say_what_to_fix(kwargs: dict[str, str], words: str) -> None:
    """Each mistake is refused with a message naming it."""
    with pytest.raises(ScheduleError, match=words):
        make_schedule(**kwargs)


def test_naive_at_is_read_in_the_given_zone() -> None:
    """An ISO time without an offset is local to the timezone argument."""
    schedule = make_schedule(at="2099-07-01T09:00:00", timezone="Europe/Berlin")
    assert schedule.value == "2099-07-01T07:00:00+00:00"
