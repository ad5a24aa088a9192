"""From a platform's message to an event: the one sender check of every chat platform.

An allowed owner's message becomes a ``user.input`` event, submitted with the
platform's cursor so both are committed together — unless the whole message
is an approval decision ("approve k3fwz2qp", "deny k3fwz2qp too risky"): that
is carried out and answered on the platform, and never reaches the model.
Button presses under an approval notice (Telegram, Slack) pass the same
check in :meth:`ChatInbound.press`. Anyone else never reaches the model nor
decides anything: they are answered with a pairing code (once, through the
outbox) and the cursor still moves on.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

import structlog

from wakeful.channels.chat.config import PER_USER
from wakeful.channels.chat.decisions import DecisionRequest, DecisionResult, decide, parse_decision
from wakeful.channels.chat.pairing import Pairing, PairingRequest, display_code
from wakeful.core.components.context import ComponentSetup
from wakeful.kernel.event_kinds import EventKind
from wakeful.kernel.events import Event, EventError
from wakeful.kernel.session_names import SESSION_PATTERN
from wakeful.store.base import Cursor
from wakeful.store.outbox.record import NewMessage

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class PlatformMessage:
    """One message as a platform delivered it, before any check."""

    message_id: str  # unique per platform account: becomes the event id (the store dedups)
    user_id: str
    user_name: str | None
    address: str  # where a reply goes: chat id, "channel/thread_ts", room id
    text: str
    occurred_at: datetime | None = None


class Received(StrEnum):
    SUBMITTED = "submitted"  # a new event for the agent
    DUPLICATE = "duplicate"  # seen before (a redelivery, a restart before the cursor moved)
    PAIRING = "pairing"  # an unknown sender: asked to pair, nothing for the agent
    IGNORED = "ignored"  # a sender the owner denied, or an empty message
    REFUSED = "refused"  # it can never be an event (say, past the size limit): logged, passed
    DECIDED = "decided"  # the owner's "approve <id>" / "deny <id>": carried out and answered


def pairing_text(code: str) -> str:
    """The reply to an unknown sender: says "pairing code" and shows the code on its own."""
    return (
        "Hello! This assistant only talks to people its owner has let in.\n\n"
        "Your pairing code is:\n\n"
        f"{display_code(code)}\n\n"
        "Send it to the owner; once they approve it, write again."
    )


PAIRED_TEXT = "You're paired: the owner let you in. Write any time."


class ChatInbound:
    """One platform account's incoming side (``[[chat.<platform>]]`` entry ``name``)."""

    def __init__(
        self,
        *,
        platform: str,
        name: str,
        session: str,
        allowed: Collection[str],
        setup: ComponentSetup,
    ) -> None:
        self.platform = platform
        self.name = name
        self.channel = f"chat:{platform}:{name}"
        self._session = session
        self._allowed = frozenset(allowed)
        self._setup = setup
        self._pairing = Pairing(setup.state)
        # session → the conversation its latest message came from (typing indicator)
        self.conversations: dict[str, str] = {}

    def session_for(self, user_id: str) -> str:
        if self._session != PER_USER:
            return self._session
        session = f"{self.platform}:{self.name}:{user_id}"
        if SESSION_PATTERN.match(session):
            return session
        # A user id no session name may hold (Matrix's may have '=', '/', '+'; any may be
        # long): the readable part, plus a digest so two such users never share a session.
        digest = hashlib.sha256(user_id.encode()).hexdigest()[:10]
        readable = re.sub(r"[^A-Za-z0-9_.:@-]", "_", user_id)[:60]
        return f"{self.platform}:{self.name}:{readable}-{digest}"

    def event_id(self, message_id: str) -> str:
        return f"{self.platform}:{self.name}:{message_id}"

    async def is_allowed(self, user_id: str) -> bool:
        if user_id in self._allowed:
            return True
        return await self._pairing.is_paired(self.platform, self.name, user_id)

    async def receive(self, message: PlatformMessage, *, cursor: Cursor | None = None) -> Received:
        if not message.text.strip():
            await self.advance(cursor)
            return Received.IGNORED
        if not await self.is_allowed(message.user_id):
            return await self._stranger(message, cursor)
        typed = parse_decision(message.text)
        if typed is not None:
            await self._decide_typed(message, typed, cursor)
            return Received.DECIDED
        try:
            event = self._event(message)
        except EventError as exc:  # never taken, so passed: a retry would not help, nor wedge us
            log.warning("chat message cannot be an event", channel=self.channel, error=str(exc))
            await self.advance(cursor)
            return Received.REFUSED
        result = await self._setup.submit(event, cursor=cursor)
        self._note_conversation(event.session, message.address)
        return Received.DUPLICATE if result.duplicate else Received.SUBMITTED

    async def ask_to_pair(self, message: PlatformMessage) -> Received:
        """A stranger who reached the account without writing yet (a Matrix invite to a
        direct chat) is answered as their first message would be: their code at
        ``message.address`` (keyed by ``message.message_id``), or nothing if denied."""
        return await self._stranger(message, None)

    async def press(
        self, user_id: str, request: DecisionRequest, *, cursor: Cursor | None = None
    ) -> DecisionResult | None:
        """An Approve/Deny button pressed under a notice; None when ``user_id`` may not
        decide (nothing is decided). The cursor moves past the press either way: the
        decision is in the store, and a redelivered press finds it already decided."""
        if not await self.is_allowed(user_id):
            log.warning(
                "approval button pressed by someone who may not decide; ignored",
                channel=self.channel,
                user=user_id,
                approval_id=request.approval_id,
            )
            await self.advance(cursor)
            return None
        result = await decide(self._setup.approvals, request, by=self.decider(user_id))
        await self.advance(cursor)
        return result

    def decider(self, user_id: str) -> str:
        """Who decided, as the approval record and the audit name them."""
        return f"{self.platform}:{self.name}:{user_id}"

    async def _decide_typed(
        self, message: PlatformMessage, request: DecisionRequest, cursor: Cursor | None
    ) -> None:
        result = await decide(self._setup.approvals, request, by=self.decider(message.user_id))
        # Keyed by the message: read again after a restart, it decides nothing new (the
        # first decision stands) and the outbox sends no second answer.
        await self._setup.send_message(
            NewMessage(
                session=self.session_for(message.user_id),
                channel=self.channel,
                text=result.line,
                key=f"decision:{self.event_id(message.message_id)}",
                address=message.address,
            )
        )
        await self.advance(cursor)

    async def advance(self, cursor: Cursor | None) -> None:
        """Move the cursor past an update that carries nothing for the agent."""
        if cursor is not None:
            await self._setup.state.put_state(cursor.key, cursor.value)

    def _event(self, message: PlatformMessage) -> Event:
        data: dict[str, object] = {
            "id": self.event_id(message.message_id),
            "kind": EventKind.USER_INPUT,
            "source": {
                "type": self.platform,
                "principal": message.user_id,
                "trusted": True,
                **({"name": message.user_name} if message.user_name else {}),
            },
            "channel": self.channel,
            "content": {"text": message.text},
            "context": {"reply_to": message.address},
            "session": self.session_for(message.user_id),
        }
        if message.occurred_at is not None:
            data["occurred_at"] = message.occurred_at
        try:
            return Event.parse(data)
        except EventError as exc:  # e.g. a text past the size limit: say so, lose nothing silently
            raise EventError(f"{self.channel}: message {message.message_id!r}: {exc}") from None

    async def _stranger(self, message: PlatformMessage, cursor: Cursor | None) -> Received:
        platform, name, user = self.platform, self.name, message.user_id
        if await self._pairing.is_denied(platform, name, user):
            log.info("message from a denied chat user dropped", channel=self.channel, user=user)
            await self.advance(cursor)
            return Received.IGNORED
        filed = await self._pairing.request(
            platform=platform,
            name=name,
            user_id=user,
            user_name=message.user_name,
            address=message.address,
            session=self.session_for(user),
        )
        if filed is None:  # too many waiting already (pairing.MAX_PENDING): not answered
            await self.advance(cursor)
            return Received.IGNORED
        request, tell = filed
        if tell:
            log.warning(
                "unknown chat user asked to pair; approve with `wakeful pairing approve "
                f"{platform} <code>` (see `wakeful pairing list`)",
                channel=self.channel,
                user=user,
                user_name=message.user_name,
            )
            await self._tell(request, message)
            # The web page's pairing panel listens for this (the feed only observes).
            self._setup.feed.publish(
                request.session, {"type": "pairing", "platform": platform, "account": name}
            )
        await self.advance(cursor)
        return Received.PAIRING

    async def _tell(self, request: PairingRequest, message: PlatformMessage) -> None:
        # Keyed by the message: the same update read again after a restart sends nothing new.
        key = f"pairing:{self.event_id(message.message_id)}"
        await self._setup.send_message(
            NewMessage(
                session=request.session,
                channel=self.channel,
                text=pairing_text(request.code),
                key=key,
                address=message.address,
            )
        )

    def _note_conversation(self, session: str, address: str) -> None:
        self.conversations[session] = address
