"""E-mail as a channel of the shared outbox: one ``email:<account>`` per account.

The outbox hands it a draft that ``send_email`` queued: the message's text is the
draft's RFC 5322 message (7-bit clean, so text and bytes are the same), its
address the envelope recipients, its key ``email:<Message-ID>`` — the key makes
the send exactly once. ``deliver`` is one SMTP conversation, then the copy filed
in Sent. ``confirm_delivered`` is the Message-ID rule: after a crash cut a send
off, the message is looked for in the Sent folder.
"""

from __future__ import annotations

from email.parser import HeaderParser
from email.utils import getaddresses

import structlog

from wakeful.channels.email.accounts import MailAccount
from wakeful.channels.email.sent_folder import file_in_sent, in_sent_folder
from wakeful.channels.email.smtp import NotSent, send_raw
from wakeful.core.outbox.channels import NeverDeliverable, Receipt, TryLater
from wakeful.store.outbox.record import OutgoingMessage

log = structlog.get_logger(__name__)

KEY_PREFIX = "email:"


def channel_name(account: str) -> str:
    return f"email:{account}"


def message_key(message_id: str) -> str:
    """The outbox key of the draft with this Message-ID: one send per message."""
    return f"{KEY_PREFIX}{message_id}"


class EmailChannel:
    """``Channel`` and ``ConfirmsDelivery`` for one mail account."""

    # SMTP has no idempotency key: a repeat would be a second e-mail in the inbox.
    resend_safe = False

    def __init__(self, account: MailAccount) -> None:
        self.account = account
        self.name = channel_name(account.name)

    async def deliver(self, message: OutgoingMessage) -> Receipt:
        message_id = _message_id(message)
        raw = message.text.encode("ascii")  # checked by _message_id
        recipients = [addr for _, addr in getaddresses([message.address or ""]) if addr]
        if not recipients:
            raise NeverDeliverable(f"{message_id} has no recipients")
        config, password = self.account.config, self.account.password
        try:
            reply = await send_raw(config, password, self.account.address, recipients, raw)
        except NotSent as exc:
            if exc.permanent:
                raise NeverDeliverable(str(exc)) from None
            raise TryLater(str(exc)) from None
        # MaybeSent propagates: the outbox records the outcome as unknown.
        log.info("email sent", message_id=message_id, account=self.account.name)
        filed = await file_in_sent(self.account, raw)
        return Receipt(
            self.name,
            f"sent {message_id} to {', '.join(recipients)} (server reply: {reply}); {filed}",
        )

    async def confirm_delivered(self, message: OutgoingMessage) -> bool | None:
        return await in_sent_folder(self.account, _message_id(message))


def _message_id(message: OutgoingMessage) -> str:
    """The draft's Message-ID; refuses text that is not a draft send_email queued (a
    reply or notification routed here by a config naming this channel)."""
    if not message.key.startswith(KEY_PREFIX) or not message.text.isascii():
        raise NeverDeliverable(
            "the e-mail channel sends only drafts made by draft_email (with send_email)"
        )
    message_id = message.key.removeprefix(KEY_PREFIX)
    if HeaderParser().parsestr(message.text, headersonly=True)["Message-ID"] != message_id:
        raise NeverDeliverable(f"the message does not carry its Message-ID {message_id}")
    return message_id
