"""The last tool list each MCP server gave, kept in the store for the next start-up.

Start-up must know every tool before the registry freezes (the system prompt's
deferred-tool index is built from it), but the connection that serves calls is
only opened once components run. Probing a server for its list at start-up
and then connecting again started each stdio server twice. With the list the
server gave last time, start-up registers its tools at once and the one
connection brings the adapters in line with what the server lists now (tools
added since join as deferred ones, tools gone are withdrawn); only a server
never seen before, or whose command or URL changed, is probed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

import mcp_types as types
import structlog
from pydantic import ValidationError

from wakeful.mcp.config import McpServerConfig
from wakeful.store.base import ChannelState

log = structlog.get_logger(__name__)

KEY_PREFIX = "mcp:tools:"


def _key(config: McpServerConfig) -> str:
    # Keyed by what starts the server (not its env values: they may hold secrets),
    # so an edited command or URL is probed afresh instead of trusting an old list.
    identity = json.dumps([config.command, config.args, sorted(config.env), config.url])
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return f"{KEY_PREFIX}{config.name}:{digest}"


async def last_listing(state: ChannelState, config: McpServerConfig) -> list[types.Tool] | None:
    """The tool list this server gave when it last connected, or None."""
    raw = await state.get_state(_key(config))
    if raw is None:
        return None
    try:
        return [types.Tool.model_validate(item) for item in json.loads(raw)]
    except (ValueError, ValidationError) as exc:  # a list from an older SDK: probe instead
        log.warning(
            "mcp tool list kept from last start unreadable", server=config.name, error=str(exc)
        )
        return None


async def keep_listing(
    state: ChannelState, config: McpServerConfig, listed: Sequence[types.Tool]
) -> None:
    items = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed]
    await state.put_state(_key(config), json.dumps(items, sort_keys=True))
