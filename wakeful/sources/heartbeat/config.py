"""The ``[heartbeat]`` section: how often, when, and in which session it checks in."""

from __future__ import annotations

import re
from datetime import time
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, Field, field_validator

from wakeful.kernel.config_base import Section
from wakeful.kernel.session_names import SESSION_RULE, is_session_name

_HOURS = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-4]):([0-5]\d)$")


class HeartbeatSection(Section):
    """Periodic check-ins (docs/heartbeat.md). Off by default. Each beat runs cheap checks
    without the model; only what they find is handed to the model, in one event."""

    enabled: bool = Field(default=False, description="Check in every every_minutes.")
    every_minutes: int = Field(
        default=30, ge=1, le=24 * 60, description="Minutes between two beats."
    )
    active_hours: str = Field(
        default="00:00-24:00",
        examples=["08:00-22:00"],
        description="When beats run, HH:MM-HH:MM in timezone; what is found outside "
        "waits for the first beat inside.",
    )
    timezone: str = Field(default="UTC", description="The zone of active_hours (IANA).")
    session: str = Field(
        default="heartbeat", description="The session the model checks in from (its own)."
    )
    checklist: str = Field(
        default="HEARTBEAT.md",
        description="A checklist for the model, in the workspace (read only when a check "
        "found something; a missing file is no checklist).",
    )
    approval_waiting_minutes: int = Field(
        default=60, ge=1, description="An approval waiting longer than this is a finding."
    )

    @field_validator("active_hours")
    @classmethod
    def _hours(cls, value: str) -> str:
        if not _HOURS.match(value):
            raise ValueError('must be HH:MM-HH:MM, e.g. "08:00-22:00"')
        return value

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError("must be an IANA time zone such as 'UTC' or 'Europe/Berlin'") from None
        return value

    @field_validator("session")
    @classmethod
    def _session(cls, value: str) -> str:
        if not is_session_name(value):
            raise ValueError(f"must be {SESSION_RULE}")
        return value

    def window(self) -> tuple[time, time | None]:
        """Start and end of the active hours (end None: until midnight)."""
        found = _HOURS.match(self.active_hours)
        assert found is not None
        h1, m1, h2, m2 = (int(g) for g in found.groups())
        return time(h1, m1), None if h2 == 24 else time(h2, m2)


class HeartbeatSettings(BaseModel):
    heartbeat: HeartbeatSection = Field(default_factory=HeartbeatSection)
