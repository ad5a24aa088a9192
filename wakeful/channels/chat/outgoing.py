"""From an outbox record to a platform's messages: the chat platforms' Channel.

The outbox gives exactly-once per record (a send interrupted by a crash is
"unknown", never repeated). A long reply is several platform messages; which
of them went out is remembered in channel state, so a retry after a failed
piece sends the rest, never an earlier piece again.

An approval's notice (its record's ``approval`` says which approval; the daemon
sets it where it files one, never from a key the model chose) goes out with
Approve/Deny buttons on platforms that have them: its last piece is sent by
``send_approval_notice``.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from wakeful.channels.chat.chunking import split_message
from wakeful.core.outbox.channels import NeverDeliverable, Receipt
from wakeful.store.base import ChannelState
from wakeful.store.outbox.record import OutgoingMessage


class PlatformClient(Protocol):
    """A platform's sending side, as the chat channel needs it."""

    max_chars: int  # the platform's length limit for one message (of the Markdown given)
    # The platform drops a repeated piece (same ``ref``): the outbox may resend after a crash.
    resend_safe: bool

    async def send_text(self, address: str, text: str, *, ref: str) -> None:
        """Send ``text`` (Markdown, at most ``max_chars``), converted to what the
        platform renders. ``ref`` names this piece for good (outbox id and piece
        number): a platform that deduplicates retried sends (Matrix's txnId) uses it.
        Raise TryLater (network, 5xx, rate limit) or NeverDeliverable (a refusal
        that will not change: chat not found, bot blocked)."""
        ...

    async def send_typing(self, address: str) -> None:
        """Show "typing…" for a few seconds; best effort."""
        ...


@runtime_checkable
class SendsApprovalButtons(Protocol):
    """A platform client that can put Approve/Deny buttons under a message."""

    async def send_approval_notice(
        self, address: str, text: str, approval_id: str, *, ref: str
    ) -> None:
        """Like ``send_text``, with buttons that decide approval ``approval_id``."""
        ...


class ChatChannel:
    """An outbox channel named ``chat:<platform>:<name>``."""

    def __init__(self, name: str, client: PlatformClient, state: ChannelState) -> None:
        self.name = name
        self._client = client
        # A platform that drops a repeated piece (Matrix's txnId from ``ref``) may be
        # handed a message again after a crash mid-send: the outbox then resends it.
        self.resend_safe = client.resend_safe
        self._state = state

    async def deliver(self, message: OutgoingMessage) -> Receipt:
        if not message.address:
            raise NeverDeliverable(
                f"{self.name}: no conversation to send to — the message answers nothing said "
                "on this platform and the user has not written here yet"
            )
        pieces = split_message(message.text, self._client.max_chars)
        progress_key = f"chunks:{self.name}:{message.id}"
        done = int(await self._state.get_state(progress_key) or 0) if len(pieces) > 1 else 0
        approval = message.approval
        buttons = self._client if isinstance(self._client, SendsApprovalButtons) else None
        for number in range(done, len(pieces)):
            ref = f"{message.id}.{number}"
            if approval is not None and buttons is not None and number == len(pieces) - 1:
                await buttons.send_approval_notice(
                    message.address, pieces[number], approval, ref=ref
                )
            else:
                await self._client.send_text(message.address, pieces[number], ref=ref)
            if len(pieces) > 1 and number + 1 < len(pieces):
                await self._state.put_state(progress_key, str(number + 1))
        if len(pieces) > 1:
            await self._state.put_state(progress_key, None)
        count = f" in {len(pieces)} messages" if len(pieces) > 1 else ""
        return Receipt(self.name, f"delivered to {self.name}{count}")
