"""``POST /hooks/{name}``: the checks, in the order the spec fixes.

404 unknown hook → 413 body over the hook's cap (never reading past it) →
401 signature → 400 parse → filters (202 ``{"filtered": true}``) → dedup
by delivery id and commit through the dispatcher → 202 ``{"event_id"}``.
The answer never waits for the agent; 503 with ``Retry-After`` when the
daemon cannot commit, so the sender retries later.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import structlog
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from wakeful.channels.webhook.auth import AuthError
from wakeful.channels.webhook.delivery import (
    BadDelivery,
    Hook,
    delivery_id,
    parse_payload,
    to_event,
)
from wakeful.channels.webhook.mapping import event_type
from wakeful.daemon.facade import DaemonUnavailable, SubmitResult
from wakeful.daemon.http.body import read_capped
from wakeful.daemon.http.errors import ApiError
from wakeful.events import Event, EventError

log = structlog.get_logger(__name__)

Submit = Callable[[Event], Awaitable[SubmitResult]]


class HookIngress:
    """The endpoint for every configured hook, with per-hook counters for /api/status."""

    def __init__(
        self, hooks: Mapping[str, Hook], submit: Submit, clock: Callable[[], float] = time.time
    ) -> None:
        self._hooks = dict(hooks)
        self._submit = submit
        self._clock = clock
        self._counts: dict[str, Counter[str]] = {name: Counter() for name in self._hooks}

    async def handle(self, request: Request) -> Response:
        name = request.path_params["name"]
        hook = self._hooks.get(name)
        if hook is None:
            raise ApiError(404, f"no webhook named {name!r}; declare it as [[hooks]] name = ...")
        try:
            response = await self._deliver(hook, request)
        except ApiError as exc:
            self._counts[name][str(exc.status_code)] += 1
            if exc.status_code != 503:
                log.warning("webhook refused", hook=name, status=exc.status_code, why=exc.detail)
            raise
        return response

    async def _deliver(self, hook: Hook, request: Request) -> Response:
        body = await read_capped(request, hook.config.max_body_bytes)
        headers = request.headers
        try:
            hook.verifier.verify(headers, body, self._clock())
        except AuthError as exc:
            raise ApiError(401, str(exc)) from None
        try:
            payload = parse_payload(headers, body)
            kind = event_type(headers, payload)
            why = hook.filter.rejects(kind, payload)
            if why is not None:
                self._counts[hook.name]["filtered"] += 1
                return JSONResponse({"filtered": True, "reason": why}, status_code=202)
            event = to_event(hook, delivery_id(headers, body), kind, payload)
        except (BadDelivery, EventError) as exc:
            raise ApiError(400, str(exc)) from None
        result = await self._commit(event)
        self._counts[hook.name]["duplicate" if result.duplicate else "accepted"] += 1
        return JSONResponse(
            {"event_id": result.event_id, "duplicate": result.duplicate}, status_code=202
        )

    async def _commit(self, event: Event) -> SubmitResult:
        try:
            return await self._submit(event)
        except DaemonUnavailable as exc:
            raise ApiError(
                503,
                f"the daemon cannot take this delivery now ({exc}); retry later",
                {"Retry-After": str(exc.retry_after_s)},
            ) from None

    def stats(self) -> dict[str, Any]:
        return {name: dict(counts) for name, counts in self._counts.items()}
