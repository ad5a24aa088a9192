"""Opening one MCP client from a ``[[mcp.servers]]`` entry (stdio or streamable HTTP).

Everything here imports the ``mcp`` SDK: only the component's run path reaches it,
never the config.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import TextIO

import anyio
import httpx2
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client._transport import TransportStreams
from mcp.client.session import MessageHandlerFnT
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage

from wakeful.kernel.config_base import ConfigError, credential_path
from wakeful.kernel.logging import add_secrets
from wakeful.mcp.config import McpServerConfig

# The SDK's own defaults: a server may hold a response stream open for minutes.
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


def read_headers(path: Path, key: str) -> dict[str, str]:
    """``Header: value`` lines (blank lines and ``#`` comments skipped). Every value
    becomes a secret the log and tool results redact."""
    path = credential_path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read {path}: {exc.strerror or exc}") from None
    headers: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, colon, value = line.partition(":")
        if not colon or not name.strip() or not value.strip():
            # The line itself may be a token: name its number, never its text.
            raise ConfigError(f"{key}: line {number} of {path} is not 'Header: value'")
        headers[name.strip()] = value.strip()
    add_secrets(headers.values())
    return headers


@asynccontextmanager
async def open_client(
    config: McpServerConfig,
    *,
    headers: dict[str, str],
    errlog: TextIO,
    message_handler: MessageHandlerFnT,
    ended: anyio.Event,
) -> AsyncIterator[Client]:
    """A connected, initialised client; leaving it stops a stdio server's process.
    ``ended`` is set when the server's message stream ends on its own (a stdio
    server's process exited), so an idle dead server is noticed without a call."""
    async with AsyncExitStack() as stack:
        if config.command is not None:
            parameters = StdioServerParameters(
                command=config.command, args=config.args, env=config.env or None
            )
            # The server's stderr goes to its own file, not the daemon's log.
            transport = stdio_client(parameters, errlog=errlog)
        else:
            assert config.url is not None
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=headers, timeout=_HTTP_TIMEOUT)
            )
            transport = streamable_http_client(config.url, http_client=http)
        client = Client(
            _noting_end(transport, ended),
            message_handler=message_handler,
            cache=None,  # a changed tool list must be read fresh
        )
        yield await stack.enter_async_context(client)


@asynccontextmanager
async def _noting_end(
    transport: AbstractAsyncContextManager[TransportStreams], ended: anyio.Event
) -> AsyncIterator[TransportStreams]:
    """The transport's streams, the read side relayed so that its end sets ``ended``
    (the SDK's session reads it to the end and says nothing about it)."""
    async with transport as (read, write), anyio.create_task_group() as group:
        relay, relayed = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def pump() -> None:
            try:
                async with relay:
                    async for item in read:
                        await relay.send(item)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                return  # the client closed first: its own leaving, not the server's end
            ended.set()

        group.start_soon(pump)
        try:
            yield relayed, write
        finally:
            group.cancel_scope.cancel()
