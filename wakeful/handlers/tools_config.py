"""The ``[tools]`` section: when tool schemas are deferred (see tool_surface.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from wakeful.daemon.config_base import Section

DeferMode = Literal["auto", "always", "never"]
DEFAULT_DEFER_ABOVE = 30


class ToolsSection(Section):
    """Which tool schemas every model request carries."""

    defer: DeferMode = Field(
        default="auto",
        examples=["auto"],
        description=(
            "auto: above defer_above registered tools, only the resident ones (files, shell, "
            "tasks, talking to the user, search_tools) are sent with schemas and the rest are "
            "named in the system prompt; always: defer at any count; never: send every schema."
        ),
    )
    defer_above: int = Field(
        default=DEFAULT_DEFER_ABOVE,
        ge=0,
        le=10_000,
        examples=[DEFAULT_DEFER_ABOVE],
        description='With defer = "auto": how many registered tools are still sent in full.',
    )
