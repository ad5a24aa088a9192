"""Sending as a Matrix account: the chat channel's platform client, and typing.

Exactly once on the wire: each piece of a reply is sent with
``PUT …/send/m.room.message/{txnId}``, txnId made of the piece's ``ref`` (outbox id
and piece number). Matrix answers a retried txnId from the same device with the
event it already made instead of posting again (Synapse keeps them a day, also
across its own restarts), so a retry after a crash — the send went out but the
outbox never heard — posts nothing twice. The ids carry a random prefix kept in
the store, so a new data directory, whose outbox counts from 1 again, never
reuses an id the homeserver still remembers.
"""

from __future__ import annotations

import secrets

import structlog

from wakeful.channels.matrix.address import parse_address
from wakeful.channels.matrix.api import MatrixApi, MatrixError
from wakeful.channels.matrix.formatting import message_content
from wakeful.core.outbox.channels import NeverDeliverable, TryLater
from wakeful.store.base import ChannelState

log = structlog.get_logger(__name__)

# Characters of Markdown per Matrix message: a 64 KiB event holds the body and its HTML
# twin even in 3-byte characters; longer replies go as several messages.
MAX_CHARS = 8000
TYPING_TIMEOUT_MS = 30_000


def delivery_error(exc: MatrixError) -> TryLater | NeverDeliverable:
    """429 and 5xx, unreachable, a token being renewed → try later; refusals → never."""
    if exc.transient or exc.bad_token:
        return TryLater(str(exc), retry_after_s=exc.retry_after_s)  # M_LIMIT_EXCEEDED's wait
    return NeverDeliverable(str(exc))


class MatrixClient:
    """One account's sending side (a :class:`wakeful.channels.chat.outgoing.PlatformClient`)."""

    max_chars = MAX_CHARS
    resend_safe = True  # the homeserver drops a repeated txnId: see the module's docstring

    def __init__(
        self,
        api: MatrixApi,
        user_id: str,
        name: str,
        state: ChannelState,
        msgtype: str = "m.notice",  # [[chat.matrix]] msgtype's default
    ) -> None:
        self.api = api
        self.msgtype = msgtype
        self.user_id = user_id
        self._state = state
        self._prefix_key = f"matrix:{name}:txn_prefix"
        self._prefix: str | None = None

    async def txn_id(self, ref: str) -> str:
        if self._prefix is None:
            prefix = await self._state.get_state(self._prefix_key)
            if prefix is None:
                prefix = secrets.token_hex(6)
                await self._state.put_state(self._prefix_key, prefix)
            self._prefix = prefix
        return f"wakeful.{self._prefix}.{ref}"

    async def send_text(self, address: str, text: str, *, ref: str) -> None:
        txn = await self.txn_id(ref)
        place = parse_address(address)
        content = message_content(text, self.msgtype)
        relation = place.relation()
        if relation is not None:  # written in a thread: answered in that thread
            content["m.relates_to"] = relation
        try:
            await self.api.send_message(place.room_id, txn, content)
        except MatrixError as exc:
            raise delivery_error(exc) from None

    async def send_typing(self, address: str) -> None:
        try:
            room = parse_address(address).room_id
            await self.api.typing(room, self.user_id, timeout_ms=TYPING_TIMEOUT_MS)
        except MatrixError as exc:  # cosmetic: logged, never raised
            log.info("matrix typing notice not sent", address=address, error=str(exc))
