"""Which tool schemas a request carries: the resident block, then what the session loaded.

With hundreds of tools (an MCP server or two), sending every schema in every
request costs more tokens than the conversation. So, once deferral is on, a
request carries:

1. the **resident** block: the schemas of tools that declare ``resident = True``
   (the file and shell vocabulary, task control, talking to the user,
   ``search_tools``), in registration order — the same bytes in every request
   of every session, so the provider's prompt cache keeps them;
2. the session's **loaded tail**: the schemas of deferred tools this session has
   called by name or found with ``search_tools``, in the order they were loaded,
   appended after the block (never merged into it, which would shift its bytes).

Every other tool is named in the system prompt under its ``group`` heading
(:meth:`ToolSurface.deferred_listing`). The registry runs any registered tool,
sent or not, so a deferred tool called by name works on the first turn; the call
also loads its schema for the next request. The loaded names are kept in the
store (``tools:loaded:<session>``), so a restart sends the same tools array.

Deferral is ``[tools] defer``: "always" (the default: every request of every
session pays only for the few tools nearly every turn needs), "auto" (on when
more than ``defer_above`` tools are registered) or "never". Off, the request
carries every schema, minus ``search_tools`` (nothing left to find).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any, Protocol

import anyio
import structlog

from wakeful.core.context.tokens import raw_estimate
from wakeful.core.tool import Tool, ToolContext
from wakeful.core.tool_registry import ToolRegistry
from wakeful.store.base import ChannelState
from wakeful.store.memory_state import MemoryState
from wakeful.tools.tools_config import DEFAULT_DEFER, DEFAULT_DEFER_ABOVE, DeferMode

log = structlog.get_logger(__name__)

SEARCH_TOOLS = "search_tools"
# The fixed part (system prompt + tool schemas) may take at most this share of the
# window: past it, a few tool results fill the rest and every turn compacts.
FIXED_SHARE = 3
OTHER_GROUP = "other"
LOADED_KEY_PREFIX = "tools:loaded:"


class ToolScope(Protocol):
    """The sessions restricted to some tools (wakeful/core/loop/session_scope.py)."""

    async def shown_tools(self, session: str) -> frozenset[str] | None: ...


def is_resident(tool: Tool) -> bool:
    """A tool is deferred unless it says otherwise: a large third-party set should not
    land in every request because its author forgot a flag."""
    return bool(getattr(tool, "resident", False))


def group_of(tool: Tool) -> str:
    group = getattr(tool, "group", None)
    return group if isinstance(group, str) and group else OTHER_GROUP


class ToolSurface:
    """The tools array and the system prompt's tool listing, for a frozen registry."""

    def __init__(
        self,
        registry: ToolRegistry,
        state: ChannelState | None = None,
        *,
        defer: DeferMode = DEFAULT_DEFER,
        defer_above: int = DEFAULT_DEFER_ABOVE,
        scope: ToolScope | None = None,
    ) -> None:
        self._registry = registry
        self._scope = scope
        self._state: ChannelState = state if state is not None else MemoryState()
        self._defer = defer
        self._defer_above = defer_above
        self._definitions: dict[str, dict[str, Any]] = {}
        self._resident: list[dict[str, Any]] | None = None
        self._deferring: bool | None = None  # decided once the registry is frozen
        self.fixed: dict[str, Any] = {}  # the fixed part measured at start-up (fit_window)
        # Parallel calls each load their schema: the read-modify-write of the tail
        # must not lose one (the model would then call a function it was not sent).
        self._loading = anyio.Lock()
        registry.watch_calls(self._note_call)

    def deferring(self) -> bool:
        if self._deferring is not None:
            return self._deferring
        if self._defer == "auto":
            deferring = len(self._registry.names()) > self._defer_above
        else:
            deferring = self._defer == "always"
        # Fixed at the freeze: tools joining later (registry.add_deferred) must not
        # switch a running session's tools array from "everything" to "block + tail".
        if self._registry.frozen:
            self._deferring = deferring
        return deferring

    def fit_window(self, window: int, prompt_tokens: int) -> dict[str, Any]:
        """Measure the fixed part (``prompt_tokens`` of system prompt, plus the schemas)
        once at start-up, the registry frozen. Over a third of ``window`` with
        ``defer = "auto"``, the non-resident tools are deferred (search_tools finds
        them); over it still, or with deferral off, a warning says so (log and status)."""
        limit = window // FIXED_SHARE
        tokens = all_tools = prompt_tokens + raw_estimate(self._resident_block())
        auto_deferred = False
        if tokens > limit and self._defer == "auto" and not self.deferring():
            self._deferring, self._resident, auto_deferred = True, None, True
            listing = raw_estimate(self.deferred_listing())
            tokens = prompt_tokens + raw_estimate(self._resident_block()) + listing
        warning = None
        if tokens > limit:
            warning = (
                f"the system prompt and tool schemas take about {tokens} tokens, more than a "
                f"third of the {window}-token window: raise [context] max_tokens, or set "
                '[tools] defer = "always"'
            )
            log.warning("fixed part over a third of the window", tokens=tokens, window=window)
        elif auto_deferred:
            log.warning(
                "tool schemas deferred: all of them took over a third of the window",
                tokens=tokens,
                window=window,
            )
        self.fixed = {
            "fixed_tokens": tokens,
            "all_tools_tokens": all_tools,  # before any automatic deferral
            "window": window,
            "deferring": self.deferring(),
            "auto_deferred": auto_deferred,
            "warning": warning,
        }
        return self.fixed

    def is_deferred(self, name: str) -> bool:
        tool = self._registry.get(name)
        return tool is not None and self.deferring() and not is_resident(tool)

    def resident_definitions(self) -> list[dict[str, Any]]:
        """The block every request starts its tools array with (a fresh copy)."""
        return copy.deepcopy(self._resident_block())

    def _resident_block(self) -> list[dict[str, Any]]:
        if self._resident is None:
            if self.deferring():
                names = [t.name for t in self._registry.tools() if is_resident(t)]
            else:
                names = [n for n in self._registry.names() if n != SEARCH_TOOLS]
            block = [self._definition(name) for name in names]
            if not self._registry.frozen:
                return block  # tools may still come: nothing is fixed before start-up ends
            self._resident = block
        return self._resident

    def deferred_listing(self, allowed: frozenset[str] | None = None) -> str:
        """The system prompt's section naming every deferred tool (of ``allowed``, when
        given: a session restricted to some tools is not told of the others); "" when
        none are. Groups and names sorted, so the text does not depend on component order."""
        if not self.deferring():
            return ""
        groups: dict[str, list[str]] = {}
        for tool in self._registry.tools():
            if not is_resident(tool) and (allowed is None or tool.name in allowed):
                groups.setdefault(group_of(tool), []).append(tool.name)
        if not groups:
            return ""
        lines = [f"{group}: {', '.join(sorted(names))}" for group, names in sorted(groups.items())]
        return (
            "Other tools (call by name; search_tools finds them and shows their "
            "arguments):\n" + "\n".join(lines)
        )

    async def tools_for(self, session: str) -> list[dict[str, Any]]:
        """The session's tools array: the resident block, then its loaded tail."""
        tail = [self._definition(name) for name in await self.loaded(session)]
        tools = [*self._resident_block(), *tail]
        shown = await self._scope.shown_tools(session) if self._scope else None
        if shown is not None:  # a restricted session (a subagent): only its own tools
            tools = [t for t in tools if t["function"]["name"] in shown]
        # A copy, so a caller that edits its list cannot change the next prefix.
        return copy.deepcopy(tools)

    async def loaded(self, session: str) -> list[str]:
        """The deferred tools this session loaded, in loading order (still registered)."""
        if not self.deferring():
            return []
        raw = await self._state.get_state(_key(session))
        names = json.loads(raw) if raw else []
        return [name for name in names if self.is_deferred(name)]

    async def load(self, session: str, names: Sequence[str]) -> list[str]:
        """Append ``names``' schemas to the session's tail; returns those newly loaded."""
        async with self._loading:
            current = await self.loaded(session)
            new = [n for n in dict.fromkeys(names) if self.is_deferred(n) and n not in current]
            if new:
                await self._state.put_state(_key(session), json.dumps([*current, *new]))
                log.info("tool schemas loaded", session=session, tools=new)
            return new

    async def _note_call(self, tool: Tool, ctx: ToolContext) -> None:
        # Also when the arguments turn out wrong: the schema is what helps next time.
        if self.is_deferred(tool.name):
            await self.load(ctx.session, [tool.name])

    def _definition(self, name: str) -> dict[str, Any]:
        if name not in self._definitions:
            self._definitions[name] = self._registry.definition(name)
        return self._definitions[name]


def _key(session: str) -> str:
    return f"{LOADED_KEY_PREFIX}{session}"
