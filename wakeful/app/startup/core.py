"""Step 4 of the start: the outbox over every declared channel, the dispatcher and its
session loops, the API's backend and, in a fleet, this daemon's member; and the core
as the gate opens onto it (:class:`~wakeful.core.components.gate.CoreServices`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import anyio

from wakeful.app.api_backend import ApiBackend
from wakeful.app.config import Settings
from wakeful.app.startup.armour import Armed
from wakeful.app.startup.resources import Opened
from wakeful.channels.chat_local.channel import LocalChat
from wakeful.core.approvals import Approval, notice_key
from wakeful.core.components.gate import CoreServices
from wakeful.core.context.save_before_compaction import wants_saving
from wakeful.core.context.tokens import raw_estimate
from wakeful.core.dispatcher import Dispatcher
from wakeful.core.feed import Feed
from wakeful.core.loop.deps import LoopDeps
from wakeful.core.loop.limits import LoopLimits
from wakeful.core.loop.model_health import ModelHealth
from wakeful.core.outbox.deliverer import Deliverer, Delivery
from wakeful.core.outbox.factory import open_outbox
from wakeful.core.outbox.service import REPORT_WAIT_S, Outbox
from wakeful.core.outbox.targets import parse_target
from wakeful.core.plan import SessionPlans
from wakeful.core.provider import ModelProvider
from wakeful.core.router import Router
from wakeful.core.router.classifier import ModelClassifier
from wakeful.core.system_prompt import SystemPrompts, compose_system_prompt
from wakeful.core.tool_registry import ToolRegistry
from wakeful.llm.model_key import missing_key_warning
from wakeful.safety.assembly import approval_notice
from wakeful.safety.overview import safety_overview
from wakeful.skills.agents_md import read_agents_md
from wakeful.store.base import Store
from wakeful.store.outbox.record import NewMessage

if TYPE_CHECKING:
    from wakeful.app.fleet.member import FleetMember
    from wakeful.store.redis_store import RedisStore


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


@dataclass(frozen=True)
class Core:
    """Step 4: the outbox delivering, the dispatcher and its sessions, the API's backend."""

    outbox: Outbox
    dispatcher: Dispatcher
    daemon: ApiBackend
    services: CoreServices  # what the gate opens onto
    fleet: FleetMember | None


async def start_core(
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
    fleet_store = _fleet_store(store) if settings.store.fleet else None
    dispatcher = Dispatcher(
        store,
        Router(_classifier(settings, provider)),
        feed,
        group,
        _loop_deps(settings, opened, armed, feed, outbox),
        fleet=fleet_store.fleet if fleet_store is not None else None,
    )
    member = _fleet_member(fleet_store, dispatcher, opened.url) if fleet_store is not None else None
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


def _fleet_store(store: Store) -> RedisStore:
    """The store as a fleet's ([store] fleet = true: Redis, with its fleet)."""
    from wakeful.store.redis_store import RedisStore  # Redis only: imported when used

    assert isinstance(store, RedisStore) and store.fleet is not None
    return store


def _fleet_member(store: RedisStore, dispatcher: Dispatcher, url: str) -> FleetMember:
    """This daemon's part in the fleet: sessions are resumed by it, each by the daemon
    that takes its lease (not all by every daemon at start)."""
    from wakeful.app.fleet.member import FleetMember  # Redis only: imported when used

    assert store.fleet is not None
    return FleetMember(store, store.fleet, dispatcher.sessions, url)


def _classifier(settings: Settings, provider: ModelProvider) -> ModelClassifier | None:
    router = settings.router
    if not (router.classifier_model and provider.configured):
        return None
    return ModelClassifier(provider, router.classifier_model, router.classifier_budget_ms)
