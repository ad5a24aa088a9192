"""The daemon's one lifespan: open everything in order, tear down in reverse.

:func:`running_daemon` owns the store, the model provider, the session
loops, the components and the HTTP server inside one task group. What the
process does around it (signals, systemd, exit) is :mod:`wakeful.daemon.service`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import structlog

from wakeful.channels import default_components
from wakeful.daemon.api_backend import ApiBackend
from wakeful.daemon.components.context import Reloadable, Services
from wakeful.daemon.config import LlmSection, Settings
from wakeful.daemon.dispatcher import Dispatcher
from wakeful.daemon.feed import Feed
from wakeful.daemon.front_door import SubmitResult
from wakeful.daemon.http.app import create_app
from wakeful.daemon.http.hot_routes import HotRoutes
from wakeful.daemon.http.observability import observability_routes
from wakeful.daemon.http.serve import QuietServer, bind_socket, serve_http
from wakeful.daemon.http.sse import StreamRegistry
from wakeful.daemon.logging import add_secrets
from wakeful.daemon.loop.limits import LoopLimits
from wakeful.daemon.loop.session_loop import LoopDeps
from wakeful.daemon.router import Router
from wakeful.daemon.router.classifier import ModelClassifier
from wakeful.daemon.sessions import Sessions
from wakeful.daemon.store.base import Store
from wakeful.daemon.store.factory import open_store
from wakeful.events import Event
from wakeful.handlers.registry import default_registry
from wakeful.llm.base import ModelProvider
from wakeful.llm.null_provider import HOW_TO_CONFIGURE, NullProvider

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class RunningDaemon:
    daemon: ApiBackend
    url: str  # e.g. http://127.0.0.1:8787
    admin_token: str
    data_dir: Path
    streams: StreamRegistry
    services: Services
    reloadables: list[Reloadable]  # what components offer for SIGHUP


def make_provider(llm: LlmSection, api_key: str | None) -> ModelProvider:
    if not llm.model:
        return NullProvider()
    from wakeful.llm.openai_provider import OpenAIProvider  # heavy: only when used

    return OpenAIProvider(
        base_url=llm.base_url,
        api_key=api_key,
        model=llm.model,
        timeout_s=llm.timeout_s,
        max_retries=llm.max_retries,
    )


def loop_limits(settings: Settings) -> LoopLimits:
    loop = settings.loop
    return LoopLimits(
        max_model_calls_per_run=loop.max_model_calls_per_run,
        max_run_seconds=loop.max_run_seconds,
        max_consecutive_failures=loop.max_consecutive_failures,
        max_event_crashes=loop.max_event_crashes,
        parallel_max_model_calls=loop.parallel_max_model_calls,
        parallel_budget_s=loop.parallel_budget_s,
    )


@asynccontextmanager
async def running_daemon(settings: Settings) -> AsyncIterator[RunningDaemon]:
    data_dir = settings.daemon.resolved_data_dir()
    admin_token = settings.server.resolve_admin_token(data_dir)
    api_key = settings.llm.resolve_api_key()
    add_secrets([s for s in (admin_token, api_key) if s])
    store = await open_store(settings.store, data_dir)
    provider = make_provider(settings.llm, api_key)
    try:
        async with anyio.create_task_group() as group, AsyncExitStack() as stack:
            running, server = await _start(
                settings, store, provider, group, data_dir, admin_token, stack
            )
            try:
                yield running
            finally:
                await _stop(running, server, group)
    finally:
        with anyio.CancelScope(shield=True):
            await provider.aclose()
            await store.aclose()


async def _start(
    settings: Settings,
    store: Store,
    provider: ModelProvider,
    group: anyio.abc.TaskGroup,
    data_dir: Path,
    admin_token: str,
    stack: AsyncExitStack,
) -> tuple[RunningDaemon, QuietServer]:
    feed = Feed()
    workspace, output_dir = data_dir / "workspace", data_dir / "outputs"
    workspace.mkdir(exist_ok=True)
    output_dir.mkdir(exist_ok=True)
    dispatcher_box: list[Dispatcher] = []

    async def submit(event: Event) -> SubmitResult:
        return await dispatcher_box[0].submit(event)

    async def submit_internal(event: Event) -> SubmitResult:
        return await dispatcher_box[0].submit(event, internal=True)

    tools = default_registry(
        default_timeout_s=settings.loop.tool_timeout_s, shell_grace_s=settings.loop.stop_grace_s
    )
    services = Services(settings, data_dir, store, feed, tools, group, submit)
    deps = LoopDeps(
        store=store,
        provider=provider,
        tools=tools,
        feed=feed,
        limits=loop_limits(settings),
        system_prompt=settings.daemon.system_prompt,
        workspace=workspace,
        output_dir=output_dir,
        submit=submit_internal,
        task_views=services.task_views,  # the same list: components append to it
    )
    sessions = Sessions(deps, group)
    dispatcher = Dispatcher(store, Router(_classifier(settings, provider)), sessions, feed, group)
    dispatcher_box.append(dispatcher)
    daemon = ApiBackend(store, dispatcher, sessions, feed, provider, services)
    reloadables: list[Reloadable] = []
    for component in default_components(settings):
        entered = await stack.enter_async_context(component(services))
        if isinstance(entered, Reloadable):
            reloadables.append(entered)
    await daemon.start()
    services.routes.extend(observability_routes(daemon))
    app = create_app(
        daemon,
        admin_token=admin_token,
        max_body_bytes=settings.server.max_body_bytes,
        extra_routes=[*services.hot_routes, *services.routes],
    )
    host, port = settings.server.host_port()
    sock = bind_socket(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    servers: list[QuietServer] = []
    await group.start(serve_http, HotRoutes(app, services.hot_routes), sock, servers)
    url = (
        f"http://[{bound_host}]:{bound_port}"
        if ":" in bound_host
        else (f"http://{bound_host}:{bound_port}")
    )
    log.info("wakeful is listening", url=url, model=provider.describe())
    if not provider.configured:
        log.warning("events will be stored until a model is configured", how=HOW_TO_CONFIGURE)
    running = RunningDaemon(
        daemon, url, admin_token, data_dir, app.state.streams, services, reloadables
    )
    return running, servers[0]


def _classifier(settings: Settings, provider: ModelProvider) -> ModelClassifier | None:
    router = settings.router
    if not (router.classifier_model and provider.configured):
        return None
    return ModelClassifier(provider, router.classifier_model, router.classifier_budget_ms)


async def _stop(running: RunningDaemon, server: QuietServer, group: anyio.abc.TaskGroup) -> None:
    running.daemon.dispatcher.stopping = True
    running.streams.close_all()  # open SSE responses would hold uvicorn's shutdown
    server.request_exit()
    group.cancel_scope.cancel()
