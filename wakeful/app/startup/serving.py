"""Step 5 of the start: the HTTP app, served on the socket step 1 reserved."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import anyio
import structlog

from wakeful.app.config import Settings
from wakeful.app.http.app import create_app
from wakeful.app.http.hot_routes import HotRoutes
from wakeful.app.http.observability import observability_routes
from wakeful.app.http.serve import QuietServer, serve_http
from wakeful.app.startup.armour import Armed
from wakeful.app.startup.core import Core
from wakeful.app.startup.resources import Opened
from wakeful.core.context.http_routes import context_routes
from wakeful.core.feed_sse import StreamRegistry
from wakeful.core.provider import HOW_TO_CONFIGURE
from wakeful.llm.model_key import is_loopback
from wakeful.safety.http_routes import safety_routes

if TYPE_CHECKING:
    pass


log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Serving:
    quiet: QuietServer
    streams: StreamRegistry  # the open SSE responses, closed first at a stop


async def serve_http_app(
    settings: Settings, opened: Opened, armed: Armed, core: Core, group: anyio.abc.TaskGroup
) -> Serving:
    """Step 5: the HTTP app on the socket reserved at step 1."""
    registrations, daemon = armed.registrations, core.daemon
    sessions = core.dispatcher.sessions
    app = create_app(
        daemon,
        admin_token=opened.admin_token,
        max_body_bytes=settings.server.max_body_bytes,
        extra_routes=[
            *registrations.hot_routes,
            *registrations.routes,
            *observability_routes(daemon, labels=settings.server.metrics_labels),
        ],
        admin_routes=[
            *registrations.admin_routes,
            *safety_routes(armed.safety),
            *context_routes(daemon.known_sessions, lambda s: sessions.get(s).context),
        ],
        outbox=core.outbox,
    )
    servers: list[QuietServer] = []
    serve = partial(serve_http, server=settings.server, direct_routes=registrations.direct_routes)
    await group.start(serve, HotRoutes(app, registrations.hot_routes), opened.sock, servers)
    return Serving(servers[0], app.state.streams)


def log_listening(opened: Opened) -> None:
    log.info("wakeful is listening", url=opened.url, model=opened.provider.describe())
    host = opened.sock.getsockname()[0]
    if not is_loopback(host):
        log.warning(
            "listening beyond this machine: the admin API and webhooks are reachable from "
            "the network; put a TLS reverse proxy in front or bind to 127.0.0.1",
            bind=opened.url.removeprefix("http://"),
        )
    if not opened.provider.configured:
        log.warning("events will be stored until a model is configured", how=HOW_TO_CONFIGURE)
