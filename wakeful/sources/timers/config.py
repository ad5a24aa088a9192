"""``[scheduler]`` and ``[[timers]]``: timers declared in the config."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from wakeful.kernel import schedules
from wakeful.kernel.config_base import Section, reject_repeated_names
from wakeful.kernel.field_defaults import empty_list
from wakeful.kernel.session_names import SESSION_PATTERN


class SchedulerSection(Section):
    # A run missed while the daemon was down still fires if at most this late.
    misfire_grace_s: float = Field(default=600.0, ge=0, examples=[600])


class TimerConfig(BaseModel):
    """One ``[[timers]]`` entry; kept in the job store under the id ``config:<name>``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$", examples=["daily-summary"])
    cron: str | None = Field(default=None, examples=["0 9 * * 1-5"])
    interval: str | None = Field(default=None, examples=["1h"])
    at: str | None = Field(default=None, examples=["2026-05-01T09:30:00+02:00"])
    timezone: str = Field(default="UTC", examples=["Europe/Berlin"])
    message: str = Field(min_length=1, examples=["Write the daily summary."])
    session: str = Field(default="main", examples=["main"])

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        schedules.parse_zone(value)
        return value

    @field_validator("cron")
    @classmethod
    def _valid_cron(cls, value: str | None) -> str | None:
        if value is not None:
            schedules.cron_trigger(value, schedules.parse_zone("UTC"))
        return value

    @field_validator("interval")
    @classmethod
    def _valid_interval(cls, value: str | None) -> str | None:
        if value is not None:
            schedules.parse_duration(value)
        return value

    @field_validator("at")
    @classmethod
    def _valid_at(cls, value: str | None) -> str | None:
        if value is not None:
            schedules.parse_time(value, schedules.parse_zone("UTC"))
        return value

    @field_validator("session")
    @classmethod
    def _session_name(cls, value: str) -> str:
        if not SESSION_PATTERN.match(value):
            raise ValueError("must be a session name such as 'main' or 'user:alice'")
        return value

    @model_validator(mode="after")
    def _one_schedule(self) -> TimerConfig:
        given = [k for k in ("cron", "interval", "at") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                f"timer {self.name!r} needs exactly one of cron, interval or at "
                f'(got {", ".join(given) or "none"}); e.g. cron = "0 9 * * 1-5"'
            )
        return self

    def schedule(self, *, allow_past: bool = True) -> schedules.Schedule:
        return schedules.make_schedule(
            at=self.at,
            cron=self.cron,
            interval=self.interval,
            timezone=self.timezone,
            allow_past=allow_past,
        )


class TimerSettings(BaseModel):
    scheduler: SchedulerSection = Field(default_factory=SchedulerSection)
    timers: list[TimerConfig] = Field(default_factory=empty_list)

    @field_validator("timers")
    @classmethod
    def _unique_timer_names(cls, timers: list[TimerConfig]) -> list[TimerConfig]:
        reject_repeated_names([timer.name for timer in timers], "timer")
        return timers
