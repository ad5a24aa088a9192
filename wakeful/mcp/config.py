"""``[mcp]`` and ``[[mcp.servers]]``: which MCP servers to connect and what their tools may do."""

from __future__ import annotations

import fnmatch
import importlib.util
from pathlib import Path

from pydantic import BaseModel, Field, field_validator, model_validator

from wakeful.core.effects import Effect
from wakeful.kernel.config_base import Section, reject_repeated_names
from wakeful.kernel.field_defaults import empty_dict, empty_list

# `<server>__<tool>` must fit the registry's 64 characters: the server's name is short.
SERVER_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9-]{0,23}$"


# A server's tool is offered as "<server>__<tool>". Here, not in adapter.py, so the
# safety assembly can name a server's tools without importing the SDK.
SEPARATOR = "__"


def namespaced(server: str, tool: str) -> str:
    return f"{server}{SEPARATOR}{tool}"


class ToolFilter(Section):
    """Which of a server's tools are offered, by glob on the server's own tool names."""

    allow: list[str] = Field(default_factory=lambda: ["*"], examples=[["search_*", "get_*"]])
    deny: list[str] = Field(default_factory=empty_list, examples=[["delete_*"]])

    def admits(self, tool: str) -> bool:
        """Allowed by a pattern and denied by none (deny wins)."""
        allowed = any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.allow)
        return allowed and not any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.deny)


class McpServerConfig(Section):
    """One ``[[mcp.servers]]`` entry: a stdio command or a streamable-HTTP URL."""

    name: str = Field(pattern=SERVER_NAME_PATTERN, examples=["github"])
    # stdio: the server is this command, started by the daemon (and restarted when it dies).
    command: str | None = Field(default=None, examples=["npx"])
    args: list[str] = Field(default_factory=empty_list, examples=[["-y", "@acme/mcp-server"]])
    env: dict[str, str] = Field(default_factory=empty_dict, examples=[{"ACME_REGION": "eu"}])
    # streamable HTTP: the server's endpoint; headers (tokens) come from a file, never the log.
    url: str | None = Field(default=None, examples=["https://mcp.example.com/mcp"])
    headers_file: Path | None = Field(default=None, examples=["/etc/wakeful/mcp-github-headers"])
    tools: ToolFilter = Field(default_factory=ToolFilter)
    # An untrusted server's results are a third party's words: they taint the session.
    trusted: bool = False
    # A required server that is down fails /readyz; an optional one only shows as down.
    required: bool = False
    # What a call can do, for the policy chain: consequential unless declared "read".
    effect: Effect = Field(default=Effect.NETWORK, examples=["network"])
    # Per-tool overrides of `effect`, by the server's tool name.
    effects: dict[str, Effect] = Field(
        default_factory=empty_dict, examples=[{"search_issues": "read"}]
    )
    # A call that takes longer is stopped with an honest error (None: [loop] tool_timeout_s).
    call_timeout_s: float | None = Field(default=None, gt=0, examples=[300])

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https:// (got {value!r})")
        return value

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                f"mcp server {self.name!r} needs exactly one of command (a stdio server) "
                'or url (streamable HTTP), e.g. command = "npx" with args = [...]'
            )
        if self.command is not None and self.headers_file is not None:
            raise ValueError(f"mcp server {self.name!r}: headers_file is for url servers only")
        if self.url is not None and (self.args or self.env):
            raise ValueError(f"mcp server {self.name!r}: args and env are for command servers")
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    def effect_of(self, tool: str) -> Effect:
        return self.effects.get(tool, self.effect)


class McpSection(Section):
    # How long start-up waits for each server to connect and list its tools; a server
    # that does not make it starts unavailable (its tools come when it connects).
    connect_timeout_s: float = Field(default=10.0, gt=0, examples=[10])
    servers: list[McpServerConfig] = Field(default_factory=empty_list)

    @field_validator("servers")
    @classmethod
    def _unique_names(cls, servers: list[McpServerConfig]) -> list[McpServerConfig]:
        reject_repeated_names([server.name for server in servers], "mcp server")
        if servers and importlib.util.find_spec("mcp") is None:
            raise ValueError(
                "[[mcp.servers]] needs the MCP SDK, which is not installed; "
                "install it with: pip install 'wakeful[mcp]'"
            )
        return servers


class McpSettings(BaseModel):
    mcp: McpSection = Field(default_factory=McpSection)
