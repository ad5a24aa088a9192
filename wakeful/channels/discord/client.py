"""Sending to a Discord channel: the platform client the shared chat channel delivers through.

``POST /channels/{id}/messages`` with the Markdown as it is (Discord renders
Markdown), at most 2000 characters, and no mentions parsed (a reply never pings
@everyone or a role). Each piece carries a ``nonce`` made from its outbox ref
with ``enforce_nonce``: Discord then returns the first message instead of
posting a second when the same piece is sent again within a few minutes (a
lost answer, retried). That window is minutes, not forever, so the channel
still says ``resend_safe = False``: after a crash mid-send the outbox marks
the message unknown rather than resending it.

Errors are sorted as the outbox needs them: a rate limit, no answer, 5xx or
a revoked token (401, fixable by the operator) are :class:`TryLater` (a rate
limit with Discord's ``retry_after``); any other refusal (no access to the
channel, unknown channel, a DM the user closed) is :class:`NeverDeliverable`.
"""

from __future__ import annotations

import hashlib

import structlog

from wakeful.channels.discord.messages import approval_components
from wakeful.channels.discord.rest import DiscordRest, RateLimited, RestError, RestUnreachable
from wakeful.core.outbox.channels import NeverDeliverable, TryLater

log = structlog.get_logger(__name__)

MAX_MESSAGE_CHARS = 2000  # content's limit, in characters
NONCE_CHARS = 25  # Discord's longest nonce
NO_MENTIONS: dict[str, list[str]] = {"parse": []}


def nonce_of(ref: str) -> str:
    """A nonce of at most 25 characters that names the piece ``ref`` for good."""
    return hashlib.sha256(ref.encode()).hexdigest()[:NONCE_CHARS]


class DiscordClient:
    """``send_text`` / ``send_typing`` / ``send_approval_notice`` for one bot."""

    max_chars = MAX_MESSAGE_CHARS
    # enforce_nonce deduplicates for minutes only: a resend after a long outage could post twice.
    resend_safe = False

    def __init__(self, rest: DiscordRest) -> None:
        self._rest = rest

    async def send_text(self, address: str, text: str, *, ref: str = "") -> None:
        await self._post(address, {"content": text}, ref)

    async def send_approval_notice(
        self, address: str, text: str, approval_id: str, *, ref: str = ""
    ) -> None:
        """The notice's last piece with Approve/Deny buttons under it."""
        body: dict[str, object] = {"content": text, "components": approval_components(approval_id)}
        await self._post(address, body, ref)

    async def send_typing(self, address: str) -> None:
        """Best effort: "typing…" shows for about 10 s or until the bot's next message."""
        path = f"/channels/{address}/typing"
        if self._rest.wait_s("POST", path)[0] > 0:
            return  # rate limited: a missed bubble is better than a 429
        await self._rest.call("POST", path)

    async def _post(self, address: str, body: dict[str, object], ref: str) -> None:
        payload: dict[str, object] = {**body, "allowed_mentions": NO_MENTIONS}
        if ref:
            payload |= {"nonce": nonce_of(ref), "enforce_nonce": True}
        try:
            await self._rest.call("POST", f"/channels/{address}/messages", json=payload)
        except RateLimited as exc:
            raise TryLater(f"Discord rate limit: {exc}", retry_after_s=exc.retry_after_s) from None
        except RestUnreachable as exc:
            raise TryLater(f"Discord did not answer: {exc}") from None
        except RestError as exc:
            if exc.status >= 500 or exc.status == 401:
                raise TryLater(f"Discord failed: {exc}") from None
            raise NeverDeliverable(f"Discord refused the message: {exc}") from None
