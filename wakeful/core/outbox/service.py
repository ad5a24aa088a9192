"""What the agent calls to say something: pick the target, store the record, deliver it."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence

from wakeful.core.outbox.deliverer import Deliverer
from wakeful.core.outbox.targets import (
    Target,
    channel_name,
    notification_targets,
    resolve_target,
)
from wakeful.kernel.events import Event
from wakeful.store.base import ChannelState
from wakeful.store.outbox.port import OutgoingMessages
from wakeful.store.outbox.record import NewMessage, OutgoingMessage
from wakeful.store.outbox.states import DeliveryState

# How long reply_to_user waits to learn what became of its message.
REPORT_WAIT_S = 5.0


class Outbox:
    """The outgoing-message port plus its deliverer, as the agent and the API use it."""

    def __init__(
        self,
        messages: OutgoingMessages,
        deliverer: Deliverer,
        session_defaults: Mapping[str, str] | None = None,
        presence: ChannelState | None = None,
        notify_prefer: Sequence[Target] = (),
        notify_urgent: Sequence[Target] = (),
    ) -> None:
        self.messages = messages
        self.deliverer = deliverer
        self._session_defaults = dict(session_defaults or {})
        self._notify_prefer, self._notify_urgent = list(notify_prefer), list(notify_urgent)
        # Where the user last wrote from, per session: a notification's fallback target.
        # Kept in the store (when given) so it outlives a restart; read through this cache.
        self._presence = presence
        self._last_active: dict[str, Target | None] = {}

    async def latest(self, session: str) -> OutgoingMessage | None:
        """The session's newest message, on any channel."""
        return await self.messages.latest(session)

    async def note_event(self, event: Event) -> None:
        """Remember where the owner last wrote from (a reply's fallback target)."""
        if not event.kind.startswith("user.") or (name := channel_name(event.channel)) is None:
            return
        address = None if name != event.channel else event.context.reply_to
        where = Target(name, address)
        if await self.last_active(event.session) == where:
            return  # written only when it changes: one store write per move, not per message
        self._last_active[event.session] = where
        if self._presence is not None:
            value = json.dumps({"channel": where.channel, "address": where.address})
            await self._presence.put_state(_presence_key(event.session), value)

    async def last_active(self, session: str) -> Target | None:
        if session not in self._last_active:
            found = None
            if self._presence is not None:
                raw = await self._presence.get_state(_presence_key(session))
                if raw is not None:
                    data = json.loads(raw)
                    found = Target(str(data["channel"]), data.get("address"))
            self._last_active[session] = found
        return self._last_active[session]

    async def target(self, session: str, answering: Event | None) -> Target:
        return resolve_target(
            answering,
            session=session,
            known=self.deliverer.channels.keys(),
            session_defaults=self._session_defaults,
            last_active=await self.last_active(session),
        )

    async def send(
        self, session: str, text: str, *, key: str, answering: Event | None = None
    ) -> OutgoingMessage:
        """Store the message (once per key), then deliver it in this task: a reply
        reaches the channel before the caller goes on (the run's "idle" comes after
        its replies). Retries and leftovers of a restart are the deliverer task's."""
        target = await self.target(session, answering)
        message = NewMessage(
            session,
            target.channel,
            text,
            key,
            answering.id if answering else None,
            address=target.address,
        )
        return await self.deliverer.deliver_new(message)

    async def send_and_report(
        self, session: str, text: str, *, key: str, answering: Event | None = None
    ) -> str:
        """Send, wait briefly for the attempt, and say truthfully what happened."""
        record = await self.send(session, text, key=key, answering=answering)
        settled = await self.deliverer.settled(record.id, REPORT_WAIT_S) or record
        return self.describe(settled)

    async def notify_and_report(
        self, session: str, text: str, *, urgency: str, key: str, approval: str | None = None
    ) -> str:
        """A notification (no message is being answered): by urgency, where the user
        last wrote and the configured preferences; each target once per key.
        ``approval``: the approval this is the owner's notice of (see NewMessage)."""
        targets = notification_targets(
            urgency,
            known=self.deliverer.channels.keys(),
            last_active=await self.last_active(session),
            prefer=self._notify_prefer,
            urgent=self._notify_urgent,
        )
        reports = []
        for number, target in enumerate(targets):
            piece_key = key if number == 0 else f"{key}:{target.channel}"
            message = NewMessage(
                session, target.channel, text, piece_key, address=target.address, approval=approval
            )
            delivery = await self.deliverer.deliver_settled(message, REPORT_WAIT_S)
            reports.append(self.describe(delivery.message))
        return "; ".join(reports)

    def describe(self, message: OutgoingMessage) -> str:
        receipt = self.deliverer.receipts.get(message.id)
        where, why = message.channel, message.last_error
        match message.state:
            case DeliveryState.SENT:
                return receipt.detail if receipt else f"already delivered to {where}"
            case DeliveryState.PENDING | DeliveryState.SENDING:
                later = f" ({why})" if why else ""
                return f"queued for {where}; not delivered yet{later}; it will be retried"
            case DeliveryState.FAILED:
                return f"NOT delivered to {where}: {why}"
            case DeliveryState.UNKNOWN:
                return f"delivery to {where} is UNKNOWN ({why}); it will not be resent"

    def for_session(self, session: str, answering: Callable[[], Event | None]) -> SessionOutbox:
        return SessionOutbox(self, session, answering)


def _presence_key(session: str) -> str:
    return f"presence:{session}"


class SessionOutbox:
    """A tool's view (``ToolContext.outbox``): messages of one session, replying
    to whatever event that session is handling now."""

    def __init__(self, outbox: Outbox, session: str, answering: Callable[[], Event | None]):
        self._outbox = outbox
        self._session = session
        self._answering = answering

    async def send(self, text: str, *, key: str) -> str:
        return await self._outbox.send_and_report(
            self._session, text, key=key, answering=self._answering()
        )

    async def notify(self, text: str, *, urgency: str, key: str) -> str:
        return await self._outbox.notify_and_report(self._session, text, urgency=urgency, key=key)
