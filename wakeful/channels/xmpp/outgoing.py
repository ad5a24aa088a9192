"""Sending as the XMPP account: the chat channel's platform client, and 'composing'.

XMPP has no idempotency key for a message: the server would deliver a repeat
again, so ``resend_safe`` is False and a send a crash cut off is left
``unknown`` by the outbox, never sent twice. A piece counts as delivered once
the server answered a ping sent after it on the same stream (it handles a
stream's stanzas in order); a connection lost before that answer is an outcome
nobody knows, so it is raised as such (not TryLater, which would resend).
"""

from __future__ import annotations

import time

import anyio
import structlog

from wakeful.channels.xmpp.connection import XmppConnection, XmppUnavailable
from wakeful.core.outbox.channels import TryLater

log = structlog.get_logger(__name__)

# Characters per message. XMPP itself has no limit, servers cap a stanza's bytes
# (ejabberd's and older servers' c2s default is 64 KiB): 10 000 characters stay below
# that even as 4-byte UTF-8 or escaped '&' (5 bytes each), with the envelope.
MAX_CHARS = 10_000


class XmppSendUnknown(Exception):
    """Sent, but the connection ended before the server confirmed it."""


class XmppClient:
    """One account's sending side (a :class:`wakeful.channels.chat.outgoing.PlatformClient`)."""

    max_chars = MAX_CHARS
    resend_safe = False  # see the module's docstring

    def __init__(self, retry_after_s: float) -> None:
        self.connection: XmppConnection | None = None  # the component sets the live one
        self._retry_after_s = retry_after_s
        self._composing: dict[str, float] = {}  # address → when 'composing' was last sent

    async def send_text(self, address: str, text: str, *, ref: str) -> None:
        connection = self.connection
        try:
            if connection is None:
                raise XmppUnavailable("not connected to the server yet")
            # Nothing written yet when this raises: a retry posts nothing twice.
            connection.send_message(address, text, chat_state="active")
            self._composing.pop(address, None)  # 'active' on the reply ends 'composing'
        except XmppUnavailable as exc:
            raise TryLater(f"XMPP: {exc}", retry_after_s=self._retry_after_s) from None
        try:
            await connection.confirm()
        except Exception as exc:
            raise XmppSendUnknown(
                f"XMPP: piece {ref} sent, but the server never confirmed it: {exc}"
            ) from None

    async def send_typing(self, address: str) -> None:
        connection = self.connection
        if connection is not None and connection.connected:
            connection.send_message(address, None, chat_state="composing")
            self._composing[address] = time.monotonic()

    async def settle(self, every_s: float) -> None:
        """'composing' stays on in most clients until another state comes: a run that ended
        without a reply (stopped, failed) is followed by 'active' once it is not renewed."""
        while True:
            await anyio.sleep(every_s / 2)
            stale = time.monotonic() - every_s * 1.5
            for address, since in list(self._composing.items()):
                connection = self.connection
                if since < stale and connection is not None and connection.connected:
                    del self._composing[address]
                    connection.send_message(address, None, chat_state="active")
