"""The ``[tools]`` section: when tool schemas are deferred (see tool_surface.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from wakeful.kernel.config_base import Section

DeferMode = Literal["auto", "always", "never"]
DEFAULT_DEFER_ABOVE = 30
DEFAULT_DEFER: DeferMode = "always"


class ToolsSection(Section):
    """Which tool schemas every model request carries."""

    defer: DeferMode = Field(
        default=DEFAULT_DEFER,
        examples=[DEFAULT_DEFER],
        description=(
            "always: only the resident tools (read, write and edit a file, run a command, "
            "talk to the user, search_tools) are sent with schemas, the rest are named in "
            "the system prompt and loaded when called or found; auto: the same above "
            "defer_above registered tools, else every schema; never: send every schema."
        ),
    )
    defer_above: int = Field(
        default=DEFAULT_DEFER_ABOVE,
        ge=0,
        le=10_000,
        examples=[DEFAULT_DEFER_ABOVE],
        description='With defer = "auto": how many registered tools are still sent in full.',
    )
