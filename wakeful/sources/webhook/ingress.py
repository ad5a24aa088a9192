"""``POST /hooks/{name}``: the checks, in the order the spec fixes.

404 unknown hook → 413 body over the hook's cap (never reading past it) →
401 signature → 400 parse → filters (202 ``{"filtered": true}``) → dedup
by delivery id (a GitHub hook's: its signed body's hash) and commit through
the dispatcher → 202 ``{"event_id"}``.
The answer never waits for the agent; 503 with ``Retry-After`` when the
daemon cannot commit, so the sender retries later.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import structlog
from starlette.requests import Request
from starlette.responses import Response

from wakeful.core.front_door import DaemonUnavailable, SubmitResult
from wakeful.kernel.events import Event, EventError
from wakeful.kernel.http.body import read_capped
from wakeful.kernel.http.errors import ApiError
from wakeful.sources.webhook.auth import AuthError
from wakeful.sources.webhook.delivery import (
    BadDelivery,
    Hook,
    hook_event_type,
    parse_payload,
    signed_delivery_id,
    to_event,
)
from wakeful.sources.webhook.taps import HookTap, with_subscriptions

log = structlog.get_logger(__name__)

# Starlette's JSONResponse rendering, with the encoder built once rather than per response.
_ENCODE_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode

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
        self._taps: list[HookTap] = []

    @property
    def hook_names(self) -> list[str]:
        return sorted(self._hooks)

    def add_tap(self, tap: HookTap) -> None:
        """A listener on every hook's deliveries (the subscriptions component's)."""
        self._taps.append(tap)

    def replace_hooks(self, hooks: Mapping[str, Hook]) -> None:
        """SIGHUP: the new set of hooks takes effect for the next request."""
        self._hooks = dict(hooks)
        for name in self._hooks:
            self._counts.setdefault(name, Counter())

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
        headers = _header_dict(request)
        try:
            hook.verifier.verify(headers, body, self._clock())
        except AuthError as exc:
            raise ApiError(401, str(exc)) from None
        try:
            payload = parse_payload(headers, body, bearer=hook.config.auth == "bearer")
            kind = hook_event_type(hook, headers, payload)
            why = hook.filter.rejects(kind, payload)
            if why is not None:
                self._counts[hook.name]["filtered"] += 1
                return _accepted({"filtered": True, "reason": why})
            delivery = signed_delivery_id(hook, headers, body)
            event = to_event(hook, delivery, kind, payload, headers.get("x-github-delivery"))
        except (BadDelivery, EventError) as exc:
            raise ApiError(400, str(exc)) from None
        claimed = [(tap, tap.matching(hook.name, kind, payload)) for tap in self._taps]
        claimed = [(tap, ids) for tap, ids in claimed if ids]
        if claimed:
            event = with_subscriptions(event, [i for _, ids in claimed for i in ids])
        result = await self._commit(event)
        self._counts[hook.name]["duplicate" if result.duplicate else "accepted"] += 1
        for tap, ids in claimed:
            try:
                await tap.delivered(event, ids, result.duplicate)
            except Exception:  # the delivery is committed: a tap's failure is its own
                log.exception("webhook tap failed", hook=hook.name, subscriptions=ids)
        return _accepted({"event_id": result.event_id, "duplicate": result.duplicate})

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


def _header_dict(request: Request) -> dict[str, str]:
    """The headers as a plain dict, first value winning like ``Headers.get``.

    A delivery's checks look up a dozen headers; on Starlette's ``Headers`` each
    look-up scans the whole list (and a miss raises and catches a KeyError).
    """
    found: dict[str, str] = {}
    for name, value in request.headers.raw:
        found.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
    return found


def _accepted(content: dict[str, Any]) -> Response:
    """The same bytes and headers as ``JSONResponse(content, status_code=202)``."""
    return Response(_ENCODE_JSON(content).encode("utf-8"), 202, media_type="application/json")
