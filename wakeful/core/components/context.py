"""What a daemon component (a channel, a tool family) is given, in two phases.

Phase 1, **configure**: the component reads its config section and declares
what it brings — tools, HTTP routes, task views, health, status figures — on
its :class:`ComponentSetup`. It may open files and register their clean-up on
``setup.resources``. It sends no events yet: ``submit`` refuses until every
component is configured, so no session can call the model before every tool
exists (the tool list is byte-stable from a session's first request).

Then the lifespan freezes the registrations: a late one raises
:class:`LateRegistration`, naming the component, which fails start-up.

Phase 2, **run**: each component's ``run`` runs in its own supervised task
group for the daemon's life (see ``supervision.py``); events go only through
``submit`` — the dispatcher — so there is one path for events.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import anyio
from anyio.abc import TaskStatus
from starlette.routing import BaseRoute, Route

from wakeful.core.approvals import Approvals
from wakeful.core.feed import Feed
from wakeful.core.front_door import SubmitResult
from wakeful.core.heartbeat_checks import HeartbeatCheck
from wakeful.core.loop.session_scope import SessionScope
from wakeful.core.loop.task_views import SessionTaskViews
from wakeful.core.outbox.channels import Channel
from wakeful.core.outbox.deliverer import Delivery
from wakeful.core.spend import SpendGuard
from wakeful.core.system_prompt import LiveSection
from wakeful.core.tool import Tool
from wakeful.core.tool_registry import ToolRegistry
from wakeful.kernel.events import Event
from wakeful.kernel.http.direct import DirectRoute
from wakeful.store.base import ChannelState, Cursor, Store
from wakeful.store.outbox.record import NewMessage, OutgoingMessage

if TYPE_CHECKING:  # the composed config lives in the app; its type only
    from wakeful.app.config import Settings


class Submit(Protocol):
    """Hand an event to the dispatcher (deduplicated by id in the store); ``cursor``,
    where the channel has read up to, is committed in the same transaction."""

    def __call__(
        self, event: Event, *, cursor: Cursor | None = None
    ) -> Awaitable[SubmitResult]: ...


SendMessage = Callable[[NewMessage], Awaitable[OutgoingMessage]]
# Deliver now, in the caller's task (once per key), and return what became of it: for a
# tool that must report truthfully whether its message went out (send_email).
DeliverMessage = Callable[[NewMessage], Awaitable[Delivery]]
# (session, text, key): a notification to the owner where they are (the outbox's
# notification targets, once per key); returns what happened, in a sentence.
NotifyOwner = Callable[[str, str, str], Awaitable[str]]


class SessionControl(Protocol):
    """What a component that starts sessions of its own (subagents) may do to one.
    A session starts with the first event submitted for it; these end one."""

    async def close(self, session: str, cause: str) -> None:
        """End it for good: its run cut short, its tools and background tasks stopped."""
        ...

    def is_busy(self, session: str) -> bool: ...

    def wake_all(self) -> None:
        """Every session looks at its queue again (a spending cap reopened)."""
        ...


class LateRegistration(RuntimeError):
    """A component declared something after the configure phase ended."""


@dataclass
class ComponentHealth:
    ok: bool
    detail: str
    required: bool = False  # /readyz fails while a required component is not ok


@dataclass
class Registrations:
    """Everything components declared; read by the lifespan once they are all configured."""

    tools: ToolRegistry
    routes: list[BaseRoute] = field(default_factory=list)
    # Routes taken at high request rates (webhooks): also served ahead of the app's
    # middleware and router (wakeful.app.http.hot_routes), with the same answers.
    hot_routes: list[Route] = field(default_factory=list)
    # Routes the server's protocol answers itself, below ASGI, when a request allows
    # (wakeful.kernel.http.direct); each also has an ordinary route for the rest.
    direct_routes: list[DirectRoute] = field(default_factory=list)
    # Routes of the admin API (``/api/...``): the app checks the admin token first.
    admin_routes: list[Route] = field(default_factory=list)
    # Health may change while running (a mailbox goes down); the dict is read live.
    health: dict[str, ComponentHealth] = field(default_factory=dict)
    # Views of components' background tasks per session (task_status, status bar).
    task_views: list[SessionTaskViews] = field(default_factory=list)
    # Sessions a component restricts (a subagent's tools and budget).
    session_scopes: list[SessionScope] = field(default_factory=list)
    # name → callable returning extra figures for /api/status (and /metrics)
    status_providers: dict[str, Callable[[], dict[str, Any]]] = field(default_factory=dict)
    # Where outgoing messages can go (chat platforms, …), besides the daemon's own chat.
    channels: list[Channel] = field(default_factory=list)
    # Told (component name, what failed) each time a component's run fails; the
    # supervisor calls them in the event loop, so they must not block.
    failure_listeners: list[Callable[[str, str], None]] = field(default_factory=list)
    # Sections of the system prompt a component keeps current (the memory digest), each
    # with the most characters it ever returns (counted in the fixed part of a request).
    prompt_sections: list[tuple[LiveSection, int]] = field(default_factory=list)
    # session → the model its runs call instead of [llm] model (a cheaper one).
    session_models: dict[str, str] = field(default_factory=dict)
    # name → a check the heartbeat runs at each beat beside its own (unread mail, …).
    heartbeat_checks: dict[str, HeartbeatCheck] = field(default_factory=dict)
    # Guards every model call a session loop makes (the budget); at most one.
    spend_guard: SpendGuard | None = None
    frozen: bool = False


@dataclass
class ComponentSetup:
    """Phase 1: what a component may read and declare."""

    name: str
    settings: Settings
    data_dir: Path
    store: Store
    feed: Feed
    registrations: Registrations
    # Clean-up for what configure opened, run in reverse when the daemon stops.
    resources: AsyncExitStack
    # Refuses until every component is configured; safe to hand to objects built now.
    submit: Submit
    # Through the outbox (exactly once per key), sent by its delivery task (this call
    # never waits on the channel); refused until the run phase, like submit.
    send_message: SendMessage
    # Through the outbox too, but delivered in the caller's task, which learns what became
    # of the message (waiting briefly for another attempt at the same key).
    deliver_message: DeliverMessage
    # The owner's decisions on waiting tool calls (chat buttons, "approve <id>").
    approvals: Approvals
    # Ending a session for good; refused until the run phase, like submit.
    sessions: SessionControl
    # Tells the owner something without the model (a spending cap reached: no model
    # call may be spent on saying so); refused until the run phase, like submit.
    notify_owner: NotifyOwner

    @property
    def state(self) -> ChannelState:
        """Cursors, pairing records, presence: small values kept across restarts."""
        return self.store

    def set_spend_guard(self, guard: SpendGuard) -> None:
        self._check("the spend guard")
        if self.registrations.spend_guard is not None:
            raise LateRegistration(f"component {self.name!r}: a spend guard is already set")
        self.registrations.spend_guard = guard

    def add_tool(self, tool: Tool) -> None:
        self._check(f"tool {tool.name!r}")
        self.registrations.tools.register(tool)

    def add_route(self, route: BaseRoute, *, hot: bool = False) -> None:
        self._check(f"HTTP route {getattr(route, 'path', route)!r}")
        if hot and isinstance(route, Route):
            self.registrations.hot_routes.append(route)
        else:
            self.registrations.routes.append(route)

    def add_direct_route(self, route: DirectRoute) -> None:
        """Requests under ``route.prefix`` answered below ASGI when they allow; the
        component also adds an ordinary route for the same paths, answering the same."""
        self._check(f"direct route {route.prefix!r}")
        self.registrations.direct_routes.append(route)

    def add_admin_route(self, route: Route) -> None:
        """A route of the admin API: served only to requests with the admin token."""
        self._check(f"admin route {route.path!r}")
        self.registrations.admin_routes.append(route)

    def add_task_view(self, view: SessionTaskViews) -> None:
        self._check("a task view")
        self.registrations.task_views.append(view)

    def add_session_scope(self, scope: SessionScope) -> None:
        """Narrow some sessions: their tools (the array and every call) and their runs."""
        self._check("a session scope")
        self.registrations.session_scopes.append(scope)

    def add_channel(self, channel: Channel) -> None:
        """A destination for outgoing messages (the outbox delivers to it by name)."""
        self._check(f"channel {channel.name!r}")
        self.registrations.channels.append(channel)

    def add_prompt_section(self, provide: LiveSection, max_chars: int) -> None:
        """A section of every session's system prompt, read when the session's prompt is
        composed (its first request, after a compaction), never per request; at most
        ``max_chars`` long."""
        self._check("a system prompt section")
        self.registrations.prompt_sections.append((provide, max_chars))

    def set_session_model(self, session: str, model: str) -> None:
        """``session``'s runs call ``model`` (same provider) instead of [llm] model."""
        self._check(f"the model of session {session!r}")
        self.registrations.session_models[session] = model

    def add_check(self, name: str, check: HeartbeatCheck) -> None:
        """Offer the heartbeat a check (run at each beat when [heartbeat] is on, with a
        timeout; its findings are said once). ``name`` appears in a failure's finding."""
        self._check(f"heartbeat check {name!r}")
        if name in self.registrations.heartbeat_checks:
            raise LateRegistration(f"component {self.name!r}: check {name!r} exists already")
        self.registrations.heartbeat_checks[name] = check

    def add_status(self, name: str, provide: Callable[[], dict[str, Any]]) -> None:
        self._check(f"status figures {name!r}")
        self.registrations.status_providers[name] = provide

    def on_component_failure(self, listener: Callable[[str, str], None]) -> None:
        """Be told (component name, what failed) each time a component's run fails."""
        self._check("a component failure listener")
        self.registrations.failure_listeners.append(listener)

    def set_health(self, key: str, health: ComponentHealth) -> None:
        """Allowed in either phase: health is reported as it changes."""
        self.registrations.health[key] = health

    def _check(self, what: str) -> None:
        if self.registrations.frozen:
            raise LateRegistration(
                f"component {self.name!r} registered {what} after start-up froze the "
                "registrations; declare tools, routes, task views and status in configure()"
            )


class Component(Protocol):
    """A channel or tool family: declares in ``configure``, works in ``run``."""

    name: str

    async def configure(self, setup: ComponentSetup) -> None: ...

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Work until cancelled (the daemon stopping); return early if there is none.

        Call ``task_status.started()`` once the component's tools can be called:
        sessions resume only after every component has. Runs in the component's
        own task group under a supervisor: an exception is logged and counted,
        and ``run`` is called again after a backoff.
        """
        ...


@runtime_checkable
class Reloadable(Protocol):
    """Optional: a component that implements this is told about SIGHUP.

    On SIGHUP the daemon re-reads its configuration and calls ``reload`` on
    each such component with the new settings (hooks, timers in config, …). It
    applies what can change live and returns the names of the top-level
    config sections it took over (e.g. ``["hooks"]``), or raises
    :class:`ValueError` saying what it could not apply; the daemon logs
    either and keeps running.
    """

    async def reload(self, settings: Settings) -> list[str]: ...
