"""The ``[memory]`` section: where the memory files live and how much the prompt shows."""

from __future__ import annotations

from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, Field, field_validator

from wakeful.kernel.config_base import Section


class MemorySection(Section):
    """Long-term memory (docs/memory.md). On by default: MEMORY.md and memory/ under
    data_dir; nothing is written until the model or the owner remembers something."""

    enabled: bool = Field(
        default=True, description="The remember, memory_search and memory_get tools and the digest."
    )
    path: Path | None = Field(
        default=None,
        description="The folder holding MEMORY.md and memory/ (default: data_dir).",
    )
    digest_chars: int = Field(
        default=2000,
        ge=0,
        le=20000,
        description="The most of MEMORY.md every system prompt shows (0: none); the rest is "
        "found with memory_search and memory_get.",
    )
    timezone: str = Field(
        default="UTC", description="The day a daily note is filed under (an IANA time zone)."
    )

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError("must be an IANA time zone such as 'UTC' or 'Europe/Berlin'") from None
        return value

    def folder(self, data_dir: Path) -> Path:
        return (self.path or data_dir).expanduser()


class MemorySettings(BaseModel):
    memory: MemorySection = Field(default_factory=MemorySection)
