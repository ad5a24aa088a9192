"""``[system]``: the daemon's own alerts and the owner's silence."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from wakeful.kernel import schedules
from wakeful.kernel.config_base import Section
from wakeful.kernel.session_names import SESSION_PATTERN


class SystemSection(Section):
    """System events: alerts about the daemon itself, and `user.inactive` (docs/system-events.md).

    Every check is event-driven or runs at most once per ``check_interval_s``, so an
    idle daemon is not woken more often. A threshold of 0 turns its check off.
    """

    enabled: bool = Field(
        default=True,
        description="false: no system.alert and no user.inactive (process.timeout stays).",
        examples=[True],
    )
    session: str = Field(
        default="main",
        description="The session alerts go to (user.inactive goes to the silent session).",
        examples=["main"],
    )
    check_interval_s: float = Field(
        default=60.0,
        ge=1.0,
        description="How often disk and memory are measured; each measurement wakes the daemon.",
        examples=[60],
    )
    disk_free_min_mb: float | None = Field(
        default=512.0,
        ge=0,
        description="system.alert when the data directory's file system has less free space.",
        examples=[512],
    )
    disk_free_min_percent: float | None = Field(
        default=5.0,
        ge=0,
        le=100,
        description="The same, as a share of the file system's size.",
        examples=[5],
    )
    rss_max_mb: float | None = Field(
        default=1024.0,
        ge=0,
        description="system.alert when the daemon's resident memory (RSS) is over this.",
        examples=[1024],
    )
    mem_available_min_mb: float | None = Field(
        default=200.0,
        ge=0,
        description="system.alert when the host's MemAvailable (/proc/meminfo) is under this.",
        examples=[200],
    )
    memory_psi_stall_ms: int | None = Field(
        default=500,
        ge=0,
        description="Where the kernel has PSI (/proc/pressure/memory): a trigger wakes the "
        "memory check at once when tasks stalled on memory this long within "
        "memory_psi_window_s.",
        examples=[500],
    )
    memory_psi_window_s: float = Field(
        default=10.0,
        ge=2.0,
        le=10.0,
        description="The trigger's window (the kernel allows 2 to 10 s).",
        examples=[10],
    )
    pending_age_max_s: float | None = Field(
        default=600.0,
        ge=0,
        description="system.alert when a session's oldest waiting event is older than this.",
        examples=[600],
    )
    component_failures: int = Field(
        default=3,
        ge=1,
        description="system.alert when a component was restarted this many times within "
        "component_failure_window_s.",
        examples=[3],
    )
    component_failure_window_s: float = Field(
        default=600.0,
        gt=0,
        description="The window of component_failures; the alert ends after one without failures.",
        examples=[600],
    )
    user_inactive_after: str | None = Field(
        default=None,
        description="user.inactive after this much silence from the user in a session "
        "('8h', '30m'), once per silence; unset: off, since each one costs a model call.",
        examples=["8h"],
    )

    @field_validator("session")
    @classmethod
    def _session_name(cls, value: str) -> str:
        if not SESSION_PATTERN.match(value):
            raise ValueError("must be a session name such as 'main' or 'user:alice'")
        return value

    @field_validator("user_inactive_after")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        if value is not None and schedules.parse_duration(value).total_seconds() < 1:
            raise ValueError("must be at least 1 s, e.g. '8h' or '30m'")
        return value

    def user_inactive_after_s(self) -> float | None:
        if self.user_inactive_after is None:
            return None
        return schedules.parse_duration(self.user_inactive_after).total_seconds()


class SystemSettings(BaseModel):
    system: SystemSection = Field(default_factory=SystemSection)
