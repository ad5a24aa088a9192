"""One MCP server's connection: probed at start-up, then kept up with backoff.

The SDK's client lives inside task groups of its own, so it can only be held open
by a task that owns it: the component's run phase. The configure phase therefore
*probes* (connect, list the tools, close) within its own scope, which fixes the tool
surface before any session's first request; the run phase then connects for good,
and connects again, with backoff, whenever the server dies.

A call in flight when the connection ends is woken at once (``ConnectionLost``):
the caller answers the model honestly instead of waiting for its timeout.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

import anyio
import mcp_types as types
import structlog
from anyio.abc import TaskStatus
from mcp import Client
from mcp.client.session import IncomingMessage
from mcp.client.subscriptions import ListenNotSupportedError
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import CONNECTION_CLOSED, INTERNAL_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND

from wakeful.kernel.exception_groups import describe_failure
from wakeful.mcp.config import McpServerConfig
from wakeful.mcp.transport import open_client

log = structlog.get_logger(__name__)

BACKOFF_FIRST_S = 0.5
BACKOFF_MAX_S = 60.0
# A connection that stayed up this long was healthy: the next failure starts the
# backoff from the beginning again.
STABLE_S = 30.0
# The request that asks whether an HTTP server still knows the session after an error.
CHECK_TIMEOUT_S = 5.0

ToolsListener = Callable[[Sequence[types.Tool]], Awaitable[None]]
HealthListener = Callable[[bool, str], None]


class ServerUnavailable(Exception):
    """The server is not connected (starting, restarting, or failing to start)."""


class ConnectionLost(Exception):
    """The server's connection ended while the call ran."""


