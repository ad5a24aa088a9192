"""``POST /chat/slack/{name}/events``: Slack's Events API request URL.

The checks, in order: 413 body over the cap → 401 signature (on the raw
body, within 5 minutes) → 400 not an envelope → ``url_verification``
answered with its challenge → the event committed to the store (deduplicated
there by ``slack:<name>:<channel>:<ts>``, so Slack's retries of one event, and
the ``message`` and ``app_mention`` events of one mention, make one event)
→ 200. The answer never waits for the agent: Slack wants it within 3 seconds
and retries otherwise; a retry of a committed event is a duplicate and
answered 200 too. 503 with ``Retry-After`` when the daemon cannot commit,
so Slack retries later.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import structlog
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from wakeful.channels.chat.inbound import ChatInbound, PlatformMessage
from wakeful.channels.slack.events import BadEnvelope, Ignored, UrlVerification, parse_body
from wakeful.channels.slack.signing import SignatureError, SlackSignature
from wakeful.core.front_door import DaemonUnavailable
from wakeful.kernel.http.body import read_capped
from wakeful.kernel.http.errors import ApiError
from wakeful.store.base import StoreUnavailable

log = structlog.get_logger(__name__)

# Slack's event payloads are a few KiB; a megabyte is far more than any needs.
MAX_BODY_BYTES = 1024 * 1024


class SlackEvents:
    """One Slack app's request URL."""

    def __init__(
        self,
        name: str,
        signature: SlackSignature,
        inbound: ChatInbound,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.name = name
        self.bot_user_id: str | None = None  # from auth.test, once run() has it
        # requests / refused / ignored / retries / submitted / duplicate / pairing, for /api/status
        self.counts: Counter[str] = Counter()
        self.slowest_ack_ms = 0.0
        self._signature = signature
        self._inbound = inbound
        self._clock = clock

    async def handle(self, request: Request) -> Response:
        started = time.perf_counter()
        self.counts["requests"] += 1
        try:
            response = await self._answer(request)
        except ApiError as exc:
            if exc.status_code < 500:
                self.counts["refused"] += 1
                log.warning("slack request refused", app=self.name, status=exc.status_code,
                            why=exc.detail)  # fmt: skip
            raise
        elapsed_ms = (time.perf_counter() - started) * 1000
        self.slowest_ack_ms = max(self.slowest_ack_ms, round(elapsed_ms, 1))
        return response

    async def _answer(self, request: Request) -> Response:
        body = await read_capped(request, MAX_BODY_BYTES)
        headers = {k.lower(): v for k, v in request.headers.items()}
        try:
            self._signature.verify(headers, body, self._clock())
        except SignatureError as exc:
            raise ApiError(401, str(exc)) from None
        try:
            parsed = parse_body(body, self.bot_user_id)
        except BadEnvelope as exc:
            raise ApiError(400, str(exc)) from None
        if "x-slack-retry-num" in headers:
            self.counts["retries"] += 1
            log.info("slack retry", app=self.name, retry=headers["x-slack-retry-num"],
                     reason=headers.get("x-slack-retry-reason", ""))  # fmt: skip
        if isinstance(parsed, UrlVerification):
            return JSONResponse({"challenge": parsed.challenge})
        if isinstance(parsed, Ignored):
            self.counts["ignored"] += 1
            if parsed.warn:
                log.warning("slack notice", app=self.name, why=parsed.reason)
            return JSONResponse({"ok": True, "ignored": parsed.reason})
        return await self._receive(parsed)

    async def _receive(self, message: PlatformMessage) -> Response:
        try:
            received = await self._inbound.receive(message)
        except (DaemonUnavailable, StoreUnavailable) as exc:
            retry_after = getattr(exc, "retry_after_s", 5)
            raise ApiError(
                503,
                f"the daemon cannot take this event now ({exc}); Slack will retry",
                {"Retry-After": str(retry_after)},
            ) from None
        self.counts[received.value] += 1
        return JSONResponse({"ok": True, "received": received.value})

    def stats(self) -> dict[str, Any]:
        return {**self.counts, "slowest_ack_ms": self.slowest_ack_ms}
