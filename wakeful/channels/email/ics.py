"""iCalendar (.ics) parsing: invitations in mail and the owner's calendar files.

Times are made timezone-aware (floating times are read as UTC) so that
conflicts can be compared; all-day events span their whole dates. Recurring
events (RRULE) are expanded inside the window asked for; EXDATE and
RECURRENCE-ID overrides are not applied (basic support, said in the tools).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from dateutil.rrule import rrulestr
from icalendar import Calendar

MAX_OCCURRENCES = 1000


class CalendarError(ValueError):
    """A calendar file or part cannot be read; the message says which and why."""


@dataclass(frozen=True)
class CalendarEntry:
    summary: str
    start: datetime
    end: datetime
    uid: str = ""
    location: str = ""
    organizer: str = ""
    all_day: bool = False
    recurring: bool = False

    def overlaps(self, start: datetime, end: datetime) -> bool:
        return self.start < end and start < self.end

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["start"], data["end"] = self.start.isoformat(), self.end.isoformat()
        return data


def _aware(value: date | datetime) -> tuple[datetime, bool]:
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC), False
    return datetime(value.year, value.month, value.day, tzinfo=UTC), True


def _address(value: Any) -> str:
    text = str(value or "")
    return text[7:] if text.lower().startswith("mailto:") else text


def _base_entry(component: Any) -> CalendarEntry | None:
    if component.get("DTSTART") is None:
        return None
    start, all_day = _aware(component.decoded("DTSTART"))
    if component.get("DTEND") is not None:
        end, _ = _aware(component.decoded("DTEND"))
    elif component.get("DURATION") is not None:
        end = start + component.decoded("DURATION")
    else:
        end = start + (timedelta(days=1) if all_day else timedelta(0))
    return CalendarEntry(
        summary=str(component.get("SUMMARY", "")),
        start=start,
        end=end,
        uid=str(component.get("UID", "")),
        location=str(component.get("LOCATION", "")),
        organizer=_address(component.get("ORGANIZER")),
        all_day=all_day,
        recurring=component.get("RRULE") is not None,
    )


def parse_calendar(data: bytes | str, where: str) -> Calendar:
    try:
        return Calendar.from_ical(data)
    except ValueError as exc:
        raise CalendarError(f"{where} is not valid iCalendar data: {exc}") from None


def base_entries(calendar: Calendar) -> Iterator[tuple[CalendarEntry, Any]]:
    for component in calendar.walk("VEVENT"):
        entry = _base_entry(component)
        if entry is not None:
            yield entry, component


def expand(
    entry: CalendarEntry, component: Any, start: datetime, end: datetime
) -> Iterator[CalendarEntry]:
    """The entry's occurrences that overlap [start, end)."""
    if not entry.recurring:
        if entry.overlaps(start, end):
            yield entry
        return
    duration = entry.end - entry.start
    rule = rrulestr(component.get("RRULE").to_ical().decode(), dtstart=entry.start)
    for count, occurrence in enumerate(rule):
        if count >= MAX_OCCURRENCES or occurrence >= end:
            return
        if occurrence + duration > start:
            yield replace(entry, start=occurrence, end=occurrence + duration)


def calendar_files(path: Path) -> list[Path]:
    path = path.expanduser()
    if path.is_dir():
        return sorted(path.rglob("*.ics"))
    if path.is_file():
        return [path]
    raise CalendarError(f"email.calendar_path {path} is neither an .ics file nor a directory")


def load_entries(path: Path, start: datetime, end: datetime) -> list[CalendarEntry]:
    """Every event occurrence in the calendar file(s) at ``path`` overlapping [start, end)."""
    found: list[CalendarEntry] = []
    for file in calendar_files(path):
        calendar = parse_calendar(file.read_bytes(), str(file))
        for entry, component in base_entries(calendar):
            found.extend(expand(entry, component, start, end))
    return sorted(found, key=lambda e: (e.start, e.summary))


def parse_invitation(data: bytes) -> dict[str, Any] | None:
    """The first event of a mail's text/calendar part, with its METHOD (REQUEST, CANCEL...)."""
    try:
        calendar = parse_calendar(data, "the invitation")
    except CalendarError:
        return None
    for entry, _ in base_entries(calendar):
        return {"method": str(calendar.get("METHOD", "")), **entry.as_dict()}
    return None


def describe(entries: Iterable[CalendarEntry]) -> str:
    lines = []
    for e in entries:
        when = (
            f"{e.start:%Y-%m-%d %H:%M}–{e.end:%H:%M} UTC"
            if not e.all_day
            else f"{e.start:%Y-%m-%d} (all day)"
        )
        extra = f" at {e.location}" if e.location else ""
        lines.append(f"- {when}: {e.summary or '(no title)'}{extra}")
    return "\n".join(lines)
