"""Calling one tool directly, as the registry does after validating the arguments."""

from __future__ import annotations

from typing import Any

from wakeful.core.tool import Tool, ToolContext, ToolOutput


async def run_tool(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
    return await tool.run(tool.Args.model_validate(args), ctx)
