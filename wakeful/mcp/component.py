"""The MCP component: every ``[[mcp.servers]]`` entry's tools, health and calls.

Configure: each server is probed (connected, listed, closed) within
``[mcp] connect_timeout_s``, all at once, and its allowed tools are registered
as deferred ``<server>__<tool>`` tools — so the tool surface is fixed before any
session's first request. A server that does not answer starts unavailable.

Run: one owned task per server keeps it connected and restarts it with backoff.
When a server's tool list changes (``tools/list_changed``, or a reconnect that
lists other tools), known tools are updated, tools it dropped answer that they
are no longer offered, and new ones join the deferred set after the fixed
prefix (callable by name, found by ``search_tools``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import mcp_types as types
import structlog
from anyio.abc import TaskStatus

from wakeful.core.components.context import ComponentHealth, ComponentSetup
from wakeful.core.tool import TaskView
from wakeful.core.tool_registry import ToolRegistry
from wakeful.mcp.adapter import McpTool
from wakeful.mcp.calls import McpCalls, SessionMcpCalls
from wakeful.mcp.config import McpServerConfig, namespaced
from wakeful.mcp.connection import McpConnection
from wakeful.mcp.listing_cache import keep_listing, last_listing
from wakeful.mcp.transport import read_headers

log = structlog.get_logger(__name__)


class ServerTools:
    """One server: its connection and the wakeful tools made from its tool list."""

    def __init__(self, config: McpServerConfig, setup: ComponentSetup, calls: McpCalls) -> None:
        self.config = config
        self._setup = setup
        self._calls = calls
        self.tools: dict[str, McpTool] = {}  # by the server's own tool name
        self.filtered: list[str] = []  # listed by the server, left out by allow/deny
        headers = (
            read_headers(config.headers_file, f"mcp.servers.{config.name}.headers_file")
            if config.headers_file is not None
            else {}
        )
        self.connection = McpConnection(
            config,
            headers=headers,
            connect_timeout_s=setup.settings.mcp.connect_timeout_s,
            stderr_path=setup.data_dir / "mcp" / f"{config.name}.stderr.log",
            on_tools=self.listed,
            on_health=self.set_health,
        )

    @property
    def registry(self) -> ToolRegistry:
        return self._setup.registrations.tools

    async def listed(self, listed: Sequence[types.Tool]) -> None:
        """The server (connected) listed its tools: apply them, and keep them for the
        next start-up (listing_cache.py)."""
        await self.apply(listed)
        await keep_listing(self._setup.state, self.config, listed)

    async def apply(self, listed: Sequence[types.Tool]) -> None:
        """Bring the adapters in line with the server's list (start-up or a change)."""
        admitted = {t.name: t for t in listed if self.config.tools.admits(t.name)}
        self.filtered = sorted(t.name for t in listed if t.name not in admitted)
        for name, tool in self.tools.items():
            if name in admitted:
                tool.update(admitted[name])
            elif tool.offered:
                tool.offered = False
                log.info("mcp tool withdrawn", server=self.config.name, tool=name)
        new = [t for name, t in admitted.items() if name not in self.tools]
        for listed_tool in new:
            adapter = McpTool(self.config, listed_tool, self.connection, self._calls)
            try:
                if self.registry.frozen:
                    self.registry.add_deferred(adapter)  # after the fixed prefix
                else:
                    self._setup.add_tool(adapter)
            except ValueError as exc:  # a name model APIs refuse (dots, spaces, too long)
                log.warning("mcp tool skipped", server=self.config.name, reason=str(exc))
                continue
            self.tools[listed_tool.name] = adapter
        if new and self.registry.frozen:
            log.info(
                "mcp tools added",
                server=self.config.name,
                tools=[namespaced(self.config.name, t.name) for t in new],
            )

    def status(self) -> dict[str, Any]:
        return {
            "transport": self.config.transport,
            "connected": self.connection.connected,
            "detail": self.connection.detail,
            "required": self.config.required,
            "trusted": self.config.trusted,
            "restarts": self.connection.restarts,
            "tools": sorted(t.name for t in self.tools.values() if t.offered),
            "withdrawn": sorted(t.name for t in self.tools.values() if not t.offered),
            "filtered_out": self.filtered,
        }

    def set_health(self, ok: bool, detail: str) -> None:
        self._setup.set_health(
            f"mcp:{self.config.name}", ComponentHealth(ok, detail, required=self.config.required)
        )


class McpComponent:
    name = "mcp"

    def __init__(self) -> None:
        self._servers: list[ServerTools] = []
        self._calls = McpCalls()

    async def configure(self, setup: ComponentSetup) -> None:
        self._servers = [ServerTools(c, setup, self._calls) for c in setup.settings.mcp.servers]
        listings: dict[str, list[types.Tool] | None] = {}

        async def probe(server: ServerTools) -> None:
            listed = await server.connection.probe()
            listings[server.config.name] = listed
            if listed is not None:
                await keep_listing(setup.state, server.config, listed)

        kept = {s.config.name: await last_listing(setup.state, s.config) for s in self._servers}
        async with anyio.create_task_group() as group:  # all at once: start-up waits once
            for server in self._servers:
                if kept[server.config.name] is None:  # never seen: ask it (a second start)
                    group.start_soon(probe, server)
        for server in self._servers:
            listed = kept[server.config.name] or listings.get(server.config.name)
            if listed is None:
                log.warning(
                    "mcp server unavailable at start-up; its tools come when it connects",
                    server=server.config.name,
                    reason=server.connection.detail,
                )
                continue
            await server.apply(listed)
            known = "known from the last start" if kept[server.config.name] else "listed"
            server.connection.detail = f"{known}: {len(server.tools)} tools; connecting"
            server.set_health(True, server.connection.detail)

        def view(session: str) -> TaskView:
            return SessionMcpCalls(self._calls, session)

        setup.add_task_view(view)
        setup.add_status("mcp", self.status)

    def status(self) -> dict[str, Any]:
        return {
            "calls_running": self._calls.running(),
            "servers": {server.config.name: server.status() for server in self._servers},
        }

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        # One owned task per server; a call made before its connection is up waits for
        # it (up to the connect timeout), so sessions need not wait here.
        async with anyio.create_task_group() as group:
            for server in self._servers:
                group.start_soon(server.connection.run, name=f"mcp server {server.config.name}")
            task_status.started()
