"""The daemon's one lifespan: open everything in order, tear down in reverse.

:func:`running_daemon` owns the store, the model provider, the session
loops, the components and the HTTP server inside one task group. What the
process does around it (signals, systemd, exit) is :mod:`wakeful.app.service`.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import structlog

from wakeful.app.api_backend import ApiBackend
from wakeful.app.components import default_components
from wakeful.app.config import LlmSection, Settings
from wakeful.app.http.app import create_app
from wakeful.app.http.hot_routes import HotRoutes
from wakeful.app.http.observability import observability_routes
from wakeful.app.http.serve import QuietServer, reserve_port, serve_http
from wakeful.channels.chat_local.channel import LocalChat
from wakeful.core.approvals import Approval, notice_key
from wakeful.core.components.context import Component, Registrations, Reloadable
from wakeful.core.components.gate import CoreServices, EventGate
from wakeful.core.components.supervision import configure_all, run_all
from wakeful.core.context.http_routes import context_routes
from wakeful.core.context.save_before_compaction import wants_saving
from wakeful.core.context.tokens import raw_estimate
from wakeful.core.dispatcher import Dispatcher
from wakeful.core.feed import Feed
from wakeful.core.feed_sse import StreamRegistry
from wakeful.core.fleet_port import FleetPort
from wakeful.core.loop.deps import LoopDeps
from wakeful.core.loop.limits import LoopLimits
from wakeful.core.loop.model_health import ModelHealth
from wakeful.core.loop.session_scope import SessionScope, SessionScopes
from wakeful.core.outbox.deliverer import Deliverer, Delivery
from wakeful.core.outbox.factory import open_outbox
from wakeful.core.outbox.record import NewMessage
from wakeful.core.outbox.service import REPORT_WAIT_S, Outbox
from wakeful.core.outbox.targets import parse_target
from wakeful.core.plan import SessionPlans
from wakeful.core.provider import HOW_TO_CONFIGURE, ModelProvider
from wakeful.core.router import Router
from wakeful.core.router.classifier import ModelClassifier
from wakeful.core.system_prompt import SystemPrompts, compose_system_prompt
from wakeful.core.tool_output import saved_outputs_dir
from wakeful.core.tool_registry import ToolRegistry
from wakeful.kernel.data_dir_lock import hold_data_dir_lock
from wakeful.kernel.data_dir_perms import secure_data_dir
from wakeful.kernel.logging import add_secrets
from wakeful.llm.model_key import is_loopback, missing_key_warning
from wakeful.llm.null_provider import NullProvider
from wakeful.llm.registry import build_provider
from wakeful.mcp.config import namespaced
from wakeful.safety.assembly import Safety, approval_notice, build_safety
from wakeful.safety.http_routes import safety_routes
from wakeful.safety.overview import safety_overview
from wakeful.safety.review_model import ProviderReviewModel
from wakeful.safety.sandbox import daemon_sandbox
from wakeful.skills.agents_md import read_agents_md
from wakeful.skills.catalog import SkillCatalog, discover_skills
from wakeful.skills.load_skill import LoadSkill
from wakeful.store.base import Store
from wakeful.store.factory import open_store
from wakeful.telemetry.lifecycle import tracing_installed
from wakeful.tools.registry import default_registry
from wakeful.tools.search_tools import SearchTools
from wakeful.tools.tool_surface import ToolSurface

if TYPE_CHECKING:
    from wakeful.app.fleet.member import FleetMember

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class RunningDaemon:
    daemon: ApiBackend
    url: str  # e.g. http://127.0.0.1:8787
    admin_token: str
    data_dir: Path
    streams: StreamRegistry
    registrations: Registrations  # what the components declared
    reloadables: list[Reloadable]  # the components that take SIGHUP
    safety: Safety  # taint, approvals, the breaker
    fleet: FleetMember | None = None  # [store] fleet: this daemon's part in it


def make_provider(llm: LlmSection, api_key: str | None) -> ModelProvider:
    if not llm.model:
        return NullProvider()
    warning = missing_key_warning(llm, api_key)
    if warning is not None:
        log.warning(warning)
    # The provider's module (and its SDK) is imported here, only when configured.
    return build_provider(llm, api_key)


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
async def running_daemon(
    settings: Settings, components: Sequence[Component] | None = None
) -> AsyncIterator[RunningDaemon]:
    """The daemon, serving; ``components`` replaces the registry's list (tests, tools).

    Five steps, each given what the ones before it made: open the resources, arm the
    safety layer and the tools, configure the components, start the core, serve HTTP.
    Everything is torn down in reverse on one exit stack; the task group that owns every
    task (sessions writing their placeholders, components' runs) ends before anything
    it uses is closed."""
    data_dir = settings.daemon.resolved_data_dir()
    secure_data_dir(data_dir)  # umask 077; a loud warning if others can read it
    with hold_data_dir_lock(data_dir):  # before anything reads or writes data_dir
        async with AsyncExitStack() as stack:
            opened = await _open_resources(settings, data_dir, stack)
            # Tracing outlives every task: their last spans are exported at its end.
            await stack.enter_async_context(tracing_installed(settings.telemetry))
            resources = await stack.enter_async_context(AsyncExitStack())
            async with anyio.create_task_group() as group:
                if components is None:
                    components = default_components(settings)
                running, server = await _start(settings, opened, group, resources, components)
                try:
                    yield running
                finally:
                    await _stop(running, server, group)
            if running.fleet is not None:
                # No loop of this daemon runs any more: the safest point to hand over.
                await running.fleet.hand_over()


@dataclass(frozen=True)
class Opened:
    """Step 1: what the daemon holds open for its whole life."""

    data_dir: Path
    admin_token: str
    store: Store
    provider: ModelProvider
    sock: socket.socket  # bound, not yet listening
    url: str  # e.g. http://127.0.0.1:8787


async def _open_resources(settings: Settings, data_dir: Path, stack: AsyncExitStack) -> Opened:
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


@dataclass(frozen=True)
class Armed:
    """Step 2: the safety layer and the tools, before any component declares its own."""

    safety: Safety
    tools: ToolRegistry
    surface: ToolSurface
    skills: SkillCatalog
    scopes: SessionScopes
    registrations: Registrations
    workspace: Path
    output_dir: Path


def _arm(settings: Settings, opened: Opened, gate: EventGate) -> Armed:
    data_dir, store, provider = opened.data_dir, opened.store, opened.provider
    workspace = settings.safety.workspace_path(data_dir)
    output_dir = saved_outputs_dir(data_dir)
    workspace.mkdir(parents=True, exist_ok=True)
    output_dir.mkdir(exist_ok=True)
    # What components narrow per session (subagents): declared while they configure.
    session_scopes: list[SessionScope] = []
    scopes = SessionScopes(session_scopes)
    sandbox = daemon_sandbox(settings, data_dir)
    safety = build_safety(
        settings.safety,
        store,
        data_dir=data_dir,
        review_model=_review_model(settings, provider),
        tool_scope=scopes,
        skill_roots=settings.skills.skill_roots(data_dir),
        mcp_prefixes=[namespaced(server.name, "") for server in settings.mcp.servers],
        approval_effects=gate.approval_effects(),
        shared=settings.store.fleet,
    )
    tools = default_registry(
        default_timeout_s=settings.loop.tool_timeout_s,
        shell_grace_s=settings.loop.stop_grace_s,
        outputs_max_bytes=settings.loop.outputs_max_mb * 1024 * 1024,
        http_allow=settings.safety.http_allow,
        sandbox=sandbox,
        state=store,  # the ledger of files the agent wrote survives restarts
        owner_requests=safety.approvals,
    )
    skills = discover_skills(settings.skills.skill_roots(data_dir))
    surface = _tool_surface(settings, tools, store, skills, scopes)
    registrations = Registrations(tools, session_scopes=session_scopes)
    registrations.status_providers["sandbox"] = sandbox.status
    tools.guard_with(safety.chain)  # every call, whoever registered the tool
    return Armed(safety, tools, surface, skills, scopes, registrations, workspace, output_dir)


async def _start(
    settings: Settings,
    opened: Opened,
    group: anyio.abc.TaskGroup,
    resources: AsyncExitStack,
    components: Sequence[Component],
) -> tuple[RunningDaemon, QuietServer]:
    feed = Feed()
    gate = EventGate()  # what components and approvals reach the core through
    armed = _arm(settings, opened, gate)
    # Step 3: every component declares its tools, routes and views; then they freeze.
    await configure_all(
        components,
        settings=settings,
        data_dir=opened.data_dir,
        store=opened.store,
        feed=feed,
        registrations=armed.registrations,
        gate=gate,
        resources=resources,
        approvals=armed.safety.approvals,
    )
    core = await _start_core(settings, opened, armed, feed, group)
    gate.open(core.services)
    await group.start(armed.safety.approvals.run)
    # Components run (each supervised); sessions resume once all have started.
    await run_all(components, group, armed.registrations)
    await core.daemon.start()
    server = await _serve_http(settings, opened, armed, core, group)
    if core.fleet is not None:
        await group.start(core.fleet.run)
    _log_listening(opened)
    reloadables: list[Reloadable] = [c for c in components if isinstance(c, Reloadable)]
    running = RunningDaemon(
        core.daemon,
        opened.url,
        opened.admin_token,
        opened.data_dir,
        server.streams,
        armed.registrations,
        reloadables,
        armed.safety,
        fleet=core.fleet,
    )
    return running, server.quiet


@dataclass(frozen=True)
class Core:
    """Step 4: the outbox delivering, the dispatcher and its sessions, the API's backend."""

    outbox: Outbox
    dispatcher: Dispatcher
    daemon: ApiBackend
    services: CoreServices  # what the gate opens onto
    fleet: FleetMember | None


async def _start_core(
    settings: Settings, opened: Opened, armed: Armed, feed: Feed, group: anyio.abc.TaskGroup
) -> Core:
    store, provider, registrations = opened.store, opened.provider, armed.registrations
    # Every message that leaves the agent goes through the outbox to its channel: the
    # daemon's own web/CLI chat, and whatever channels the components declared.
    messages = await open_outbox(store)
    outbox = Outbox(
        messages,
        Deliverer(messages, [LocalChat(feed), *registrations.channels]),
        presence=store,
        notify_prefer=[parse_target(t) for t in settings.notify.prefer],
        notify_urgent=[parse_target(t) for t in settings.notify.urgent],
    )
    await group.start(outbox.deliverer.run)  # marks sends a crash interrupted "unknown" first
    fleet_port = _fleet_port(store) if settings.store.fleet else None
    dispatcher = Dispatcher(
        store,
        Router(_classifier(settings, provider)),
        feed,
        group,
        _loop_deps(settings, opened, armed, feed, outbox),
        fleet=fleet_port,
    )
    member = _fleet_member(store, dispatcher, opened.url) if fleet_port is not None else None
    daemon = ApiBackend(
        store,
        dispatcher,
        dispatcher.sessions,
        feed,
        provider,
        registrations,
        safety_overview=partial(safety_overview, armed.safety),
        fleet_status=member.status if member is not None else None,
    )
    services = _core_services(dispatcher, armed.tools, outbox, feed)
    return Core(outbox, dispatcher, daemon, services, member)


def _loop_deps(
    settings: Settings, opened: Opened, armed: Armed, feed: Feed, outbox: Outbox
) -> LoopDeps:
    """What every session loop is built from. The registry is frozen: the fixed part of
    every request can be measured now, and every tool is known to the deferred index."""
    registrations, surface, tools = armed.registrations, armed.surface, armed.tools
    agents_md = read_agents_md(armed.workspace)
    window = settings.context.window(settings.llm.model)
    # The live sections (the memory digest) count at the most they may ever hold.
    live = [" " * max_chars for _, max_chars in registrations.prompt_sections]
    prompt = compose_system_prompt(
        settings.daemon.system_prompt, agents_md, armed.skills.listing(), *live, ""
    )
    surface.fit_window(window, raw_estimate(prompt))
    registrations.status_providers["fixed_part"] = lambda: surface.fixed
    return LoopDeps(
        store=opened.store,
        provider=opened.provider,
        tools=tools,
        feed=feed,
        limits=loop_limits(settings),
        # Read now, once: the prefix stays byte-stable until the daemon restarts.
        prompts=SystemPrompts(
            settings.daemon.system_prompt,
            [agents_md, armed.skills.listing()],
            surface.deferred_listing,
            armed.scopes,
            live=[provide for provide, _ in registrations.prompt_sections],
        ),
        workspace=armed.workspace,
        output_dir=armed.output_dir,
        outbox=outbox,
        task_views=registrations.task_views,
        taints=armed.safety.taints,
        approvals=armed.safety.approvals,
        context=settings.context,
        context_window=window,
        surface=surface,
        scopes=armed.scopes,
        plans=SessionPlans(opened.store),
        spend=registrations.spend_guard,
        # A remote model with no key: the status says so until a call succeeds.
        model_health=ModelHealth(
            warning=missing_key_warning(settings.llm, settings.llm.resolve_api_key())
        ),
        session_models=registrations.session_models,
        compaction_tools=[t.name for t in tools.tools() if wants_saving(t)],
        provider_name=settings.llm.provider,
        model_name=settings.llm.model,
    )


def _core_services(
    dispatcher: Dispatcher, tools: ToolRegistry, outbox: Outbox, feed: Feed
) -> CoreServices:
    """The started core as components and approvals use it (through the gate)."""

    async def notify_owner(session: str, text: str, key: str) -> str:
        return await outbox.notify_and_report(session, text, urgency="high", key=key)

    async def deliver(message: NewMessage) -> Delivery:
        return await outbox.deliverer.deliver_settled(message, REPORT_WAIT_S)

    async def run_approved(approval: Approval) -> str:
        """An approved call runs in its session's context."""
        loop = dispatcher.sessions.get(approval.session)
        ctx = loop.tool_context(approval.call_id, loop.user_outbox)
        output = await tools.run_approved(approval.tool, approval.arguments, ctx)
        return f"(error) {output.text}" if output.is_error else output.text

    async def announce(approval: Approval) -> None:
        """The owner hears of a new approval where they are."""
        feed.publish(approval.session, {"type": "approval", **approval.public()})
        await outbox.notify_and_report(
            approval.session,
            approval_notice(approval),
            urgency="high",
            key=notice_key(approval.id),
            approval=approval.id,
        )

    return CoreServices(
        submit=dispatcher.submit,
        submit_internal=dispatcher.submit_internal,
        send=outbox.deliverer.enqueue,
        deliver=deliver,
        notify=notify_owner,
        sessions=dispatcher.sessions,
        run_approved=run_approved,
        announce=announce,
    )


@dataclass(frozen=True)
class Serving:
    quiet: QuietServer
    streams: StreamRegistry  # the open SSE responses, closed first at a stop


async def _serve_http(
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
    serve = partial(serve_http, server=settings.server)
    await group.start(serve, HotRoutes(app, registrations.hot_routes), opened.sock, servers)
    return Serving(servers[0], app.state.streams)


def _log_listening(opened: Opened) -> None:
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


def _fleet_port(store: Store) -> FleetPort:
    from wakeful.store.redis_store import RedisStore  # Redis only: imported when used

    assert isinstance(store, RedisStore) and store.fleet is not None  # [store] fleet = true
    return store.fleet


def _fleet_member(store: Store, dispatcher: Dispatcher, url: str) -> FleetMember:
    """This daemon's part in the fleet: sessions are resumed by it, each by the daemon
    that takes its lease (not all by every daemon at start)."""
    from wakeful.app.fleet.member import FleetMember  # Redis only: imported when used
    from wakeful.store.redis_store import RedisStore

    assert isinstance(store, RedisStore) and store.fleet is not None  # [store] fleet = true
    return FleetMember(store, store.fleet, dispatcher.sessions, url)


def _tool_surface(
    settings: Settings,
    tools: ToolRegistry,
    store: Store,
    skills: SkillCatalog,
    scopes: SessionScopes,
) -> ToolSurface:
    """The surface over ``tools``, with the two tools that belong to it: search_tools,
    and load_skill when there are skills to load."""
    surface = ToolSurface(
        tools,
        store,
        defer=settings.tools.defer,
        defer_above=settings.tools.defer_above,
        scope=scopes,
    )
    tools.register(SearchTools(tools, surface))
    if len(skills):
        tools.register(LoadSkill(skills))
    return surface


def _review_model(settings: Settings, provider: ModelProvider) -> ProviderReviewModel | None:
    model = settings.safety.reviewer_model
    if not (model and provider.configured):
        return None
    return ProviderReviewModel(provider, model, settings.daemon.system_prompt)


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
