"""The one late binding in the daemon: parts configured before the core reach it here.

Components are configured, and the safety layer built, before the core exists: the
core is made from what they declare (the frozen tool registry, their channels, their
prompt sections), so it cannot be handed to them when they are built. What they
are handed instead is this gate's view of the core — ``submit``, ``send_message``,
the sessions, the approvals' effects — which refuses with :class:`LateRegistration`
until the composition root opens the gate with the started core
(:class:`CoreServices`), once. Every other dependency is passed at construction.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from wakeful.core.approvals.record import Approval
from wakeful.core.approvals.service import Announce, RunApproved
from wakeful.core.components.context import (
    DeliverMessage,
    LateRegistration,
    NotifyOwner,
    SendMessage,
    SessionControl,
    Submit,
)
from wakeful.core.front_door import SubmitResult
from wakeful.core.outbox.deliverer import Delivery
from wakeful.kernel.events import Event
from wakeful.store.base import Cursor
from wakeful.store.outbox.record import NewMessage, OutgoingMessage


class CoreSessions(SessionControl, Protocol):
    def owns(self, session: str) -> bool:
        """Its loop runs on this daemon (always true for a single daemon)."""
        ...


@dataclass(frozen=True)
class CoreServices:
    """The started core, as the parts configured before it use it."""

    submit: Submit  # an event from a component (its cursor committed with it)
    submit_internal: Callable[[Event], Awaitable[SubmitResult]]  # the daemon's own follow-up
    send: SendMessage  # through the outbox, by its delivery task
    deliver: DeliverMessage  # through the outbox, in the caller's task
    notify: NotifyOwner  # to the owner where they are, without the model
    sessions: CoreSessions
    run_approved: RunApproved  # an approved call, in its session's context
    announce: Announce  # tell the owner an approval waits


class EventGate:
    """Refuses until :meth:`open`; then every view passes straight to the core."""

    def __init__(self) -> None:
        self._core: CoreServices | None = None

    def open(self, core: CoreServices) -> None:
        """The run phase begins: every component is configured and the core started."""
        if self._core is not None:
            raise RuntimeError("the event gate is already open")
        self._core = core

    def core(self, name: str, what: str) -> CoreServices:
        """The core, for component ``name`` doing ``what``; refused before the run phase."""
        if self._core is None:
            raise LateRegistration(
                f"component {name!r} {what} before every component was configured and the "
                "core started; do it from run() or a tool, not configure()"
            )
        return self._core

    def for_component(self, name: str) -> Submit:
        async def submit(event: Event, *, cursor: Cursor | None = None) -> SubmitResult:
            core = self.core(name, f"sent event {event.id!r}")
            return await core.submit(event, cursor=cursor)

        return submit

    def sender_for(self, name: str) -> SendMessage:
        async def send(message: NewMessage) -> OutgoingMessage:
            return await self.core(name, "sent a message").send(message)

        return send

    def deliverer_for(self, name: str) -> DeliverMessage:
        async def deliver(message: NewMessage) -> Delivery:
            return await self.core(name, "delivered a message").deliver(message)

        return deliver

    def notifier_for(self, name: str) -> NotifyOwner:
        async def notify(session: str, text: str, key: str) -> str:
            return await self.core(name, "notified the owner").notify(session, text, key)

        return notify

    def sessions_for(self, name: str) -> SessionControl:
        return _GatedSessions(self, name)

    def approval_effects(self) -> ApprovalEffectsView:
        return ApprovalEffectsView(self)


class _GatedSessions:
    """A component's SessionControl: refused until the gate opens, like submit."""

    def __init__(self, gate: EventGate, name: str) -> None:
        self._gate = gate
        self._name = name

    def _sessions(self) -> CoreSessions:
        return self._gate.core(self._name, "used the sessions").sessions

    async def close(self, session: str, cause: str) -> None:
        await self._sessions().close(session, cause)

    def is_busy(self, session: str) -> bool:
        return self._sessions().is_busy(session)

    def wake_all(self) -> None:
        self._sessions().wake_all()


class ApprovalEffectsView:
    """What the approvals do with a decision (``core.approvals.service.ApprovalEffects``),
    through the gate: the approvals are built with the safety layer, before the core."""

    def __init__(self, gate: EventGate) -> None:
        self._gate = gate

    def _core(self) -> CoreServices:
        return self._gate.core("approvals", "acted on a decision")

    async def submit(self, event: Event) -> object:
        return await self._core().submit_internal(event)

    async def run_approved(self, approval: Approval) -> str:
        return await self._core().run_approved(approval)

    async def announce(self, approval: Approval) -> None:
        await self._core().announce(approval)

    def owns(self, session: str) -> bool:
        return self._core().sessions.owns(session)
