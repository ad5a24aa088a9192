"""search_tools: find the tool for a need among every registered tool, with its arguments.

When deferral is on, most tools are only names in the system prompt. The model
describes what it wants to do; this tool ranks every tool (BM25F, see
``tool_index.py``), answers with the best matches and their argument schemas,
and loads those schemas into the session's tools array for the next request.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field

from wakeful.core.effects import Effect
from wakeful.core.tool import ToolArgs, ToolContext, ToolOutput
from wakeful.core.tool_registry import ToolRegistry
from wakeful.tools.tool_index import ToolDocument, ToolIndex
from wakeful.tools.tool_surface import SEARCH_TOOLS, ToolSurface

DEFAULT_LIMIT = 5
MAX_LIMIT = 10


class SearchToolsArgs(ToolArgs):
    query: str = Field(
        min_length=1,
        max_length=500,
        description='What you want to do, in plain words, e.g. "assign a support ticket".',
    )
    limit: int = Field(
        default=DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="How many matches at most."
    )


class SearchTools:
    name = SEARCH_TOOLS
    resident = True  # the way to the deferred tools must itself always be there
    description = (
        "Find a tool for a task among all available tools, including those listed only "
        "by name under 'Other tools'. Give the need in plain words; returns the best "
        "matches with their arguments, and makes them callable with full schemas."
    )
    Args = SearchToolsArgs
    read_only = True
    effect = Effect.READ
    timeout_s: float | None = None

    def __init__(self, registry: ToolRegistry, surface: ToolSurface) -> None:
        self._registry = registry
        self._surface = surface
        self._index: ToolIndex | None = None  # built at the first call: the registry is frozen
        self._index_version = -1  # rebuilt when tools joined later (registry.add_deferred)

    async def run(self, args: SearchToolsArgs, ctx: ToolContext) -> ToolOutput:
        matches = [name for name, _ in self._ranked(args.query, args.limit)]
        if not matches:
            return ToolOutput(
                f"No tool matches {args.query!r}. Try other words for the action or the "
                'thing it acts on (e.g. "create invoice", "calendar event", "git branch"), '
                "or call a tool named under 'Other tools' directly."
            )
        loaded = await self._surface.load(ctx.session, matches)
        lines = [f"{len(matches)} tool(s) for {args.query!r}, best first:"]
        for name in matches:
            lines.append(_describe(self._registry.definition(name), newly=name in loaded))
        return ToolOutput("\n".join(lines), data={"matches": matches, "loaded": loaded})

    def _ranked(self, query: str, limit: int) -> list[tuple[str, float]]:
        if self._index is None or self._index_version != self._registry.version:
            self._index_version = self._registry.version
            self._index = ToolIndex(
                _document(self._registry.definition(name))
                for name in self._registry.names()
                if name != SEARCH_TOOLS
            )
        return self._index.rank(query, limit=limit)


def _document(definition: dict[str, Any]) -> ToolDocument:
    function = definition["function"]
    properties = function["parameters"].get("properties", {})
    fields = [f"{field} {schema.get('description', '')}" for field, schema in properties.items()]
    return ToolDocument(function["name"], function["description"], fields)


def _describe(definition: dict[str, Any], *, newly: bool) -> str:
    function = definition["function"]
    parameters = json.dumps(function["parameters"], ensure_ascii=False, sort_keys=True)
    note = " (loaded: its schema is in your tools from the next step)" if newly else ""
    return f"- {function['name']}{note}: {function['description']}\n  arguments: {parameters}"
