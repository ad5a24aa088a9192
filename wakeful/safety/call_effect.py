"""What a held call would do, in full, for the person asked to approve it.

An approval that shows ``{"draft_id": "draft-…"}`` asks the owner to approve
what they cannot see. So the call's **effect** is resolved by the tool that
knows it (``describe_effect``: the mail's recipients, subject and body; the
whole command and its directory; the path and a diff; the URL) when the
approval is filed, and every view shows that text. A tool without a
description shows its arguments in full, pretty-printed: never cut here (a
view that must be short says so itself, see assembly.approval_notice).
"""

from __future__ import annotations

import json
from typing import Any

import structlog
from pydantic import BaseModel

from wakeful.core.tool import Tool, ToolContext

log = structlog.get_logger(__name__)


async def effect_of_call(tool: Tool, args: BaseModel, raw_arguments: str, ctx: ToolContext) -> str:
    describe = getattr(tool, "describe_effect", None)
    if describe is not None:
        try:
            described: str = await describe(args, ctx)
            return described
        except Exception:  # the approval still shows the arguments in full
            log.exception("tool could not describe its effect", tool=tool.name)
    return f"{tool.name} with these arguments:\n{arguments_in_full(raw_arguments)}"


def arguments_in_full(raw_arguments: str) -> str:
    """The arguments as the model sent them, laid out one field per line, nothing cut."""
    try:
        value: Any = json.loads(raw_arguments) if raw_arguments.strip() else {}
    except ValueError:
        return raw_arguments
    return json.dumps(value, indent=2, ensure_ascii=False)
