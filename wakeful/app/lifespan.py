"""The daemon's one lifespan: open everything in order, tear down in reverse.

:func:`running_daemon` owns the store, the model provider, the session
loops, the components and the HTTP server inside one task group. What the
process does around it (signals, systemd, exit) is :mod:`wakeful.app.service`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
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
from wakeful.app.http.serve import QuietServer, bind_socket, serve_http
from wakeful.channels.chat_local.channel import LocalChat
from wakeful.core.approvals import Approval, notice_key
from wakeful.core.components.context import (
    Component,
    EventGate,
    Registrations,
    Reloadable,
)
from wakeful.core.components.supervision import configure_all, run_all
from wakeful.core.context.http_routes import context_routes
from wakeful.core.context.save_before_compaction import wants_saving
from wakeful.core.context.tokens import raw_estimate
from wakeful.core.dispatcher import Dispatcher
from wakeful.core.feed import Feed
from wakeful.core.feed_sse import StreamRegistry
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
    """The daemon, serving; ``components`` replaces the registry's list (tests, tools)."""
    data_dir = settings.daemon.resolved_data_dir()
    secure_data_dir(data_dir)  # umask 077; a loud warning if others can read it
    with hold_data_dir_lock(data_dir):  # before anything reads or writes data_dir
        admin_token = settings.server.resolve_admin_token(data_dir)
        api_key = settings.llm.resolve_api_key()
        add_secrets([s for s in (admin_token, api_key) if s])
        store = await open_store(settings.store, data_dir)
        provider = make_provider(settings.llm, api_key)
        try:
            # Resources outside the task group: every task (sessions writing their
            # placeholders, components' runs) has ended before what they use is closed.
            # Tracing outlives them all: their last spans are exported at its end.
            async with (
                tracing_installed(settings.telemetry),
                AsyncExitStack() as resources,
                anyio.create_task_group() as group,
            ):
                if components is None:
                    components = default_components(settings)
                running, server = await _start(
                    settings, store, provider, group, data_dir, admin_token, resources, components
                )
                try:
                    yield running
                finally:
                    await _stop(running, server, group)
            if running.fleet is not None:
                # No loop of this daemon runs any more: the safest point to hand over.
                await running.fleet.hand_over()
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
    resources: AsyncExitStack,
    components: Sequence[Component],
) -> tuple[RunningDaemon, QuietServer]:
    feed = Feed()
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
    gate = EventGate()
    # Phase 1: every component declares its tools, routes and views; then they freeze.
    await configure_all(
        components,
        settings=settings,
        data_dir=data_dir,
        store=store,
        feed=feed,
        registrations=registrations,
        gate=gate,
        resources=resources,
        approvals=safety.approvals,
    )
    # The registry is frozen: the fixed part of every request can be measured now.
    agents_md = read_agents_md(workspace)
    window = settings.context.window(settings.llm.model)
    # The live sections (the memory digest) count at the most they may ever hold.
    live = [" " * max_chars for _, max_chars in registrations.prompt_sections]
    prompt = compose_system_prompt(
        settings.daemon.system_prompt, agents_md, skills.listing(), *live, ""
    )
    surface.fit_window(window, raw_estimate(prompt))
    registrations.status_providers["fixed_part"] = lambda: surface.fixed
    # Every message that leaves the agent goes through the outbox to its channel: the
    # daemon's own web/CLI chat, and whatever channels the components declared.
    messages = await open_outbox(store)
    channels = [LocalChat(feed), *registrations.channels]
    outbox = Outbox(
        messages,
        Deliverer(messages, channels),
        presence=store,
        notify_prefer=[parse_target(t) for t in settings.notify.prefer],
        notify_urgent=[parse_target(t) for t in settings.notify.urgent],
    )
    await group.start(outbox.deliverer.run)  # marks sends a crash interrupted "unknown" first
    deps = LoopDeps(
        store=store,
        provider=provider,
        tools=tools,
        feed=feed,
        limits=loop_limits(settings),
        # Read now, once: the prefix stays byte-stable until the daemon restarts. The
        # registry is frozen: every tool is known to the deferred-tool index.
        prompts=SystemPrompts(
            settings.daemon.system_prompt,
            [agents_md, skills.listing()],
            surface.deferred_listing,
            scopes,
            live=[provide for provide, _ in registrations.prompt_sections],
        ),
        workspace=workspace,
        output_dir=output_dir,
        outbox=outbox,
        task_views=registrations.task_views,
        taints=safety.taints,
        approvals=safety.approvals,
        context=settings.context,
        context_window=window,
        surface=surface,
        scopes=scopes,
        plans=SessionPlans(store),
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
    router = Router(_classifier(settings, provider))
    fleet = settings.store.fleet
    dispatcher = Dispatcher(store, router, feed, group, deps, owned_only=fleet)

    async def notify_owner(session: str, text: str, key: str) -> str:
        return await outbox.notify_and_report(session, text, urgency="high", key=key)

    async def deliver(message: NewMessage) -> Delivery:
        return await outbox.deliverer.deliver_settled(message, REPORT_WAIT_S)

    gate.open(
        dispatcher.submit, outbox.deliverer.enqueue, dispatcher.sessions, notify_owner, deliver
    )
    _connect_approvals(safety, dispatcher, tools, outbox, feed)
    await group.start(safety.approvals.run)
    daemon = ApiBackend(
        store,
        dispatcher,
        dispatcher.sessions,
        feed,
        provider,
        registrations,
        safety_overview=partial(safety_overview, safety),
    )
    member = None
    if fleet:
        member = _fleet_member(store, dispatcher)
        dispatcher.tell_owner = member.tell_owner
        daemon.fleet_status = member.status
        safety.approvals.share(dispatcher.sessions.owns)
    # Phase 2: components run (each supervised); sessions resume once all have started.
    await run_all(components, group, registrations)
    await daemon.start()
    app = create_app(
        daemon,
        admin_token=admin_token,
        max_body_bytes=settings.server.max_body_bytes,
        extra_routes=[
            *registrations.hot_routes,
            *registrations.routes,
            *observability_routes(daemon, labels=settings.server.metrics_labels),
        ],
        admin_routes=[
            *registrations.admin_routes,
            *safety_routes(safety),
            *context_routes(daemon.known_sessions, lambda s: dispatcher.sessions.get(s).context),
        ],
        outbox=outbox,
    )
    host, port = settings.server.host_port()
    sock = bind_socket(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    servers: list[QuietServer] = []
    serve = partial(serve_http, server=settings.server)
    await group.start(serve, HotRoutes(app, registrations.hot_routes), sock, servers)
    url = (
        f"http://[{bound_host}]:{bound_port}"
        if ":" in bound_host
        else (f"http://{bound_host}:{bound_port}")
    )
    if member is not None:
        member.fleet.url = url
        await group.start(member.run)
    log.info("wakeful is listening", url=url, model=provider.describe())
    if not is_loopback(bound_host):
        log.warning(
            "listening beyond this machine: the admin API and webhooks are reachable from "
            "the network; put a TLS reverse proxy in front or bind to 127.0.0.1",
            bind=f"{bound_host}:{bound_port}",
        )
    if not provider.configured:
        log.warning("events will be stored until a model is configured", how=HOW_TO_CONFIGURE)
    reloadables: list[Reloadable] = [c for c in components if isinstance(c, Reloadable)]
    running = RunningDaemon(
        daemon,
        url,
        admin_token,
        data_dir,
        app.state.streams,
        registrations,
        reloadables,
        safety,
        fleet=member,
    )
    return running, servers[0]


def _fleet_member(store: Store, dispatcher: Dispatcher) -> FleetMember:
    """This daemon's part in the fleet: sessions are resumed by it, each by the daemon
    that takes its lease (not all by every daemon at start)."""
    from wakeful.app.fleet.member import FleetMember  # Redis only: imported when used
    from wakeful.store.redis_store import RedisStore

    assert isinstance(store, RedisStore) and store.fleet is not None  # [store] fleet = true
    return FleetMember(store, store.fleet, dispatcher.sessions)


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


def _connect_approvals(
    safety: Safety, dispatcher: Dispatcher, tools: ToolRegistry, outbox: Outbox, feed: Feed
) -> None:
    """Approved calls run in their session's context; the owner hears of new ones."""

    async def run_approved(approval: Approval) -> str:
        loop = dispatcher.sessions.get(approval.session)
        ctx = loop.tool_context(approval.call_id, loop.user_outbox)
        output = await tools.run_approved(approval.tool, approval.arguments, ctx)
        return f"(error) {output.text}" if output.is_error else output.text

    async def announce(approval: Approval) -> None:
        feed.publish(approval.session, {"type": "approval", **approval.public()})
        await outbox.notify_and_report(
            approval.session,
            approval_notice(approval),
            urgency="high",
            key=notice_key(approval.id),
            approval=approval.id,
        )

    safety.approvals.connect(
        submit=dispatcher.submit_internal,
        run_approved=run_approved,
        announce=announce,
        count_denial=safety.breaker.count_denial,
    )


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
