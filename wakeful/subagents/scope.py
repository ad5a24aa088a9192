"""A child's restrictions as the daemon enforces them (a SessionScope): its tools, its budget."""

from __future__ import annotations

from wakeful.handlers.base import Tool, ToolContext
from wakeful.subagents.manager import SubagentManager


class SubagentScope:
    """Only children are restricted; every other session is left alone (None)."""

    def __init__(self, manager: SubagentManager) -> None:
        self._manager = manager

    async def allowed_tools(self, session: str) -> frozenset[str] | None:
        record = self._manager.book.by_session(session)
        return frozenset(record.tools) if record is not None else None

    async def shown_tools(self, session: str) -> frozenset[str] | None:
        record = self._manager.book.by_session(session)
        return frozenset([*record.tools, *record.called_anyway]) if record is not None else None

    async def stop_reason(self, session: str) -> str | None:
        spent = await self._manager.budget_spent(session)
        return None if spent is None else f"the subagent's {spent.removeprefix('its ')}"


async def note_call(manager: SubagentManager, tool: Tool, ctx: ToolContext) -> None:
    """A child called a tool outside its scope (the chain refuses it): from now on its
    requests define that tool too, because its history names it."""
    record = manager.book.by_session(ctx.session)
    if record is None or tool.name in record.tools or tool.name in record.called_anyway:
        return
    record.called_anyway.append(tool.name)
    await manager.book.save(record)
