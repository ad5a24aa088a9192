"""Webhook mode: ``POST /chat/telegram/<name>/webhook``, authenticated by the secret token.

Telegram sends the ``secret_token`` given to setWebhook in the
``X-Telegram-Bot-Api-Secret-Token`` header of every request; anything else
is refused before its body is read. The answer comes as soon as the event
is in the store: Telegram retries an unanswered update, and the retry is a
duplicate the store drops.
"""

from __future__ import annotations

import hmac
import json
from typing import Any

import structlog
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from wakeful.channels.telegram.polling import HandleUpdate
from wakeful.channels.telegram.updates import update_id
from wakeful.core.front_door import DaemonUnavailable

log = structlog.get_logger(__name__)

SECRET_HEADER = "x-telegram-bot-api-secret-token"
MAX_UPDATE_BYTES = 1024 * 1024  # an Update is a few KB; Telegram caps texts at 4096 chars


class WebhookReceiver:
    """The route's handler for one bot."""

    def __init__(self, secret_token: str, handle: HandleUpdate) -> None:
        self.secret = secret_token  # given to setWebhook
        self._secret = secret_token.encode()
        self._handle = handle
        self.received = 0
        self.refused = 0

    async def handle(self, request: Request) -> Response:
        presented = request.headers.get(SECRET_HEADER, "").encode()
        if not hmac.compare_digest(presented, self._secret):
            self.refused += 1
            return _error(401, f"missing or wrong {SECRET_HEADER} header")
        body = await request.body()
        if len(body) > MAX_UPDATE_BYTES:
            return _error(413, f"an Update is at most {MAX_UPDATE_BYTES} bytes")
        try:
            update: Any = json.loads(body)
            update_id(update)
        except (ValueError, TypeError, AttributeError) as exc:
            return _error(400, f"the body is not a Telegram Update: {exc}")
        try:
            await self._handle(update, None)
        except DaemonUnavailable as exc:  # stopping, or the store is down: Telegram retries
            headers = {"Retry-After": str(exc.retry_after_s)}
            return JSONResponse({"error": str(exc)}, status_code=503, headers=headers)
        self.received += 1
        return Response(status_code=200)


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)
