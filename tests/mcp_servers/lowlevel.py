"""A server written with the SDK's low-level ``Server`` and only tools: it declares
``tools.list_changed`` false and does not serve ``subscriptions/listen`` (-32601).

    python -m tests.mcp_servers.lowlevel [http --port-file PORT [--port N]]

``echo`` answers its text; ``refuse`` answers a JSON-RPC error with its reason.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from tests.mcp_servers.catalog import listening_socket, serve_http

TOOLS = [
    types.Tool(
        name="echo",
        description="Answer the text back.",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
    ),
    types.Tool(
        name="refuse",
        description="Refuse with a JSON-RPC error giving the reason.",
        input_schema={"type": "object", "properties": {"reason": {"type": "string"}}},
    ),
]


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    if params.name == "refuse":
        raise MCPError(code=types.INVALID_PARAMS, message=f"refused: {arguments.get('reason')}")
    text = f"echo {arguments.get('text')}"
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["stdio", "http"], nargs="?", default="stdio")
    parser.add_argument("--port-file", type=Path)
    parser.add_argument("--port", type=int, default=0)
    options = parser.parse_args()
    server: Server[Any] = Server("lowlevel", on_list_tools=list_tools, on_call_tool=call_tool)
    if options.transport == "stdio":
        anyio.run(serve_stdio, server)
    else:
        assert options.port_file is not None
        anyio.run(serve_http, server, listening_socket(options.port_file, options.port))


if __name__ == "__main__":
    main()
