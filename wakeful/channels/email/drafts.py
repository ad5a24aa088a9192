"""Drafts, and sending one through the shared outbox exactly once.

``draft_email`` keeps a draft here (nothing is outgoing yet). ``send_email``
hands it to the outbox on the account's channel (``email:<account>``) with the
key ``email:<Message-ID>``: the outbox records it, sends it once and settles it
(sent / try later / failed / unknown); a second ``send_email`` of the same draft
finds the key and sends nothing. What became of it is reported in the words
the agent has always read. A draft an older version sent itself is reported
from what that version recorded, and never handed over (``legacy_state``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from wakeful.channels.email.channel import EmailChannel, message_key
from wakeful.channels.email.draft_record import Draft
from wakeful.channels.email.mail_state import MailState
from wakeful.channels.email.sent_folder import in_sent_folder
from wakeful.channels.email.seven_bit import as_text
from wakeful.core.components.context import DeliverMessage
from wakeful.core.outbox.deliverer import Delivery
from wakeful.store.outbox.record import NewMessage
from wakeful.store.outbox.states import DeliveryState as State


@dataclass(frozen=True)
class SendOutcome:
    text: str
    ok: bool
    state: State


class Drafts:
    def __init__(
        self,
        state: MailState,
        channels: Mapping[str, EmailChannel],
        deliver: DeliverMessage,
    ) -> None:
        self._state = state
        self._channels = channels  # by account name
        self._deliver = deliver

    async def add(self, account: str, message_id: str, recipients: list[str], raw: bytes) -> str:
        draft_id = f"draft-{uuid.uuid4().hex[:12]}"
        await self._state.add_draft(
            Draft(message_id, draft_id, account, recipients, raw), time.time()
        )
        return draft_id

    async def get(self, draft_id: str) -> Draft | None:
        return await self._state.draft(draft_id)

    async def send(self, draft_id: str, session: str) -> SendOutcome:
        row = await self.get(draft_id)
        if row is None:
            return SendOutcome(
                f"no draft {draft_id!r}; create one with draft_email and pass the draft id it "
                "returns",
                ok=False,
                state=State.UNKNOWN,
            )
        if row.legacy_state is not None:
            return await self._legacy(row)
        channel = self._channels.get(row.account)
        if channel is None:
            return SendOutcome(
                f"not sent: the account {row.account!r} of this draft is no longer configured",
                ok=False,
                state=State.PENDING,
            )
        try:  # 7-bit clean (seven_bit.py), so as text it is the same bytes
            text = as_text(row.raw)
        except ValueError as exc:
            return SendOutcome(f"not sent: {exc}", ok=False, state=State.PENDING)
        key, recipients = message_key(row.message_id), ", ".join(row.recipients)
        message = NewMessage(session, channel.name, text, key, address=recipients)
        return _outcome(row, await self._deliver(message))

    async def _legacy(self, row: Draft) -> SendOutcome:
        """A draft an older version's own outbox handed over: its record, settled once
        (the Message-ID rule) if that version was cut off mid-send."""
        channel = self._channels.get(row.account)
        if row.legacy_state is State.SENDING and channel is not None:
            sent = channel.account.config.sent_mailbox
            found = await in_sent_folder(channel.account, row.message_id)
            if found is True:
                await self._state.settle_legacy(
                    row.message_id, State.SENT, f"found in {sent} after a restart"
                )
            elif found is False:
                detail = (
                    "the daemon stopped after handing the message to the SMTP server and "
                    f"before recording the answer; it is not in {sent}"
                )
                await self._state.settle_legacy(row.message_id, State.UNKNOWN, detail)
            row = await self.get(row.draft_id) or row
        state, detail = row.legacy_state or State.PENDING, row.legacy_detail
        return _reported(row.message_id, state, detail)


def _outcome(row: Draft, delivery: Delivery) -> SendOutcome:
    message = delivery.message
    if message.state is State.SENT and delivery.receipt is not None:
        return SendOutcome(delivery.receipt.detail, ok=True, state=State.SENT)
    if message.state is State.SENT and not delivery.created:
        return _reported(row.message_id, State.SENT, message.last_error or "sent earlier")
    if message.state is State.PENDING and message.attempts > 0:
        return SendOutcome(
            f"not sent: {message.last_error.removeprefix('try later: ')}. Nothing left the "
            "outbox; it is retried by itself (never sent twice); call send_email again with "
            "the same draft id to learn how it went.",
            ok=False,
            state=State.PENDING,
        )
    if message.state is State.FAILED:
        return SendOutcome(
            f"not sent: {message.last_error}. The server refused it for good; fix the cause "
            "(recipients, account) and draft a new message.",
            ok=False,
            state=State.FAILED,
        )
    return _reported(row.message_id, message.state, message.last_error)


def _reported(message_id: str, state: State, detail: str) -> SendOutcome:
    if state is State.SENT:
        return SendOutcome(
            f"{message_id} was already sent ({detail}); it is not sent again",
            ok=True,
            state=state,
        )
    if state is State.UNKNOWN:
        return SendOutcome(
            f"the outcome of sending {message_id} is UNKNOWN: {detail}. It was NOT sent "
            "again, because it may already have been delivered. Verify with the recipient or "
            "in the account's sent mail; if it must go out again, draft a new message.",
            ok=False,
            state=state,
        )
    if state is State.FAILED:
        return SendOutcome(
            f"{message_id} was not sent: {detail}. Draft a new message to try again.",
            ok=False,
            state=state,
        )
    return SendOutcome(
        f"{message_id} is still being sent or could not be verified ({detail}); "
        "try send_email again later - it will not be sent twice",
        ok=False,
        state=state,
    )
