"""``[system]``: the daemon's own alerts and the owner's silence."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from wakeful.daemon import schedules
from wakeful.daemon.config_base import Section
from wakeful.events import SESSION_PATTERN


class SystemSection(Section):
    """System events: ``system.alert`` for resource pressure and failing components,
    ``user.inactive`` after a silence. Every check is event-driven or runs at most
    once per ``check_interval_s``: an idle daemon is not woken more often.
    A threshold of 0 turns its check off."""

    enabled: bool = Field(default=True, examples=[True])
    # Where alerts go; user.inactive goes to the session that fell silent.
    session: str = Field(default="main", examples=["main"])
    # Disk and memory are measured this often (each measurement wakes the daemon).
    check_interval_s: float = Field(default=60.0, ge=1.0, examples=[60])
    # system.alert when the file system of data_dir has less free space than either.
    disk_free_min_mb: float | None = Field(default=512.0, ge=0, examples=[512])
    disk_free_min_percent: float | None = Field(default=5.0, ge=0, le=100, examples=[5])
    # system.alert when the daemon's resident memory exceeds this.
    rss_max_mb: float | None = Field(default=1024.0, ge=0, examples=[1024])
    # system.alert when the host's MemAvailable (/proc/meminfo) falls below this.
    mem_available_min_mb: float | None = Field(default=200.0, ge=0, examples=[200])
    # A kernel memory-pressure trigger (/proc/pressure/memory, where it exists): woken
    # when tasks stalled on memory this many ms within memory_psi_window_s.
    memory_psi_stall_ms: int | None = Field(default=500, ge=0, examples=[500])
    memory_psi_window_s: float = Field(default=10.0, ge=2.0, le=10.0, examples=[10])
    # system.alert when a session's oldest waiting event is older than this.
    pending_age_max_s: float | None = Field(default=600.0, ge=0, examples=[600])
    # system.alert when a component was restarted this many times within the window.
    component_failures: int = Field(default=3, ge=1, examples=[3])
    component_failure_window_s: float = Field(default=600.0, gt=0, examples=[600])
    # user.inactive after this much silence from the owner in a session ("8h", "30m");
    # off by default: each one wakes the model, which costs a call.
    user_inactive_after: str | None = Field(default=None, examples=["8h"])

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
