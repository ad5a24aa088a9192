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

    embeddings_model: str = Field(
        default="",
        examples=["text-embedding-3-small"],
        description="A model of an OpenAI-compatible /embeddings endpoint: memory_search then "
        "ranks by meaning as well as by words (needs the wakeful[embeddings] extra). Empty: "
        "by words only, nothing is sent anywhere.",
    )
    embeddings_base_url: str | None = Field(
        default=None,
        examples=["http://127.0.0.1:11434/v1"],
        description="The embeddings endpoint's URL (default: [llm] base_url, with [llm]'s key).",
    )
    embeddings_per_search: int = Field(
        default=256,
        ge=1,
        le=10000,
        description="The most passages one search embeds that have no vector yet (the rest "
        "at later searches; words rank them meanwhile).",
    )

    @field_validator("embeddings_base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value

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
