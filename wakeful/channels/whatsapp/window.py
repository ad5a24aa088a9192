"""WhatsApp's 24-hour customer-service window, kept in the store.

A business may write freely to a user only within 24 hours of the user's last
message; after that only an approved template may be sent (error 131047
otherwise). Each user's last message time is kept in channel state, so it
outlives a restart and is shared by every daemon on one store.

:class:`WindowedChannel` wraps the chat channel: a reply to a user whose window
is closed is not sent. With ``template_name`` configured, the template goes
out once (saying a reply waits) and the reply is kept in the store; when the
user writes again, the kept replies are handed back to the outbox, keyed so a
redelivered message or a restart sends each once. Without a template the
delivery fails with the reason, which the owner sees in the outbox.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import structlog

from wakeful.channels.chat.chunking import split_message
from wakeful.channels.chat.outgoing import ChatChannel
from wakeful.channels.whatsapp.client import WhatsAppClient, WindowClosed
from wakeful.core.components.context import SendMessage
from wakeful.core.outbox.channels import NeverDeliverable, Receipt
from wakeful.store.base import ChannelState
from wakeful.store.outbox.record import NewMessage, OutgoingMessage

log = structlog.get_logger(__name__)

WINDOW_S = 24 * 3600
# A reply sent in the window's last minute may reach WhatsApp after it closed.
MARGIN_S = 60.0


@dataclass(frozen=True)
class Template:
    name: str
    language: str


class ServiceWindow:
    """Last-message times, the "template sent" marks and the kept replies of one account."""

    def __init__(self, state: ChannelState, account: str) -> None:
        self._state = state
        self._prefix = f"whatsapp:{account}:"

    def _key(self, what: str, wa_id: str) -> str:
        return f"{self._prefix}{what}:{wa_id}"

    async def wrote(self, wa_id: str, at: float | None) -> None:
        """The user wrote at ``at`` (their message's time; now if unknown or ahead)."""
        now = time.time()
        at = now if at is None or at > now else at
        last = await self.last_wrote(wa_id)
        if last is None or at > last:
            await self._state.put_state(self._key("last_inbound", wa_id), f"{at:.3f}")
        if now - at < WINDOW_S - MARGIN_S:  # Meta redelivers for days: an old message opens nothing
            await self._state.put_state(self._key("template_sent", wa_id), None)

    async def last_wrote(self, wa_id: str) -> float | None:
        raw = await self._state.get_state(self._key("last_inbound", wa_id))
        return None if raw is None else float(raw)

    async def is_open(self, wa_id: str, now: float | None = None) -> bool:
        last = await self.last_wrote(wa_id)
        now = time.time() if now is None else now
        return last is not None and now - last < WINDOW_S - MARGIN_S

    async def template_sent(self, wa_id: str) -> bool:
        return await self._state.get_state(self._key("template_sent", wa_id)) is not None

    async def mark_template_sent(self, wa_id: str) -> None:
        await self._state.put_state(self._key("template_sent", wa_id), f"{time.time():.3f}")

    async def keep(self, wa_id: str, message: OutgoingMessage, text: str) -> None:
        record = {"session": message.session, "text": text, "key": message.key}
        if message.approval is not None:  # released with its buttons
            record["approval"] = message.approval
        await self._state.put_state(self._key("held", f"{wa_id}:{message.id}"), json.dumps(record))

    async def kept(self, wa_id: str) -> dict[str, dict[str, str]]:
        """The replies kept for ``wa_id``, by their state key."""
        found = await self._state.states_under(self._key("held", f"{wa_id}:"))
        return {key: json.loads(raw) for key, raw in sorted(found.items(), key=_by_id)}

    async def forget(self, key: str) -> None:
        await self._state.put_state(key, None)

    async def release(self, wa_id: str, channel: str, send: SendMessage) -> int:
        """Hand the replies kept for ``wa_id`` back to the outbox; how many."""
        kept = await self.kept(wa_id)
        for key, record in kept.items():
            # Keyed by the kept message: a crash before forget() sends nothing twice.
            message = NewMessage(
                record["session"],
                channel,
                record["text"],
                f"whatsapp:kept:{key}",
                address=wa_id,
                approval=record.get("approval"),
            )
            await send(message)
            await self.forget(key)
        return len(kept)


def _by_id(item: tuple[str, str]) -> int:
    tail = item[0].rpartition(":")[2]
    return int(tail) if tail.isdigit() else 0


class WindowedChannel:
    """The chat channel of one number, minding the 24-hour window (see the module)."""

    def __init__(
        self,
        inner: ChatChannel,
        client: WhatsAppClient,
        window: ServiceWindow,
        state: ChannelState,
        template: Template | None,
    ) -> None:
        self.name = inner.name
        self.resend_safe = inner.resend_safe
        self._inner = inner
        self._client = client
        self._window = window
        self._state = state
        self._template = template
        self.kept = 0  # replies kept for a closed window (this process)

    async def deliver(self, message: OutgoingMessage) -> Receipt:
        if message.address and not await self._window.is_open(message.address):
            return await self._outside(message, "wrote last more than 24 hours ago")
        try:
            return await self._inner.deliver(message)
        except WindowClosed as exc:  # our clock and WhatsApp's disagree: WhatsApp decides
            return await self._outside(message, f"is outside the 24-hour window ({exc})")

    async def _outside(self, message: OutgoingMessage, why: str) -> Receipt:
        assert message.address is not None
        user = message.address
        if self._template is None:
            raise NeverDeliverable(
                f"{self.name}: not sent: {user} {why}; WhatsApp allows only an approved "
                "template then, and no template_name is configured (the reply goes out "
                "only if resent after they write again)"
            )
        text = await self._unsent_part(message)
        if not await self._window.template_sent(user):
            try:
                await self._client.send_template(user, self._template.name, self._template.language)
            except NeverDeliverable as exc:  # not approved, misspelt, another language
                raise NeverDeliverable(
                    f"{exc}; the reply was for {user}, whose 24-hour window is closed: check "
                    "template_name and template_language (an approved template)"
                ) from None
            await self._window.mark_template_sent(user)
        await self._window.keep(user, message, text)
        self.kept += 1
        log.info(
            "whatsapp reply kept until the user writes",
            channel=self.name,
            user=user,
            message=message.id,
        )
        return Receipt(
            self.name,
            f"kept for {user}, who {why}: template {self._template.name!r} told them a "
            "reply waits; it is sent when they write again",
        )

    async def _unsent_part(self, message: OutgoingMessage) -> str:
        """The pieces not yet delivered: ChatChannel records how many were, per message."""
        pieces = split_message(message.text, self._client.max_chars)
        if len(pieces) == 1:
            return message.text
        progress = f"chunks:{self.name}:{message.id}"
        done = int(await self._state.get_state(progress) or 0)
        await self._state.put_state(progress, None)
        return "\n\n".join(pieces[done:])
