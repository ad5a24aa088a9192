"""``/chat/whatsapp/{name}/webhook``: the app's Callback URL.

``GET``: Meta's verification request (``hub.mode=subscribe``,
``hub.verify_token``, ``hub.challenge``): the challenge is echoed when the
token is ours, else 403.

``POST``: the checks, in order: 413 body over the cap → 401 signature
(``X-Hub-Signature-256`` on the raw body) → 400 not a notification. Then each
message: the user's 24-hour window is renewed, replies kept for them go back
to the outbox, and the message is committed to the store (its ``wamid`` is
the event id: a redelivery is a duplicate the store drops) or, for an
Approve/Deny button, decided. 200 only once all of that is in the store, so a
crash before it loses nothing: WhatsApp retries what was not answered 200.
503 with ``Retry-After`` when the daemon cannot commit. Statuses of our own
messages are counted and a failed one is logged.
"""

from __future__ import annotations

import hmac
from collections import Counter
from typing import Any

import structlog
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from wakeful.channels.chat.inbound import ChatInbound
from wakeful.channels.whatsapp.client import WhatsAppClient
from wakeful.channels.whatsapp.payload import (
    BadPayload,
    Inbound,
    Notification,
    parse_notification,
)
from wakeful.channels.whatsapp.signing import SIGNATURE_HEADER, AppSignature, SignatureError
from wakeful.channels.whatsapp.window import ServiceWindow
from wakeful.core.components.context import ComponentSetup
from wakeful.core.front_door import DaemonUnavailable
from wakeful.kernel.http.body import read_capped
from wakeful.kernel.http.errors import ApiError
from wakeful.store.base import StoreUnavailable
from wakeful.store.outbox.record import NewMessage

log = structlog.get_logger(__name__)

# A notification carries a few messages of a few KiB; Meta batches up to about 1,000.
MAX_BODY_BYTES = 3 * 1024 * 1024


class WhatsAppWebhook:
    """One number's Callback URL."""

    def __init__(
        self,
        name: str,
        phone_number_id: str,
        verify_token: str,
        signature: AppSignature,
        inbound: ChatInbound,
        client: WhatsAppClient,
        window: ServiceWindow,
        setup: ComponentSetup,
    ) -> None:
        self.name = name
        self._phone_number_id = phone_number_id
        self._verify_token = verify_token.encode()
        self._signature = signature
        self._inbound = inbound
        self._client = client
        self._window = window
        self._setup = setup
        # requests / refused / submitted / duplicate / pairing / decided / statuses … for
        # /api/status
        self.counts: Counter[str] = Counter()

    async def verify(self, request: Request) -> Response:
        """Meta's subscription check when the Callback URL is saved."""
        query = request.query_params
        given = query.get("hub.verify_token", "").encode()
        if query.get("hub.mode") != "subscribe" or not hmac.compare_digest(
            given, self._verify_token
        ):
            self.counts["verify_refused"] += 1
            log.warning("whatsapp webhook verification refused", account=self.name)
            return JSONResponse(
                {
                    "error": "hub.verify_token does not match verify_token_file (or hub.mode is "
                    "not subscribe)"
                },
                status_code=403,
            )
        self.counts["verified"] += 1
        return PlainTextResponse(query.get("hub.challenge", ""))

    async def notify(self, request: Request) -> Response:
        self.counts["requests"] += 1
        try:
            return await self._answer(request)
        except ApiError as exc:
            if exc.status_code < 500:
                self.counts["refused"] += 1
                log.warning(
                    "whatsapp request refused",
                    account=self.name,
                    status=exc.status_code,
                    why=exc.detail,
                )
            raise

    async def _answer(self, request: Request) -> Response:
        body = await read_capped(request, MAX_BODY_BYTES)
        try:
            self._signature.verify(request.headers.get(SIGNATURE_HEADER), body)
        except SignatureError as exc:
            raise ApiError(401, str(exc)) from None
        try:
            notification = parse_notification(body, self._phone_number_id)
        except BadPayload as exc:
            raise ApiError(400, str(exc)) from None
        try:
            received = await self._take(notification)
        except (DaemonUnavailable, StoreUnavailable) as exc:
            retry_after = getattr(exc, "retry_after_s", 5)
            raise ApiError(
                503,
                f"the daemon cannot take these messages now ({exc}); WhatsApp will retry",
                {"Retry-After": str(retry_after)},
            ) from None
        return JSONResponse({"received": received})

    async def _take(self, notification: Notification) -> list[str]:
        received = []
        for item in notification.messages:
            received.append(await self._message(item))
        for status in notification.statuses:
            self.counts[f"status_{status.status}"] += 1
            if status.status == "failed":
                log.warning(
                    "whatsapp could not deliver a message",
                    account=self.name,
                    user=status.recipient,
                    errors=list(status.errors),
                    hint=(
                        "more than 24 hours since the user wrote: set template_name"
                        if status.window_closed
                        else None
                    ),
                )
        self.counts["ignored"] += len(notification.ignored)
        return received

    async def _message(self, item: Inbound) -> str:
        message = item.message
        await self._window.wrote(message.user_id, item.sent_at)
        self._client.latest_inbound[message.user_id] = message.message_id
        if await self._window.is_open(message.user_id):  # not for an old message redelivered
            released = await self._window.release(
                message.user_id, self._inbound.channel, self._setup.send_message
            )
            self.counts["released"] += released
        if item.press is not None:
            result = await self._inbound.press(message.user_id, item.press)
            outcome = "pressed" if result is None else "decided"
            if result is not None:
                # WhatsApp cannot edit the notice: the outcome is a reply, keyed by the
                # press so a redelivery sends nothing new.
                await self._setup.send_message(
                    NewMessage(
                        session=self._inbound.session_for(message.user_id),
                        channel=self._inbound.channel,
                        text=result.line,
                        key=f"decision:{self._inbound.event_id(message.message_id)}",
                        address=message.address,
                    )
                )
            self.counts[outcome] += 1
            return outcome
        received = await self._inbound.receive(message)
        self.counts[received.value] += 1
        return received.value

    def stats(self) -> dict[str, Any]:
        return dict(self.counts)