class McpConnection:
    def __init__(
        self,
        config: McpServerConfig,
        *,
        headers: dict[str, str],
        connect_timeout_s: float,
        stderr_path: Path,
        on_tools: ToolsListener,
        on_health: HealthListener,
    ) -> None:
        self.config = config
        self._headers = headers
        self._connect_timeout_s = connect_timeout_s
        self._stderr_path = stderr_path
        self._on_tools = on_tools
        self._on_health = on_health
        self._client: Client | None = None
        self._up = anyio.Event()  # set while connected; replaced when the connection ends
        self._lost = anyio.Event()  # set when the current connection ends
        self._changed = anyio.Event()  # the server said its tool list changed
        self.restarts = 0
        self._served = False  # the current attempt got as far as a connection
        self.detail = "not connected yet"

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def connected(self) -> bool:
        return self._client is not None

    async def probe(self) -> list[types.Tool] | None:
        """Connect, list the tools, disconnect, within the connect timeout (start-up).
        None when the server could not be reached: it starts unavailable."""
        started = time.monotonic()
        with anyio.move_on_after(self._connect_timeout_s) as scope:
            try:
                with self._stderr() as errlog:
                    async with self._open(errlog, anyio.Event()) as client:
                        tools = await _list_tools(client)
                log.info(
                    "mcp server listed its tools",
                    server=self.name,
                    tools=len(tools),
                    seconds=round(time.monotonic() - started, 3),
                )
                return tools
            except Exception as exc:
                self._down(f"cannot connect: {describe_failure(exc)}")
                return None
        if scope.cancelled_caught:
            self._down(f"did not connect within {self._connect_timeout_s:g} s")
        return None

    async def run(self) -> None:
        """Connected for the daemon's life: reconnects with backoff when the server dies."""
        backoff = BACKOFF_FIRST_S
        while True:
            started = time.monotonic()
            self._served = False
            try:
                await self._serve_once()
                reason = "the connection closed"
            except Exception as exc:
                reason = describe_failure(exc)
            what = "disconnected" if self._served else "cannot connect"
            self._down(f"{what} ({reason}); trying again in {backoff:g} s")
            log.warning("mcp server disconnected", server=self.name, reason=reason, retry_s=backoff)
            if time.monotonic() - started >= STABLE_S:
                backoff = BACKOFF_FIRST_S
            await anyio.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX_S)
            self.restarts += 1

    async def call(
        self, tool: str, arguments: dict[str, Any], on_progress: ProgressFnT
    ) -> types.CallToolResult:
        """One tools/call. Raises ServerUnavailable when the server is not connected
        (after waiting up to the connect timeout for a restart), ConnectionLost when
        it went away during the call."""
        for attempt in (1, 2):
            with anyio.move_on_after(self._connect_timeout_s):
                await self._up.wait()
            client, lost = self._client, self._lost
            if client is None:
                raise ServerUnavailable(self.detail)
            try:
                return await self._call_once(client, lost, tool, arguments, on_progress)
            except _SessionExpired:
                # The server restarted and forgot the session: it never saw this call,
                # so it is sent once more on the new session.
                self._drop(client)
                if attempt == 2:
                    raise ServerUnavailable(self.detail) from None
        raise AssertionError("unreachable")

    async def _call_once(
        self,
        client: Client,
        lost: anyio.Event,
        tool: str,
        arguments: dict[str, Any],
        on_progress: ProgressFnT,
    ) -> types.CallToolResult:
        result: types.CallToolResult | None = None
        # Kept out of the task group, which would wrap it in an ExceptionGroup that
        # the adapter's ``except MCPError`` never sees.
        refused: MCPError | None = None
        async with anyio.create_task_group() as group:

            async def wake_on_loss() -> None:
                await lost.wait()
                group.cancel_scope.cancel()

            group.start_soon(wake_on_loss)
            try:
                result = await client.call_tool(tool, arguments, progress_callback=on_progress)
            except MCPError as exc:
                if _session_expired(exc):
                    refused = _SessionExpired(exc.code, exc.message)
                elif exc.code == CONNECTION_CLOSED or (
                    _http_failure(exc) and not await _still_serves(client)
                ):
                    lost.set()  # a server without a listen stream is found dead here
                else:
                    refused = exc
            group.cancel_scope.cancel()
        if refused is not None:
            raise refused
        if result is None:
            raise ConnectionLost(self.detail)
        return result

    async def _serve_once(self) -> None:
        timed_out = False
        async with anyio.create_task_group() as group:
            connected = anyio.Event()

            async def deadline() -> None:
                nonlocal timed_out
                with anyio.move_on_after(self._connect_timeout_s):
                    await connected.wait()
                    return
                timed_out = True
                group.cancel_scope.cancel()

            group.start_soon(deadline)
            with self._stderr() as errlog:
                ended = anyio.Event()
                async with self._open(errlog, ended) as client, anyio.create_task_group() as watch:
                    self._lost = anyio.Event()
                    watch.start_soon(self._lose_on, ended)
                    # Subscribed before the first call, so no change is missed.
                    await watch.start(self._lifeline, client)
                    tools = await _list_tools(client)
                    connected.set()
                    await self._on_tools(tools)
                    watch.start_soon(self._refresh_on_change, client)
                    self._client = client
                    self._served = True
                    self._up.set()
                    self.detail = f"connected, {len(tools)} tools"
                    self._on_health(True, self.detail)
                    log.info("mcp server connected", server=self.name, tools=len(tools))
                    try:
                        await self._lost.wait()
                    finally:
                        self._drop(client)
                        watch.cancel_scope.cancel()
        if timed_out:
            raise TimeoutError(f"did not connect within {self._connect_timeout_s:g} s")

    async def _lose_on(self, ended: anyio.Event) -> None:
        await ended.wait()
        log.info("mcp server's message stream ended", server=self.name)
        self._lost.set()

    async def _lifeline(
        self, client: Client, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Tool list changes, as the server declared it sends them: a
        ``subscriptions/listen`` stream (2026 servers), or list_changed notifications
        without one (older servers; ``_message``). A server that declares no changes is
        not asked. The stream's end also tells an HTTP server's loss; a stdio server's
        is told by its process's end (``_lose_on``), any other by the next call."""
        tools = client.server_capabilities.tools
        if tools is None or not tools.list_changed:
            task_status.started()
            return
        started = False
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                task_status.started()
                started = True
                async for _ in subscription:
                    self._changed.set()  # only tools_list_changed was asked for
        except ListenNotSupportedError:
            pass  # an older protocol: its notifications reach _message
        except MCPError as exc:
            if exc.code != METHOD_NOT_FOUND:
                log.info("mcp listen stream ended", server=self.name, reason=describe_failure(exc))
                self._lost.set()
        except Exception as exc:
            log.info("mcp listen stream ended", server=self.name, reason=describe_failure(exc))
            self._lost.set()
        else:
            self._lost.set()  # the server closed the stream: it is going away
        if not started:
            task_status.started()

    async def _refresh_on_change(self, client: Client) -> None:
        while True:
            await self._changed.wait()
            self._changed = anyio.Event()
            tools = await _list_tools(client)
            log.info("mcp server changed its tools", server=self.name, tools=len(tools))
            self.detail = f"connected, {len(tools)} tools"
            self._on_health(True, self.detail)
            await self._on_tools(tools)

    async def _message(self, message: IncomingMessage) -> None:
        # Called from the client's receive loop: only flag, never call the server here.
        if isinstance(message, types.ToolListChangedNotification):
            self._changed.set()

    def _open(self, errlog: TextIO, ended: anyio.Event) -> Any:
        return open_client(
            self.config,
            headers=self._headers,
            errlog=errlog,
            message_handler=self._message,
            ended=ended,
        )

    def _stderr(self) -> TextIO:
        self._stderr_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        return self._stderr_path.open("a", encoding="utf-8")

    def _drop(self, client: Client) -> None:
        """``client``'s connection is over: calls wait for the next one from now on
        (done at once by the call that found it over, so its retry waits too)."""
        if self._client is client:
            self._client = None
            self._up = anyio.Event()
        self._lost.set()

    def _down(self, detail: str) -> None:
        self.detail = detail
        self._on_health(False, detail)


class _SessionExpired(MCPError):
    """A streamable-HTTP server answered 404 for the session: it restarted."""


def _session_expired(exc: MCPError) -> bool:
    # The SDK's spelling of a 404 for a known Mcp-Session-Id.
    return exc.code == INVALID_REQUEST and exc.message == "Session terminated"


def _http_failure(exc: MCPError) -> bool:
    # The SDK's stand-in for an HTTP error status that carried no JSON-RPC answer:
    # a server that forgot the session without the 404 the spec asks for (400 from
    # server-everything), or one that failed — a second request tells which.
    return exc.code == INTERNAL_ERROR and exc.message == "Server returned an error response"


async def _still_serves(client: Client) -> bool:
    """Whether the session still answers: a tools/list (ping is gone from the 2026
    protocol; every server with tools serves this)."""
    with anyio.move_on_after(CHECK_TIMEOUT_S):
        try:
            await client.list_tools()
        except Exception:  # any failure of the check means the session is unusable
            return False
        return True
    return False


async def _list_tools(client: Client) -> list[types.Tool]:
    """Every page of the server's tool list."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            return tools
