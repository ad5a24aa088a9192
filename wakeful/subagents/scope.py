"""A child's restrictions as the daemon enforces them (a SessionScope): its tools, its budget,
its words (for its parent, not the user); and the one tool every other session is denied."""

from __future__ import annotations

from wakeful.core.tool import Tool, ToolContext
from wakeful.core.tool_registry import ToolRegistry
from wakeful.subagents.limits import REPORT
from wakeful.subagents.manager import SubagentManager


class SubagentScope:
    """A child may use only its own tools. Every other session may use every tool but
    ``report_to_parent`` (it has no parent): not listed in its prompt, refused by name."""

    def __init__(self, manager: SubagentManager, registry: ToolRegistry) -> None:
        self._manager = manager
        self._registry = registry
        # Computed once per registry version (asked on every call and request); tools
        # may join after the freeze (an MCP server changed its list).
        self._top_level: tuple[int, frozenset[str]] | None = None

    async def allowed_tools(self, session: str) -> frozenset[str] | None:
        record = self._manager.book.by_session(session)
        if record is not None:
            return frozenset(record.tools)
        return self._top_level_tools()

    def _top_level_tools(self) -> frozenset[str]:
        version = self._registry.version
        if self._top_level is not None and self._top_level[0] == version:
            return self._top_level[1]
        names = frozenset(self._registry.names()) - {REPORT}
        if self._registry.frozen:
            self._top_level = (version, names)
        return names

    async def shown_tools(self, session: str) -> frozenset[str] | None:
        record = self._manager.book.by_session(session)
        if record is None:
            # The tools array of a top-level session is left as it is: report_to_parent
            # is deferred, so it is in the array only if the session's history calls it
            # (and a request must define every function its history calls).
            return None
        return frozenset([*record.tools, *record.called_anyway])

    async def stop_reason(self, session: str) -> str | None:
        spent = await self._manager.budget_spent(session)
        return None if spent is None else f"the subagent's {spent.removeprefix('its ')}"

    def delivers_replies(self, session: str) -> bool:
        # A child's replies are for its parent (its result events), kept in its trajectory.
        return self._manager.book.by_session(session) is None


async def note_call(manager: SubagentManager, tool: Tool, ctx: ToolContext) -> None:
    """A child called a tool outside its scope (the chain refuses it): from now on its
    requests define that tool too, because its history names it."""
    record = manager.book.by_session(ctx.session)
    if record is None or tool.name in record.tools or tool.name in record.called_anyway:
        return
    record.called_anyway.append(tool.name)
    await manager.book.save(record)
