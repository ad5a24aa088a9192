"""``[shell]``: background shell tasks."""

from __future__ import annotations

from pydantic import BaseModel, Field

from wakeful.kernel.config_base import Section


class ShellSection(Section):
    """Background shell tasks (start_shell / monitor_shell)."""

    output_events_per_window: int = Field(default=5, ge=1, examples=[5])
    output_window_s: float = Field(default=10.0, gt=0, examples=[10])
    memory_lines: int = Field(default=200, ge=10, examples=[200])
    # Records and output files of finished, reported tasks are deleted after this.
    retain_days: float = Field(default=7.0, gt=0, examples=[7])


class ShellSettings(BaseModel):
    shell: ShellSection = Field(default_factory=ShellSection)
