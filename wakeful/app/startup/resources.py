"""Step 1 of the start: what the daemon holds open for its whole life — its secrets,
the HTTP socket (reserved, not yet listening), the store and the model provider."""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import structlog

from wakeful.app.config import LlmSection, Settings
from wakeful.app.http.serve import reserve_port
from wakeful.core.provider import ModelProvider
from wakeful.kernel.logging import add_secrets
from wakeful.llm.model_key import missing_key_warning
from wakeful.llm.null_provider import NullProvider
from wakeful.llm.registry import build_provider
from wakeful.store.base import Store
from wakeful.store.factory import open_store

if TYPE_CHECKING:
    pass


log = structlog.get_logger(__name__)


def make_provider(llm: LlmSection, api_key: str | None) -> ModelProvider:
    if not llm.configured:
        return NullProvider()
    warning = missing_key_warning(llm, api_key)
    if warning is not None:
        log.warning(warning)
    # The provider's module (and its SDK) is imported here, only when configured.
    return build_provider(llm, api_key)


@dataclass(frozen=True)
class Opened:
    """Step 1: what the daemon holds open for its whole life."""

    data_dir: Path
    admin_token: str
    store: Store
    provider: ModelProvider
    sock: socket.socket  # bound, not yet listening
    url: str  # e.g. http://127.0.0.1:8787


async def open_resources(settings: Settings, data_dir: Path, stack: AsyncExitStack) -> Opened:
    admin_token = settings.server.resolve_admin_token(data_dir)
    api_key = settings.llm.resolve_api_key()
    add_secrets([s for s in (admin_token, api_key) if s])
    host, port = settings.server.host_port()
    sock = reserve_port(host, port)  # a port in use fails here, before any work
    stack.callback(sock.close)
    store = await open_store(settings.store, data_dir)
    stack.push_async_callback(_shielded_close, store.aclose)
    provider = make_provider(settings.llm, api_key)
    stack.push_async_callback(_shielded_close, provider.aclose)
    return Opened(data_dir, admin_token, store, provider, sock, _url(sock))


async def _shielded_close(close: Callable[[], Awaitable[None]]) -> None:
    with anyio.CancelScope(shield=True):
        await close()


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
