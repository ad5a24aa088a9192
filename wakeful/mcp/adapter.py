"""One MCP server tool as a wakeful tool: ``<server>__<tool>``, deferred, schema as sent.

The registry validates arguments with the tool's ``Args`` model and sends the model
its JSON schema; here ``Args`` takes any object (the server validates, with its own
messages) and its schema is the server's ``inputSchema``. Calls pass the policy
chain like every tool: the effect is the server's (or the tool's) from the config,
and an untrusted server's result taints the session.
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any, ClassVar

import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict

from wakeful.core.effects import Effect, Reach
from wakeful.core.tool import ToolContext, ToolOutput
from wakeful.mcp.calls import McpCalls, progress_text
from wakeful.mcp.config import McpServerConfig, namespaced
from wakeful.mcp.connection import ConnectionLost, McpConnection, ServerUnavailable


class PassThroughArgs(BaseModel):
    """Any JSON object; the subclass for a tool answers with the server's schema."""

    model_config = ConfigDict(extra="allow")
    input_schema: ClassVar[dict[str, Any]] = {"type": "object"}

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return copy.deepcopy(cls.input_schema)


def args_model(tool: types.Tool) -> type[PassThroughArgs]:
    schema = dict(tool.input_schema) if tool.input_schema else {"type": "object"}
    return type(f"McpArgs_{tool.name}", (PassThroughArgs,), {"input_schema": schema})


class McpTool:
    """A server tool. ``offered`` turns false when the server stops listing it: the
    name stays (the prompt named it), the call says what happened."""

    resident = False  # deferred: named in the prompt under the server's group
    timeout_s: float | None

    def __init__(
        self,
        config: McpServerConfig,
        tool: types.Tool,
        connection: McpConnection,
        calls: McpCalls,
    ) -> None:
        self.server = config.name
        self.remote_name = tool.name
        self.name = namespaced(config.name, tool.name)
        self.group = f"mcp {config.name}"
        self.effect: Effect = config.effect_of(tool.name)
        self.read_only = self.effect is Effect.READ
        self.timeout_s = config.call_timeout_s
        self._trusted = config.trusted
        self._connection = connection
        self._calls = calls
        self.offered = True
        self.update(tool)

    def update(self, tool: types.Tool) -> None:
        """The server listed this tool (again); a changed schema applies to the next call's
        validation, while the session's tools array keeps the bytes it was sent."""
        self.description = tool.description or f"{tool.name} (MCP server {self.server})"
        self.Args: type[BaseModel] = args_model(tool)
        self.offered = True

    async def reach(self, args: BaseModel) -> Reach:
        # What an MCP tool touches is the server's business: no destination the
        # allowlists could vouch for, so the effect alone decides.
        return Reach()

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        if not self.offered:
            return ToolOutput(
                f"{self.name} is no longer offered by MCP server {self.server} (it changed "
                "its tool list); search_tools finds what it offers now.",
                is_error=True,
            )
        arguments = dict(args.model_extra or {})
        started = time.monotonic()
        with self._calls.track(session=ctx.session, tool=self.name, call_id=ctx.call_id) as call:

            async def on_progress(
                progress: float, total: float | None, message: str | None
            ) -> None:
                call.progress = progress_text(progress, total, message)

            try:
                result = await self._connection.call(self.remote_name, arguments, on_progress)
            except ServerUnavailable as exc:
                return ToolOutput(
                    f"{self.name} was not run: MCP server {self.server} is unavailable ({exc}). "
                    "Nothing was sent to it; try again later or tell the user.",
                    is_error=True,
                )
            except MCPError as exc:  # the server refused the call (a JSON-RPC error)
                return ToolOutput(
                    f"{self.name} failed on MCP server {self.server}: {exc.message} "
                    f"(JSON-RPC error {exc.code})",
                    is_error=True,
                    untrusted_source=self._untrusted(),
                )
            except ConnectionLost:
                return ToolOutput(
                    f"{self.name} (call {ctx.call_id}) lost its MCP server {self.server} after "
                    f"{time.monotonic() - started:.1f} s: the server's connection ended while "
                    "the call ran, so its result is unknown and it may have partially executed "
                    "— verify its effects before retrying. The daemon is restarting the server.",
                    is_error=True,
                )
        return self._output(result)

    def _output(self, result: types.CallToolResult) -> ToolOutput:
        text = result_text(result)
        if result.is_error:
            text = f"{self.name} failed on MCP server {self.server}: {text}"
        return ToolOutput(text, is_error=bool(result.is_error), untrusted_source=self._untrusted())

    def _untrusted(self) -> str | None:
        """What an untrusted server's words are named as in the session's taint."""
        return None if self._trusted else f"mcp {self.server} {self.remote_name}"


def result_text(result: types.CallToolResult) -> str:
    """The result's text blocks in order; other blocks in one line each; the structured
    content only when there is no text (it usually repeats it)."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.ImageContent | types.AudioContent):
            parts.append(f"[{block.type} content, {block.mime_type}, not shown]")
        elif isinstance(block, types.ResourceLink):
            parts.append(f"[resource link {block.uri}]")
        elif isinstance(block, types.EmbeddedResource):
            inner = block.resource
            text = getattr(inner, "text", None)
            parts.append(text if isinstance(text, str) else f"[embedded resource {inner.uri}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, sort_keys=True))
    return "\n".join(parts) or "(the tool returned no content)"
